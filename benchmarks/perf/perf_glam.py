"""GLAM's training loop on this machine with SmolLM2-135M-Instruct: env frames/s of collection (the policy
scoring the six commands and the value head, for every env each frame) and of a whole iteration (collection
+ the PPO update), with the LLM in this process and in 2 worker processes (lamorel-style ``Caller``).
``score()`` pairs/s with and without context reuse are in ``perf_smollm2.json``; the score cache is off
here (``perf_glam_cache.py`` measures it).

Needs `textagents download smollm2`. Writes ``benchmarks/results/perf_glam.json``.
Run: ``python benchmarks/perf/perf_glam.py [--envs 8] [--frames 8] [--lora-r 8] [--micro-batch 4]``.
The update's memory grows with ``--micro-batch`` (each context's cache is copied for its six commands): 16
contexts per pass took ~15 GB in a worker.
"""

from __future__ import annotations

import argparse
import time

from common import write_result

from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.llm_learner import LLMLearner

MODEL = "smollm2-135m-instruct"


def measure(args: argparse.Namespace, processes: int) -> dict:
    config = GlamConfig(
        model=MODEL,
        envs=args.envs,
        frames_per_env=args.frames,
        llm_processes=processes,
        lora_r=args.lora_r,
        learning_rate=1e-4,
        ppo_epochs=1,
        minibatch_size=args.envs * args.frames,
        micro_batch=args.micro_batch,
        score_cache=False,  # the collection loop scores the same states again: the model's speed, not the cache's
    )
    start = time.perf_counter()
    learner = LLMLearner(config, MODEL)
    load_s = time.perf_counter() - start
    try:
        start = time.perf_counter()
        for _ in range(args.frames):
            learner.policy(learner.train, list(range(args.envs)))
        scoring_s = time.perf_counter() - start
        start = time.perf_counter()
        learner.train_frames(1)
        iteration_s = time.perf_counter() - start
    finally:
        learner.close()
    frames = args.envs * args.frames
    return {
        "load_s": load_s,
        "collection_frames_per_s": frames / scoring_s,
        "iteration_frames_per_s": frames / iteration_s,
        "iteration_s": iteration_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--lora-r", type=int, default=8)
    parser.add_argument("--micro-batch", type=int, default=4, help="contexts per forward pass in the update")
    args = parser.parse_args()
    rows = {}
    for processes in (1, 2):
        rows[f"processes_{processes}"] = measure(args, processes)
        print(processes, rows[f"processes_{processes}"], flush=True)
    one, two = rows["processes_1"], rows["processes_2"]
    result = {
        "model": MODEL,
        "envs": args.envs,
        "frames_per_env": args.frames,
        "lora_r": args.lora_r,
        **rows,
        "collection_speedup_2_vs_1": two["collection_frames_per_s"] / one["collection_frames_per_s"],
        "iteration_speedup_2_vs_1": two["iteration_frames_per_s"] / one["iteration_frames_per_s"],
    }
    print(write_result("perf_glam", result).read_text())


if __name__ == "__main__":
    main()
