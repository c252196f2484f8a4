"""The GGUF export's output types (``rollout_gguf``) on a downloaded model: how often llama.cpp's top-1 token on
each export agrees with the transformers float32 model's over every position of a run's recorded planner
prompts (and at the last position, where a plan starts), the largest logit difference, and llama.cpp's CPU
time per prompt token and per new token on one thread (the exports alternating, ``--repeats`` times).

Run: ``python benchmarks/perf/perf_gguf_outtypes.py benchmarks/methods/llm_personalize/results/cpu/llm_calls.jsonl
--model qwen2.5-coder-0.5b-instruct`` (needs llama-cpp-python and the model downloaded). Writes
``benchmarks/results/perf_gguf_outtypes.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from common import write_result
from llama_cpp import Llama

from textagents.llm.gguf_export import reference_gguf, write_gguf
from textagents.llm.transformers_backend import TransformersBackend

OUTTYPES = ("f16", "q8_0")
NEW_TOKENS = 48


def agreement(path: Path, prompts: list[list[int]], expected: list[np.ndarray]) -> dict[str, float]:
    llm = Llama(str(path), n_ctx=2048, n_threads=1, n_threads_batch=1, logits_all=True, verbose=False)
    try:
        agree = last = total = 0
        largest = 0.0
        for tokens, logits in zip(prompts, expected, strict=True):
            llm.reset()
            llm.eval(tokens)
            ours = np.asarray(llm.scores[: len(tokens)])
            agree += int((ours.argmax(1) == logits.argmax(1)).sum())
            last += int(ours[-1].argmax() == logits[-1].argmax())
            total += len(tokens)
            largest = max(largest, float(np.abs(ours - logits).max()))
        return {"top1_agreement": agree / total, "last_position_agreement": last / len(prompts), "largest": largest}
    finally:
        llm.close()


def speed(llm: Llama, prompt: list[int]) -> tuple[float, float]:
    """CPU ms per prompt token and per new token (tokens fed one at a time after the prompt)."""
    llm.reset()
    start = time.process_time()
    llm.eval(prompt)
    prefill = (time.process_time() - start) / len(prompt)
    start = time.process_time()
    for i in range(NEW_TOKENS):
        llm.eval([prompt[i % len(prompt)]])
    return 1000 * prefill, 1000 * (time.process_time() - start) / NEW_TOKENS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("calls", type=Path, help="a run's llm_calls.jsonl")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--prompts", type=int, default=8, help="recorded planner prompts, spread over the run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    backend = TransformersBackend(args.model)
    records = [json.loads(line) for line in args.calls.read_text().splitlines()]
    chats = [r["request"]["messages"] for r in records if r["kind"] == "chat"]
    chosen = chats[:: max(1, len(chats) // args.prompts)][: args.prompts]
    prompts = [list(backend.encode(backend.chat_prompt(messages))) for messages in chosen]
    with torch.no_grad():
        expected = [backend.model(torch.tensor([tokens])).logits[0].numpy() for tokens in prompts]
    result: dict = {
        "calls": str(args.calls),
        "model": args.model,
        "prompts": len(prompts),
        "positions": sum(map(len, prompts)),
    }
    with tempfile.TemporaryDirectory() as folder:
        paths = {
            outtype: write_gguf(
                backend.model,
                backend.tokenizer,
                Path(folder) / f"{outtype}.gguf",
                reference=reference_gguf(args.model),
                outtype=outtype,
            )
            for outtype in OUTTYPES
        }
        result["agreement"] = {outtype: agreement(path, prompts, expected) for outtype, path in paths.items()}
        models = {o: Llama(str(p), n_ctx=2048, n_threads=1, n_threads_batch=1, verbose=False) for o, p in paths.items()}
        times: dict[str, list[tuple[float, float]]] = {outtype: [] for outtype in OUTTYPES}
        for repeat in range(args.repeats):
            for outtype in OUTTYPES if repeat % 2 == 0 else OUTTYPES[::-1]:
                times[outtype].append(speed(models[outtype], prompts[0]))
        for llm in models.values():
            llm.close()
    result["ms_per_prompt_token"] = {o: [round(t[0], 2) for t in ts] for o, ts in times.items()}
    result["ms_per_new_token"] = {o: [round(t[1], 2) for t in ts] for o, ts in times.items()}
    medians = {o: statistics.median(t[1] for t in ts) for o, ts in times.items()}
    result["new_token_speedup_q8_0"] = medians["f16"] / medians["q8_0"]
    print(write_result("perf_gguf_outtypes", result).read_text())


if __name__ == "__main__":
    main()
