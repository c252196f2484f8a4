"""LLM agents in suites: a local model (``--model PATH``) and an OpenAI-compatible server (``--base-url``)."""

from __future__ import annotations

import json

import pytest

from tests.textagents.bench_fixtures import episodes_without_timing, write_suite
from textagents.bench import load_suite, run_suite
from textagents.cli import main
from textagents.llm.server import ModelHTTPServer

LLM_SUITE = """\
name: tiny-llm
seeds: [0, 1]
envs:
  - id: BabyAI-Text-GoToLocal-v0
    kwargs: {max_steps: 4}
agents:
  - {name: scorer, kind: llm-score}
  - {name: writer, kind: llm-generate, max_tokens: 8, temperature: 0.7}
"""


@pytest.fixture(scope="module")
def server(causal_backend):
    running = ModelHTTPServer(causal_backend, port=0, model_name="tiny").start()
    yield running
    running.stop()


def test_local_model_plays_every_llm_episode_and_run_json_records_its_settings(tmp_path, tiny_models, data_dir):
    suite = load_suite(write_suite(tmp_path, LLM_SUITE), llm_overrides={"model": str(tiny_models.causal)})
    run_suite(suite, tmp_path / "run", progress=False)
    records = episodes_without_timing(tmp_path / "run")
    assert sorted(records) == [(a, "BabyAI-Text-GoToLocal-v0", s) for a in ("scorer", "writer") for s in (0, 1)]
    assert all(r["invalid_actions"] == 0 and (r["steps"] == 4 or r["success"]) for r in records.values())
    writer = records[("writer", "BabyAI-Text-GoToLocal-v0", 0)]
    assert sum(writer["agent_stats"].values()) == writer["steps"]
    agents = {a["name"]: a for a in json.loads((tmp_path / "run" / "run.json").read_text())["agents"]}
    assert agents["writer"]["options"]["model"] == str(tiny_models.causal)
    assert agents["writer"]["options"]["temperature"] == 0.7 and agents["writer"]["options"]["max_tokens"] == 8


def test_server_model_plays_the_same_suite(tmp_path, server, data_dir):
    overrides = {"model": "tiny", "base_url": server.url}
    run_suite(load_suite(write_suite(tmp_path, LLM_SUITE), llm_overrides=overrides), tmp_path / "run", progress=False)
    records = episodes_without_timing(tmp_path / "run")
    assert len(records) == 4 and all(r["steps"] == 4 or r["success"] for r in records.values())


def test_cli_gives_a_notice_for_the_llm_agents_it_skips(tmp_path, data_dir, capsys):
    suite = write_suite(tmp_path, LLM_SUITE.replace("agents:\n", "agents:\n  - {name: random, kind: random}\n"))
    assert main(["bench", "run", str(suite), "--out", str(tmp_path / "run"), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "notice: skipping agent 'scorer': no model configured: pass --model PATH" in captured.err
    assert captured.out.splitlines() == ["random\tBabyAI-Text-GoToLocal-v0\t0", "random\tBabyAI-Text-GoToLocal-v0\t1"]


def test_resuming_with_another_model_is_refused(tmp_path, tiny_models, data_dir):
    path = write_suite(tmp_path, LLM_SUITE.replace("seeds: [0, 1]", "seeds: [0]"))
    run_suite(load_suite(path, llm_overrides={"model": str(tiny_models.causal)}), tmp_path / "run", progress=False)
    other = load_suite(path, llm_overrides={"model": str(tiny_models.seq2seq)})
    with pytest.raises(ValueError, match="agents were configured otherwise \\(scorer, writer"):
        run_suite(other, tmp_path / "run", progress=False)
    assert len(episodes_without_timing(tmp_path / "run")) == 2
