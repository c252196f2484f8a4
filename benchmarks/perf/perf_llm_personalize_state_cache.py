"""LLM-Personalize's planner calls on llama.cpp with and without the KV state cache (``rollout_state_cache_mb``):
a run's recorded planning calls asked again in their recorded order (lockstep rounds: the episodes in turn), one
thread, greedy answers of at most ``--max-tokens`` tokens; the two alternate, ``--repeats`` times each, in one
process. Reports the CPU seconds, the tokens llama.cpp evaluated (prompt and answer) and whether the answers
agree.

Run: ``python benchmarks/perf/perf_llm_personalize_state_cache.py
benchmarks/methods/llm_personalize/results/cpu/llm_calls.jsonl --model qwen2.5-coder-0.5b-instruct --calls 40``
(a downloaded model's name or a ``.gguf`` path; needs llama-cpp-python). Writes
``benchmarks/results/perf_llm_personalize_state_cache.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from common import write_result

from textagents.llm.llamacpp_backend import LlamaCppBackend

STATE_CACHE_MB = 2048


def ask_all(model: str, conversations: list[list[dict[str, str]]], state_cache_mb: int, max_tokens: int) -> dict:
    llama = LlamaCppBackend(model, n_ctx=4096, n_threads=1, logits_all=False, state_cache_mb=state_cache_mb)
    evaluated = []
    evaluate = llama.llm.eval
    llama.llm.eval = lambda tokens: evaluated.append(len(tokens)) or evaluate(tokens)
    try:
        start = time.process_time()
        answers = [llama.chat(messages, max_tokens=max_tokens, temperature=0.0) for messages in conversations]
        return {"cpu_s": time.process_time() - start, "evaluated_tokens": sum(evaluated), "answers": answers}
    finally:
        llama.llm.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("calls", type=Path, help="a run's llm_calls.jsonl")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--calls", type=int, default=40, dest="count", help="the first N planning calls")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    records = [json.loads(line) for line in args.calls.read_text().splitlines()]
    conversations = [r["request"]["messages"] for r in records if r["kind"] == "chat"][: args.count]
    runs: dict[str, list[dict]] = {"plain": [], "state_cache": []}
    for repeat in range(args.repeats):
        order = ("plain", "state_cache") if repeat % 2 == 0 else ("state_cache", "plain")
        for arm in order:
            runs[arm].append(
                ask_all(args.model, conversations, STATE_CACHE_MB if arm == "state_cache" else 0, args.max_tokens)
            )
            print(
                arm, round(runs[arm][-1]["cpu_s"], 1), "CPU s", runs[arm][-1]["evaluated_tokens"], "tokens", flush=True
            )
    cpu = {arm: statistics.median(r["cpu_s"] for r in results) for arm, results in runs.items()}
    answers = [runs["plain"][0]["answers"], runs["state_cache"][0]["answers"]]
    result = {
        "calls": str(args.calls),
        "model": args.model,
        "planning_calls": len(conversations),
        "max_tokens": args.max_tokens,
        "repeats": args.repeats,
        "cpu_s": {arm: [round(r["cpu_s"], 2) for r in results] for arm, results in runs.items()},
        "evaluated_tokens": {arm: results[0]["evaluated_tokens"] for arm, results in runs.items()},
        "speedup_median_cpu": cpu["plain"] / cpu["state_cache"],
        "answers_equal": sum(a == b for a, b in zip(*answers, strict=True)),
    }
    print(write_result("perf_llm_personalize_state_cache", result).read_text())


if __name__ == "__main__":
    main()
