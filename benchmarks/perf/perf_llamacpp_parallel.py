"""LLM-Personalize's planner calls on llama.cpp one after another (``LlamaCppBackend``, the KV state cache on,
as ``rollout_state_cache_mb``'s default) and decoded together (``ParallelLlamaCppBackend`` at each
``--parallel``): a run's recorded planning calls (every ``--every``-th: all its stages and scenes) asked again as
one round, with the paper's sampling (temperature 1, top-p 0.9, penalties 0.2, one seed for the round, as the
planner asks), plans cut after 10 steps, one thread. The arms alternate, ``--repeats`` times each, in one
process. Reports the CPU seconds, the new tokens and how many answers equal the one-after-another arm's.

Run, on the first round of a Qwen run (its zero-shot evaluation's first 30 calls,
``perf_llamacpp_parallel_calls.jsonl``: ~330-token prompts, plans of ~100 tokens) and on every 9th call of
SmolLM2's ``results/cpu`` run (longer prompts, to which Qwen answers in a few tokens)::

    python benchmarks/perf/perf_llamacpp_parallel.py benchmarks/results/perf_llamacpp_parallel_calls.jsonl \
        --every 1 --gguf MODEL.gguf --parallel 8 40 --result perf_llamacpp_parallel_round0
    python benchmarks/perf/perf_llamacpp_parallel.py benchmarks/methods/llm_personalize/results/cpu/llm_calls.jsonl \
        --every 9 --gguf MODEL.gguf --parallel 8 40 --result perf_llamacpp_parallel_long_prompts

(``--model``, default Qwen2.5-Coder-0.5B-Instruct, gives the chat template; ``--gguf`` the weights llama.cpp runs,
e.g. a run's ``models/base/model-q8_0.gguf``; needs llama-cpp-python.) Writes
``benchmarks/results/RESULT.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial
from pathlib import Path

from common import write_result

from textagents.llm.llamacpp_backend import LlamaCppBackend
from textagents.llm.llamacpp_parallel import ParallelLlamaCppBackend
from textagents.llm.models import resolve_model
from textagents.methods.llm_personalize.plan_parser import steps_read

SAMPLING = {"temperature": 1.0, "top_p": 0.9, "frequency_penalty": 0.2, "presence_penalty": 0.2, "seed": 0}
STATE_CACHE_MB = 2048


def ask_round(gguf: Path, prompts: list[list[int]], parallel: int, max_tokens: int) -> dict:
    options = {"n_ctx": 4096, "n_threads": 1, "logits_all": False, "stop_when": partial(steps_read, max_steps=10)}
    if parallel == 1:
        llama = LlamaCppBackend(gguf, state_cache_mb=STATE_CACHE_MB, **options)
    else:
        llama = ParallelLlamaCppBackend(gguf, parallel=parallel, **options)
    try:
        start = time.process_time()
        answers = llama.generate(prompts, max_tokens=max_tokens, **SAMPLING)
        return {"cpu_s": time.process_time() - start, "new_tokens": llama.usage.completion_tokens, "answers": answers}
    finally:
        llama.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("calls", type=Path, help="a run's llm_calls.jsonl")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct", help="its chat template and tokenizer")
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=40, dest="count", help="N planning calls")
    parser.add_argument("--every", type=int, default=9, help="every K-th planning call of the run (stages, scenes)")
    parser.add_argument("--parallel", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--result", default="perf_llamacpp_parallel", help="the result's name")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(args.model))
    records = [json.loads(line) for line in args.calls.read_text().splitlines()]
    conversations = [r["request"]["messages"] for r in records if r["kind"] == "chat"][:: args.every][: args.count]
    texts = [tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in conversations]
    prompts = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    arms = [1, *args.parallel]
    runs: dict[int, list[dict]] = {arm: [] for arm in arms}
    for repeat in range(args.repeats):
        for arm in arms if repeat % 2 == 0 else arms[::-1]:
            runs[arm].append(ask_round(args.gguf, prompts, arm, args.max_tokens))
            print(arm, round(runs[arm][-1]["cpu_s"], 1), "CPU s", runs[arm][-1]["new_tokens"], "new tokens", flush=True)
    cpu = {arm: statistics.median(r["cpu_s"] for r in results) for arm, results in runs.items()}
    lone = runs[1][0]["answers"]
    result = {
        "calls": str(args.calls),
        "model": args.model,
        "gguf": args.gguf.name,
        "planning_calls": len(prompts),
        "every": args.every,
        "prompt_tokens": sum(len(p) for p in prompts),
        "sampling": {**SAMPLING, "max_tokens": args.max_tokens, "max_steps": 10},
        "repeats": args.repeats,
        "cpu_s": {str(arm): [round(r["cpu_s"], 2) for r in results] for arm, results in runs.items()},
        "new_tokens": {str(arm): results[0]["new_tokens"] for arm, results in runs.items()},
        "speedup_median_cpu": {str(arm): round(cpu[1] / cpu[arm], 3) for arm in args.parallel},
        "answers_equal_to_lone": {
            str(arm): sum(a == b for a, b in zip(lone, runs[arm][0]["answers"], strict=True)) for arm in args.parallel
        },
    }
    print(write_result(args.result, result).read_text())


if __name__ == "__main__":
    main()
