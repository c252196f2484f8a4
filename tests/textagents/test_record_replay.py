"""Record / replay of LLM calls: the real prompt path of the LLM agents on a tiny model, re-played with no
model; misses name the request and the nearest prompt; concurrent writers; torn lines; the bench CLI flags."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import gymnasium as gym
import pytest

from tests.textagents.bench_fixtures import episodes_without_timing, write_suite
from tests.textagents.test_bench_llm import LLM_SUITE
from textagents.agents import GenerationAgent, ScoringAgent, prompt_builder_for
from textagents.cli import main
from textagents.jsonl import append_lines
from textagents.llm import TokenUsage
from textagents.llm.record import (
    RecordingBackend,
    ReplayBackend,
    ReplayMissError,
    read_records,
    wrap_backend,
)

ENV_ID = "BabyAI-Text-GoToLocal-v0"


def _play(backend, kind: str, seed: int = 0):
    env = gym.make(ENV_ID, max_steps=6)
    builder = prompt_builder_for(env)
    if kind == "score":
        agent = ScoringAgent(backend, builder, greedy=False, temperature=1.0, seed=seed)
    else:
        sampling = {"temperature": 0.8, "max_tokens": 6, "seed": seed}
        agent = GenerationAgent(backend, builder, sampling=sampling, seed=seed)
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    actions = []
    done = False
    while not done:
        actions.append(agent.act(obs, info))
        obs, _, terminated, truncated, info = env.step(actions[-1])
        done = terminated or truncated
    return actions, agent


@pytest.mark.parametrize("kind", ["score", "generate"])
def test_an_agents_episode_replays_identically_with_no_model(tmp_path, causal_backend, kind):
    path = tmp_path / "calls.jsonl"
    recording = RecordingBackend(causal_backend, path)
    before = causal_backend.usage.as_dict()
    recorded, _ = _play(recording, kind)
    spent = {k: causal_backend.usage.as_dict()[k] - before[k] for k in ("prompt_tokens", "requests")}
    records, skipped = read_records(path)
    assert records and skipped == 0 and {r["kind"] for r in records} == {kind}
    assert all(r["model"] == causal_backend.model_name and len(r["key"]) == 64 for r in records)

    replay = ReplayBackend(path)
    replayed, _ = _play(replay, kind)
    assert replayed == recorded
    assert replay.usage.prompt_tokens == spent["prompt_tokens"] and replay.usage.requests == spent["requests"]


def test_a_miss_names_the_request_hash_and_the_nearest_recorded_prompt(tmp_path, causal_backend):
    path = tmp_path / "calls.jsonl"
    RecordingBackend(causal_backend, path).generate(["go to the red ball now"], max_tokens=3)
    replay = ReplayBackend(path)
    with pytest.raises(ReplayMissError) as miss:
        replay.generate(["go to the red box now"], max_tokens=3)
    message = str(miss.value)
    assert "no recorded answer for generate request" in message and "go to the red ball now" in message
    assert "alike" in message
    with pytest.raises(ReplayMissError, match="has no score request"):
        replay.score(["a context"], [["a", "b"]])
    with pytest.raises(ReplayMissError):  # other sampling is another request
        replay.generate(["go to the red ball now"], max_tokens=4)


def test_repeated_requests_replay_in_recorded_order(tmp_path):
    class Counting:
        model_name = "counting"

        def __init__(self):
            self.usage, self.calls = TokenUsage(), 0

        def generate(self, prompts, **sampling):
            self.calls += 1
            self.usage.add(prompt_tokens=len(prompts), completion_tokens=1)
            return [f"answer {self.calls}" for _ in prompts]

    path = tmp_path / "calls.jsonl"
    recording = RecordingBackend(Counting(), path)
    first = [recording.generate(["same"], temperature=1.0)[0] for _ in range(3)]
    replay = ReplayBackend(path)
    assert [replay.generate(["same"], temperature=1.0)[0] for _ in range(4)] == [*first, first[-1]]
    assert replay.usage.requests == 3 and replay.usage.cache_hits == 1


def _append_many(path: str, worker: int, count: int) -> None:
    for i in range(count):
        record = {"key": f"{worker}-{i}", "kind": "generate", "request": {"i": i}, "response": "x" * (i * 37 % 5000)}
        append_lines(Path(path), [json.dumps(record) + "\n"])


def test_concurrent_writers_leave_every_line_whole(tmp_path):
    path = tmp_path / "calls.jsonl"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(path), w, 150)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
    records, skipped = read_records(path)
    assert skipped == 0 and sorted(r["key"] for r in records) == sorted(
        f"{w}-{i}" for w in range(4) for i in range(150)
    )


def test_a_torn_last_line_is_skipped_and_counted(tmp_path, causal_backend):
    path = tmp_path / "calls.jsonl"
    RecordingBackend(causal_backend, path).generate(["hello", "world"], max_tokens=2)
    with path.open("a") as handle:
        handle.write('{"key": "abc", "kind": "gen')  # a kill in the middle of a write
    with pytest.warns(UserWarning, match="skipped 1 unreadable line"):
        replay = ReplayBackend(path)
    assert len(replay) == 2 and replay.skipped_lines == 1
    assert replay.generate(["world"], max_tokens=2) == causal_backend.generate(["world"], max_tokens=2)


def test_wrap_backend_builds_nothing_to_replay_and_refuses_both(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text("")
    assert isinstance(wrap_backend(None, replay=path), ReplayBackend)
    with pytest.raises(ValueError, match="not both"):
        wrap_backend(None, record=path, replay=path)
    with pytest.raises(FileNotFoundError, match="--llm-record"):
        wrap_backend(None, replay=tmp_path / "missing.jsonl")


def test_bench_cli_records_with_a_model_and_replays_without_one(tmp_path, tiny_models, data_dir):
    suite = write_suite(tmp_path, LLM_SUITE)
    calls = tmp_path / "calls.jsonl"
    base = ["bench", "run", str(suite), "--no-progress"]
    assert (
        main([*base, "--out", str(tmp_path / "a"), "--model", str(tiny_models.causal), "--llm-record", str(calls)]) == 0
    )
    assert main([*base, "--out", str(tmp_path / "b"), "--llm-replay", str(calls)]) == 0
    assert episodes_without_timing(tmp_path / "a") == episodes_without_timing(tmp_path / "b")
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert all(a["options"]["llm_replay"] == str(calls) for a in run["agents"])


def test_a_suite_names_its_recording_relative_to_its_file(tmp_path, tiny_models, data_dir):
    from textagents.bench import load_suite

    suite = write_suite(tmp_path, LLM_SUITE.replace("kind: llm-score}", "kind: llm-score, llm_replay: calls.jsonl}"))
    loaded = load_suite(suite, llm_overrides={"model": str(tiny_models.causal)})
    assert ("scorer", f"no LLM recording at {(tmp_path / 'calls.jsonl').resolve()}") in loaded.skipped
    assert [a.name for a in loaded.agents] == ["writer"]


def test_a_batch_of_chats_is_recorded_one_line_each_and_replays_one_by_one(tmp_path, causal_backend):
    from textagents.llm.base import chat_batch

    conversations = [[{"role": "user", "content": f"count to {n}"}] for n in range(3)]
    sampling = {"temperature": 1.0, "max_tokens": 5, "seed": 3}
    recording = RecordingBackend(causal_backend, tmp_path / "calls.jsonl")
    answers = chat_batch(recording, conversations, **sampling)
    assert answers == causal_backend.chat_batch(conversations, **sampling)  # the same batch, the same seed
    records, _ = read_records(tmp_path / "calls.jsonl")
    assert [r["kind"] for r in records] == ["chat"] * 3 and [r["response"] for r in records] == answers
    assert records[0]["usage"]["requests"] == 3 and records[1]["usage"]["requests"] == 0  # counted once
    replay = ReplayBackend(tmp_path / "calls.jsonl")
    assert chat_batch(replay, conversations, **sampling) == answers
    assert replay.usage.requests == 3
