"""LLM-Personalize's planning calls on SmolLM2-135M-Instruct: transformers, one batch of the 16 prompts of a
``cpu.yaml`` evaluation round (``chat_batch``, as ``planner.play`` sends them), against llama.cpp on the F16
GGUF export of the same weights (``rollout_backend: llamacpp``: one call after another), alternated in one
process, one thread each, ``cpu.yaml``'s sampling (96 new tokens, temperature 1, top_p 0.9, penalties 0.2).
Reports planning calls per second of wall time and of this process's CPU time, new tokens/s, the ratios
llama.cpp / transformers, and episodes/hour at the planning calls per episode of the recorded CPU run
(``results/cpu``: zero-shot 6.1, IL 4.2), with the machine's load average before and after.

Also checks the export: llama.cpp's logits on the exported F16 GGUF (float32 KV cache) against transformers'
on the float32 safetensors, at every position of 10 prompts (top-1 agreement, largest |difference|), beside
the downloaded Q4_1 GGUF's.

Needs `textagents download smollm2` and llama-cpp-python. Writes
``benchmarks/results/perf_llm_personalize_backends.json``.
Run: ``python benchmarks/perf/perf_llm_personalize_backends.py [--rounds 1] [--threads 1]`` (one round of
each: ~5 minutes on the 2 shared cores).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import write_result

from textagents.llm.base import chat_batch
from textagents.llm.models import gguf_path
from textagents.llm.transformers_backend import TransformersBackend
from textagents.methods.core.config import load_config
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.planner import PAPER_SAMPLING, planner_messages
from textagents.methods.llm_personalize.rollout_backend import LlamaCppPlanner, gguf_in
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.sampling import paper_split_indices

MODEL = "smollm2-135m-instruct"
CPU_YAML = Path(__file__).resolve().parents[1] / "methods" / "llm_personalize" / "cpu.yaml"
#: Planning calls per episode of the recorded CPU run (docs/methods/llm_personalize.md, results/cpu).
CALLS_PER_EPISODE = {"zero_shot": 6.1, "il": 4.2}
EXTRA_PROMPTS = ("You are a household robot. List three things to tidy in a living room:\n1.", "step 1: go to")
GGML_TYPE_F32 = 0


def round_prompts(config: LLMPersonalizeConfig) -> list[list[dict[str, str]]]:
    """The first planning prompt of each episode of one ``cpu.yaml`` evaluation (its lockstep batch)."""
    env = HousekeepTextEnv(scenes=list(config.scenes), episode_source="llm_personalize")
    prompts = []
    for split in ("train", "test"):
        for scene in config.scenes:
            for index in paper_split_indices(split)[: config.eval_episodes]:
                obs, _ = env.reset(seed=index, options={"scene": scene, "episode_index": index})
                prompts.append(planner_messages(obs["text"]))
    env.close()
    return prompts


def timed_round(backend: Any, prompts: list, sampling: dict[str, Any], seed: int) -> dict[str, float]:
    usage = backend.usage
    before = usage.completion_tokens
    start, cpu_start = time.perf_counter(), time.process_time()
    chat_batch(backend, prompts, **sampling, seed=seed)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "calls": len(prompts),
        "new_tokens": usage.completion_tokens - before,
    }


def summary(rounds: list[dict[str, float]]) -> dict[str, Any]:
    """Rates over wall time (what a run on this machine gets, under its load) and over this process's CPU
    time (one thread each: what an idle core would give, less sensitive to the other jobs)."""
    seconds = sum(r["seconds"] for r in rounds)
    cpu_seconds = sum(r["cpu_seconds"] for r in rounds)
    calls = sum(r["calls"] for r in rounds)
    tokens = sum(r["new_tokens"] for r in rounds)
    per_s = calls / seconds
    return {
        "rounds": rounds,
        "planning_calls_per_s": per_s,
        "planning_calls_per_cpu_s": calls / cpu_seconds,
        "new_tokens_per_s": tokens / seconds,
        "new_tokens_per_call": tokens / calls,
        **{f"episodes_per_hour_{k}": 3600 * per_s / v for k, v in CALLS_PER_EPISODE.items()},
        **{f"episodes_per_cpu_hour_{k}": 3600 * calls / cpu_seconds / v for k, v in CALLS_PER_EPISODE.items()},
    }


def logit_agreement(llama_path: Path, local: TransformersBackend, prompts: list[list[int]]) -> dict[str, float]:
    """llama.cpp's logits (float32 KV cache) against transformers' at every position of ``prompts``."""
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(llama_path),
        n_ctx=1024,
        n_threads=torch.get_num_threads(),
        logits_all=True,
        verbose=False,
        type_k=GGML_TYPE_F32,
        type_v=GGML_TYPE_F32,
    )
    agree = positions = last_agree = 0
    largest = 0.0
    try:
        for ids in prompts:
            llm.reset()
            llm.eval(ids)
            ours = np.asarray(llm.scores[: len(ids)])
            with torch.no_grad():
                expected = local.model(torch.tensor([ids])).logits[0].float().numpy()
            agree += int((ours.argmax(-1) == expected.argmax(-1)).sum())
            last_agree += int(ours[-1].argmax() == expected[-1].argmax())
            positions += len(ids)
            largest = max(largest, float(np.abs(ours - expected).max()))
    finally:
        llm.close()
    return {
        "prompts": len(prompts),
        "positions": positions,
        "top1_agreement": agree / positions,
        "last_position_top1_agreement": last_agree / len(prompts),
        "max_abs_logit_difference": largest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds per backend, alternated")
    parser.add_argument("--threads", type=int, default=1, help="torch and llama.cpp threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    config = load_config(LLMPersonalizeConfig, CPU_YAML)
    sampling = {**PAPER_SAMPLING, **config.sampling()}
    prompts = round_prompts(config)
    local = TransformersBackend(MODEL, batch_size=len(prompts), dtype=torch.float32)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        planner = LlamaCppPlanner(MODEL, "f16", record=None, threads=args.threads)
        start = time.perf_counter()
        planner.export(local, folder)
        export_s = time.perf_counter() - start
        llama = planner.backend(local, folder)
        exported = gguf_in(folder, "f16")
        probe = [local.encode(local.chat_prompt(m)) for m in prompts[:8]] + [local.encode(t) for t in EXTRA_PROMPTS]
        agreement = {
            "f16_export": logit_agreement(exported, local, probe),
            "downloaded_q4_1": logit_agreement(gguf_path(MODEL), local, probe),
        }
        warm = {**sampling, "max_tokens": 4}
        chat_batch(local, prompts[:2], **warm, seed=0)
        chat_batch(llama, prompts[:2], **warm, seed=0)
        timings: dict[str, list[dict[str, float]]] = {"transformers_batched": [], "llama_cpp_sequential": []}
        for seed in range(args.rounds):
            timings["transformers_batched"].append(timed_round(local, prompts, sampling, seed))
            timings["llama_cpp_sequential"].append(timed_round(llama, prompts, sampling, seed))
        gguf_bytes = exported.stat().st_size
        planner.close()
    rows = {name: summary(rounds) for name, rounds in timings.items()}
    llama_row, transformers_row = rows["llama_cpp_sequential"], rows["transformers_batched"]
    result = {
        "model": MODEL,
        "threads": args.threads,
        "batch": len(prompts),
        "sampling": {k: v for k, v in sampling.items() if k != "stop"},
        "load_average_before_after": [load_before, os.getloadavg()],
        "export_f16_s": export_s,
        "export_f16_bytes": gguf_bytes,
        "logits_against_transformers": agreement,
        **rows,
        "llama_cpp_over_transformers": {
            key: llama_row[key] / transformers_row[key]
            for key in ("planning_calls_per_s", "planning_calls_per_cpu_s", "new_tokens_per_s")
        },
    }
    print(write_result("perf_llm_personalize_backends", result).read_text())


if __name__ == "__main__":
    main()
