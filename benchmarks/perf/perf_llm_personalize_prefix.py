"""How much of LLM-Personalize's planner prompts a prefix cache could reuse, from a run's recorded calls (no
model): llama.cpp (``rollout_backend: llamacpp``) evaluates a call's prompt after the longest prefix it shares
with the previous call's, so the calls of a lockstep round share what consecutive prompts share (the round's
order, or sorted by text); keeping each episode's own cache would share what a prompt has in common with its
episode's previous prompt (bounded here by the best match in the previous round). Shares of prompt characters
(system + user messages).

Run: ``python benchmarks/perf/perf_llm_personalize_prefix.py RUN/llm_calls.jsonl`` (a run with the batched
transformers backend: its records mark each round's first call). Writes
``benchmarks/results/perf_llm_personalize_prefix.json``.
"""

from __future__ import annotations

import argparse
import json
from itertools import pairwise
from pathlib import Path

from common import write_result


def common_prefix(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


def rounds_of(path: Path) -> list[list[str]]:
    """Each lockstep round's prompts, in the order sent (a round's first record carries its batch's usage)."""
    rounds: list[list[str]] = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "chat":
            continue
        if record["usage"]["requests"] > 0 or not rounds:
            rounds.append([])
        rounds[-1].append("\n".join(m["content"] for m in record["request"]["messages"]))
    return rounds


def shares(rounds: list[list[str]]) -> dict[str, float]:
    everything = sum(len(p) for prompts in rounds for p in prompts)
    in_order = sum(common_prefix(a, b) for prompts in rounds for a, b in pairwise(prompts))
    in_text_order = sum(common_prefix(a, b) for prompts in rounds for a, b in pairwise(sorted(prompts)))
    # a round with more prompts than the one before starts another evaluation: its prompts have no previous one
    later = [(p, c) for p, c in pairwise(rounds) if len(c) <= len(p)]
    later_chars = sum(len(prompt) for _, current in later for prompt in current)
    per_episode = sum(max(common_prefix(c, p) for p in previous) for previous, current in later for c in current)
    return {
        "rounds": len(rounds),
        "prompts": sum(len(prompts) for prompts in rounds),
        "prompt_chars": everything,
        "shared_with_previous_call_round_order": in_order / everything,
        "shared_with_previous_call_text_order": in_text_order / everything,
        "later_rounds_shared_with_best_previous_round_prompt": per_episode / later_chars if later_chars else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("calls", type=Path, help="a run's llm_calls.jsonl")
    args = parser.parse_args()
    result = {"calls": str(args.calls), **shares(rounds_of(args.calls))}
    print(write_result("perf_llm_personalize_prefix", result).read_text())


if __name__ == "__main__":
    main()
