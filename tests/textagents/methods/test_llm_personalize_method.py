"""The LLM-Personalize method end to end on a tiny model: zero-shot evaluation, imitation, one self-training
round, datasets and models saved in the run, Table 1 in the report, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textagents.methods.core.config import ConfigError, load_config
from textagents.methods.core.runner import LLMChoice, run_method
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "llm_personalize" / "smoke.yaml"


def test_the_smoke_run_imitates_then_self_trains(tmp_path, tiny_models):
    out = tmp_path / "run"
    run_method("llm_personalize", SMOKE, out, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = records[0]
    assert first["kind"] == "train" and "zero_shot/test/success_rate" in first and first["pairs"] > 0
    assert first["loss_last"] < first["loss_first"]
    assert [(r["kind"], r["iteration"]) for r in records] == [("train", 1), ("eval", 1), ("train", 2), ("eval", 2)]
    assert {"test/success_rate", "train/success_rate", "test/parse_rate"} <= records[1].keys()
    imitation = (out / "datasets" / "imitation_train.jsonl").read_text().splitlines()
    assert imitation and json.loads(imitation[0])["messages"][0]["content"] == "You are a one-handed household robot."
    assert (out / "datasets" / "self_training_1.jsonl").is_file()
    assert (out / "models" / "iter_000001" / "model.safetensors").is_file()
    report = (out / "report.md").read_text()
    assert (
        "## Table 1" in report and "| zero-shot |" in report and "| IL |" in report and "| ST iteration 1 |" in report
    )
    assert (out / "llm_calls.jsonl").read_text().count('"kind": "chat"') > 0


def test_a_server_model_cannot_be_fine_tuned(tmp_path, tiny_models):
    calls = tmp_path / "calls.jsonl"
    calls.write_text("")
    with pytest.raises(RuntimeError, match="fine-tunes a local transformers model"):
        run_method("llm_personalize", SMOKE, tmp_path / "run", llm=LLMChoice(replay=str(calls)), progress=False)


def test_bad_settings_are_refused(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("scenes: []\n")
    with pytest.raises(ConfigError, match="scenes must name at least one scene"):
        load_config(LLMPersonalizeConfig, path)
    path.write_text("command_budget: 0\n")
    with pytest.raises(ConfigError, match="command_budget must be >= 1"):
        load_config(LLMPersonalizeConfig, path)
