"""Cost and latency: what an episode's LLM calls spent, and the leaderboard's cost and latency columns.

A worker's LLM backend serves all of its episodes, so an episode's share is the difference of the backend's
running totals (``TokenUsage``) before and after it. An episode record holds ``llm`` (the model's name, prompt
and completion tokens, calls and cache hits; None for an agent without an LLM), ``llm_latency`` (its calls'
latencies as a ``LatencyHistogram``) and ``play_seconds`` (the wall time of its steps, the agent's and the
env's, without building them). Prices (``prices:`` in the suite: per model, per 1,000 prompt and completion
tokens) turn tokens into money.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from textagents.llm.accounting import LatencyHistogram

#: The record fields that measure time: they differ between two plays of the same episode.
TIMING_FIELDS = ("seconds", "play_seconds", "llm_latency")
#: A price's keys: money per 1,000 tokens.
PRICE_KEYS = ("prompt_per_1k", "completion_per_1k")
LLM_COUNTS = ("prompt_tokens", "completion_tokens", "calls", "cache_hits")
CSV_FIELDS = (
    "seconds_per_step",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "llm_latency_p50_s",
    "llm_latency_p99_s",
    "cost",
)


class LLMMeter:
    """What ``agent``'s LLM backend (its ``backend.usage``, when it has one) spends from now until ``spent()``."""

    def __init__(self, agent: Any):
        backend = getattr(agent, "backend", None)
        self.usage = getattr(backend, "usage", None)
        self.model = str(getattr(backend, "model_name", ""))
        if self.usage is not None:
            self.before = self.usage.as_dict()
            self.latency_before = self.usage.latency_copy()

    def spent(self) -> dict[str, Any]:
        """The record's ``llm`` and ``llm_latency`` fields (both None for an agent without an LLM)."""
        if self.usage is None:
            return {"llm": None, "llm_latency": None}
        after = self.usage.as_dict()
        counts = {key: after[key] - self.before[key] for key in ("prompt_tokens", "completion_tokens", "cache_hits")}
        return {
            "llm": {"model": self.model, **counts, "calls": after["requests"] - self.before["requests"]},
            "llm_latency": self.usage.latency_copy().since(self.latency_before).to_json(),
        }


def episode_cost(llm: Mapping[str, Any], prices: Mapping[str, Mapping[str, float]]) -> float | None:
    """The price of an episode's tokens; None when the price table has no entry for its model."""
    price = prices.get(llm["model"])
    if price is None:
        return None
    return (
        llm["prompt_tokens"] * price["prompt_per_1k"] + llm["completion_tokens"] * price["completion_per_1k"]
    ) / 1000


def usage_stats(records: Sequence[dict[str, Any]], prices: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Over some episodes: the wall time per step, and (``llm``, None when no episode used an LLM) the LLM
    calls and tokens in all, the calls' median and 99th-percentile latency (None when none was timed), and
    the cost (None when a model has no price)."""
    timed = [r for r in records if r.get("play_seconds") is not None]
    steps = sum(r["steps"] for r in timed)
    seconds_per_step = math.fsum(r["play_seconds"] for r in timed) / steps if steps else None
    used = [r["llm"] for r in records if r.get("llm")]
    if not used:
        return {"seconds_per_step": seconds_per_step, "llm": None}
    latency = LatencyHistogram.merged(LatencyHistogram.from_json(r.get("llm_latency") or {}) for r in records)
    costs = [episode_cost(llm, prices) for llm in used]
    return {
        "seconds_per_step": seconds_per_step,
        "llm": {
            "models": sorted({llm["model"] for llm in used}),
            **{key: sum(llm[key] for llm in used) for key in LLM_COUNTS},
            "latency_p50_s": latency.percentile(50),
            "latency_p99_s": latency.percentile(99),
            "cost": None if None in costs else math.fsum(costs),
        },
    }


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def csv_row(stats: dict[str, Any]) -> dict[str, str]:
    """The cost and latency cells of a leaderboard.csv row: LLM counts 0 and the rest empty for an agent
    without an LLM; empty latency without timed calls, empty cost without a price."""
    llm = stats["llm"] or {}
    return {
        "seconds_per_step": _number(stats["seconds_per_step"]),
        "llm_calls": str(llm.get("calls", 0)),
        "prompt_tokens": str(llm.get("prompt_tokens", 0)),
        "completion_tokens": str(llm.get("completion_tokens", 0)),
        "llm_latency_p50_s": _number(llm.get("latency_p50_s")),
        "llm_latency_p99_s": _number(llm.get("latency_p99_s")),
        "cost": _number(llm.get("cost")),
    }


def duration_text(seconds: float | None) -> str:
    """``850 µs``, ``12.3 ms``, ``1.25 s``; ``—`` for None."""
    if seconds is None:
        return "—"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def _row(agent: str, env: str, stats: dict[str, Any]) -> str:
    llm = stats["llm"]
    if llm is None:
        cells = ["—"] * 6
    else:
        cost = "—" if llm["cost"] is None else f"${llm['cost']:.4g}"
        cells = [
            f"{llm['calls']:,}",
            f"{llm['prompt_tokens']:,}",
            f"{llm['completion_tokens']:,}",
            duration_text(llm["latency_p50_s"]),
            duration_text(llm["latency_p99_s"]),
            cost,
        ]
    return f"| {agent} | {env} | {duration_text(stats['seconds_per_step'])} | {' | '.join(cells)} |"


def markdown_lines(summary: dict[str, Any]) -> list[str]:
    """The leaderboard's "Cost and latency" section: per agent, each env it played and all of them; none when the
    episodes hold neither timings nor LLM usage (they were recorded before either was)."""
    if all(a["usage"] == {"seconds_per_step": None, "llm": None} for a in summary["agents"]):
        return []
    lines = [
        "## Cost and latency",
        "",
        "Per agent and env: wall time per step (the agent's and the env's), LLM calls and tokens in all, the",
        "calls' median (p50) and 99th-percentile (p99) latency, and the tokens' cost from the suite's `prices`",
        "(— without a price for the model; — in every LLM column for agents without an LLM).",
        "",
        "| agent | env | time per step | LLM calls | prompt tokens | completion tokens | LLM p50 | LLM p99 | cost |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for agent in summary["agents"]:
        cells = [c for c in summary["cells"] if c["agent"] == agent["agent"]]
        lines += [_row(agent["agent"], c["env"], c["usage"]) for c in cells]
        if len(cells) > 1:
            lines.append(_row(agent["agent"], "**all**", agent["usage"]))
    return [*lines, ""]
