"""Cost and latency in the leaderboard: per-call latencies counted by the backends, percentiles, and a run
with a scripted LLM whose tokens, calls and cost the report must total exactly."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from tests.textagents.bench_fixtures import write_suite
from textagents.bench import SuiteError, load_suite, run_suite, write_report
from textagents.llm.accounting import LatencyHistogram, TokenUsage, latency_bin

#: Every call of the scripted backend: 7 prompt tokens, 2 completion tokens, a quarter of a second.
PROMPT_TOKENS, COMPLETION_TOKENS, LATENCY_S = 7, 2, 0.25
PRICE = {"prompt_per_1k": 1.5, "completion_per_1k": 4.0}
STEPS = 5
SCRIPTED_SUITE = f"""\
name: costs
seeds: [0, 1]
envs:
  - id: BabyAI-Text-GoToLocal-v0
    kwargs: {{max_steps: {STEPS}}}
agents:
  - {{name: random, kind: random}}
  - {{name: writer, kind: llm-generate, model: scripted-model, base_url: "http://127.0.0.1:9/v1"}}
prices:
  scripted-model: {json.dumps(PRICE)}
"""
BIN_ERROR = 2 ** (1 / 16) - 1  # the latencies in one bin are this close to each other


def test_percentiles_of_known_latencies_are_within_a_bin_of_the_nearest_rank():
    histogram = LatencyHistogram()
    for milliseconds in range(1, 101):
        histogram.add(milliseconds / 1000)
    assert histogram.total == 100
    assert histogram.percentile(50) == pytest.approx(0.050, rel=BIN_ERROR)
    assert histogram.percentile(99) == pytest.approx(0.099, rel=BIN_ERROR)
    assert histogram.percentile(100) == pytest.approx(0.100, rel=BIN_ERROR)

    latencies = np.random.default_rng(0).lognormal(mean=-1.0, sigma=1.5, size=1000)
    histogram = LatencyHistogram()
    for value in latencies:
        histogram.add(float(value))
    for q in (1, 50, 90, 99):
        exact = float(np.percentile(latencies, q, method="inverted_cdf"))  # the nearest rank
        assert histogram.percentile(q) == pytest.approx(exact, rel=BIN_ERROR)


def test_skewed_latencies_give_a_p99_far_above_the_median():
    histogram = LatencyHistogram()
    histogram.add(0.1, count=98)
    histogram.add(5.0, count=2)
    assert histogram.percentile(50) == histogram.percentile(98) == pytest.approx(0.1)  # equal latencies: exact
    assert histogram.percentile(99) == pytest.approx(5.0)


def test_histograms_merge_and_subtract():
    first, second = LatencyHistogram(), LatencyHistogram()
    for value in (0.01, 0.2, 0.2, 3.0):
        first.add(value)
    for value in (0.2, 40.0):
        second.add(value)
    merged = LatencyHistogram.merged([first, second])
    assert merged.total == 6 and merged.counts[latency_bin(0.2)] == 3
    later = merged.since(first)
    assert later.counts == second.counts and later.seconds == pytest.approx(second.seconds)
    assert LatencyHistogram.from_json(json.loads(json.dumps(merged.to_json()))) == merged
    assert LatencyHistogram().percentile(50) is None
    with pytest.raises(ValueError, match="percentile q must be in"):
        merged.percentile(0)


def test_usage_counts_each_request_of_a_timed_batch_once():
    usage = TokenUsage()
    usage.add(10, 4, requests=3, seconds=0.5)
    usage.add(5, 0)  # a request that was not timed
    assert usage.as_dict()["requests"] == 4
    assert usage.latency.total == 3 and usage.latency.percentile(50) == pytest.approx(0.5)


def test_the_local_model_times_every_call(causal_backend):
    before = causal_backend.usage.latency_copy()
    causal_backend.generate(["reach the door"], max_tokens=2)
    causal_backend.score(["You are in cell 0."], [[" go left", " go right"]])
    added = causal_backend.usage.latency_copy().since(before)
    assert added.total == 2 and 0 < added.percentile(100) < 60


class ScriptedBackend:
    """Answers every prompt with "turn left", each call costing the same tokens and time."""

    model_name = "scripted-model"

    def __init__(self) -> None:
        self.usage = TokenUsage()

    def generate(self, prompts, **sampling):
        for _ in prompts:
            self.usage.add(PROMPT_TOKENS, COMPLETION_TOKENS, seconds=LATENCY_S)
        return ["turn left" for _ in prompts]


@pytest.fixture
def scripted_run(tmp_path, monkeypatch):
    """The suite played in this process by a random agent and an LLM agent on the scripted backend."""
    from textagents.bench import agents

    monkeypatch.setattr(agents, "_backend", lambda *args: ScriptedBackend())
    agents._llm_backend.cache_clear()
    try:
        run_suite(load_suite(write_suite(tmp_path, SCRIPTED_SUITE)), tmp_path / "run", progress=False)
    finally:
        agents._llm_backend.cache_clear()
    write_report(tmp_path / "run", plots=False)
    return tmp_path / "run"


def test_the_leaderboard_totals_the_scripted_llms_tokens_calls_and_cost(scripted_run):
    calls = 2 * STEPS  # one call per step (turning left never ends an episode early), two seeds
    cost = (
        calls * PROMPT_TOKENS * PRICE["prompt_per_1k"] + calls * COMPLETION_TOKENS * PRICE["completion_per_1k"]
    ) / 1000
    rows = {r["agent"]: r for r in csv.DictReader(io.StringIO((scripted_run / "leaderboard.csv").read_text()))}
    writer = rows["writer"]
    assert int(writer["llm_calls"]) == calls
    assert int(writer["prompt_tokens"]) == calls * PROMPT_TOKENS
    assert int(writer["completion_tokens"]) == calls * COMPLETION_TOKENS
    assert float(writer["cost"]) == pytest.approx(cost)
    assert float(writer["llm_latency_p50_s"]) == float(writer["llm_latency_p99_s"]) == pytest.approx(LATENCY_S)
    assert float(writer["seconds_per_step"]) > 0
    random = rows["random"]
    assert (random["llm_calls"], random["prompt_tokens"], random["completion_tokens"]) == ("0", "0", "0")
    assert random["cost"] == random["llm_latency_p50_s"] == random["llm_latency_p99_s"] == ""

    markdown = (scripted_run / "leaderboard.md").read_text()
    row = next(line for line in markdown.splitlines() if line.startswith("| writer | BabyAI-Text-GoToLocal-v0 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:6] == [str(calls), str(calls * PROMPT_TOKENS), str(calls * COMPLETION_TOKENS)]
    assert cells[6:] == ["250 ms", "250 ms", f"${cost:.4g}"]
    random_row = next(
        line for line in markdown.splitlines() if line.startswith("| random | BabyAI-Text-GoToLocal-v0 |")
    )
    assert random_row.count("—") == 6


def test_each_episode_records_only_its_own_calls(scripted_run):
    records = [json.loads(line) for line in (scripted_run / "episodes.jsonl").read_text().splitlines()]
    writer = [r for r in records if r["agent"] == "writer"]
    assert [r["llm"]["calls"] for r in writer] == [STEPS, STEPS]  # not the backend's running total
    assert all(r["llm"]["model"] == "scripted-model" for r in writer)
    assert all(sum(n for n, _ in r["llm_latency"].values()) == STEPS for r in writer)
    assert all(r["llm"] is None and r["llm_latency"] is None for r in records if r["agent"] == "random")
    assert all(0 < r["play_seconds"] <= r["seconds"] for r in records)
    summary = json.loads((scripted_run / "summary.json").read_text())
    llm = next(a for a in summary["agents"] if a["agent"] == "writer")["usage"]["llm"]
    assert llm["models"] == ["scripted-model"] and llm["calls"] == 2 * STEPS and llm["cache_hits"] == 0
    assert next(a for a in summary["agents"] if a["agent"] == "random")["usage"]["llm"] is None


@pytest.mark.parametrize(
    ("prices", "expected"),
    [
        ("[1, 2]", "prices: expected a mapping, got list"),
        ("{m: {prompt_per_1k: 1.0}}", "prices.m: missing required key 'completion_per_1k'"),
        (
            "{m: {prompt_per_1k: 1.0, completion_per_1k: 1.0, per_call: 2}}",
            "prices.m.per_call: unknown key 'per_call'",
        ),
        ("{m: {prompt_per_1k: -1, completion_per_1k: 0}}", "prices.m.prompt_per_1k: must be a finite number >= 0"),
        ("{m: {prompt_per_1k: .inf, completion_per_1k: 0}}", "prices.m.prompt_per_1k: must be a finite number >= 0"),
        ("{m: {prompt_per_1k: cheap, completion_per_1k: 0}}", "prices.m.prompt_per_1k: expected float, got str"),
        ("{3: {prompt_per_1k: 1, completion_per_1k: 0}}", "prices.3 (a model name): expected str, got int 3"),
    ],
)
def test_a_bad_price_table_names_the_key_and_what_is_valid(tmp_path, prices, expected):
    text = SCRIPTED_SUITE.split("prices:")[0] + f"prices: {prices}\n"
    path = write_suite(tmp_path, text, "bad.yaml")
    with pytest.raises(SuiteError, match="^" + str(path)) as caught:
        load_suite(path)
    assert expected in str(caught.value)


def test_the_price_table_reaches_run_json(scripted_run):
    run = json.loads((scripted_run / "run.json").read_text())
    assert run["suite"]["prices"] == {"scripted-model": PRICE}


def test_a_model_without_a_price_has_no_cost(tmp_path, monkeypatch):
    from textagents.bench import agents

    monkeypatch.setattr(agents, "_backend", lambda *args: ScriptedBackend())
    agents._llm_backend.cache_clear()
    text = SCRIPTED_SUITE.replace("seeds: [0, 1]", "seeds: [0]").replace("scripted-model: {", "other-model: {")
    try:
        run_suite(load_suite(write_suite(tmp_path, text)), tmp_path / "run", progress=False)
    finally:
        agents._llm_backend.cache_clear()
    write_report(tmp_path / "run", plots=False)
    rows = {r["agent"]: r for r in csv.DictReader(io.StringIO((tmp_path / "run" / "leaderboard.csv").read_text()))}
    assert rows["writer"]["cost"] == "" and int(rows["writer"]["prompt_tokens"]) == STEPS * PROMPT_TOKENS


def test_episodes_recorded_before_timings_get_no_cost_section():
    from textagents.bench.costs import markdown_lines

    old = {"usage": {"seconds_per_step": None, "llm": None}}
    assert markdown_lines({"agents": [old], "cells": []}) == []
