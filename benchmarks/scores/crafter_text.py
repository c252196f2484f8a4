"""Crafter scores of reference agents on Crafter-Text-v0: a uniformly random agent and the scripted expert.

    python benchmarks/scores/crafter_text.py random --episodes 500
    python benchmarks/scores/crafter_text.py expert --episodes 20

Writes ``benchmarks/results/crafter_text_<agent>.json``: the Crafter score, success rate of every
achievement, achievements per episode, lengths. Episodes are seeded 0..N-1 and run in worker processes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textenvs.envs.crafter_text import crafter_score, success_rates

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "perf"))
from common import write_result

#: Stock crafter's random agent measured here: 1.46 over 300 episodes; Hafner (2021) reports 1.6.
REFERENCE = {"random": 1.6, "human": 50.5, "spring_gpt4": 27.3}


def play(job: tuple[str, int]) -> dict[str, Any]:
    """One full episode of ``agent`` from ``reset(seed=seed)``; its episode metrics."""
    agent, seed = job
    env = gym.make("Crafter-Text-v0", action_mode="discrete")
    obs, info = env.reset(seed=seed)
    if agent == "expert":
        expert = env.unwrapped.expert()
        expert.reset(obs, info)
        choose = lambda: expert.act(obs, info)  # noqa: E731
    else:
        actions = np.random.default_rng(seed)
        choose = lambda: int(actions.integers(env.action_space.n))  # noqa: E731
    while True:
        obs, _reward, terminated, truncated, info = env.step(choose())
        if terminated or truncated:
            env.close()
            return {"seed": seed, "died": bool(terminated), **info["episode_metrics"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agent", choices=("random", "expert"))
    parser.add_argument("--episodes", type=int, default=None, help="default: 500 random, 20 expert")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    episodes = args.episodes or (500 if args.agent == "random" else 20)
    start = time.perf_counter()
    with Pool(args.workers) as pool:
        results = pool.map(play, [(args.agent, seed) for seed in range(episodes)], chunksize=1)
    unlocked = [r["num_achievements"] for r in results]
    summary = {
        "env": "Crafter-Text-v0",
        "agent": args.agent,
        "episodes": episodes,
        "seeds": f"0..{episodes - 1}",
        "crafter_score": crafter_score(results),
        "reference_scores": REFERENCE,
        "achievements_per_episode_mean": statistics.fmean(unlocked),
        "achievements_per_episode_min": min(unlocked),
        "length_mean": statistics.fmean(r["length"] for r in results),
        "return_mean": statistics.fmean(r["return"] for r in results),
        "died_fraction": statistics.fmean(r["died"] for r in results),
        "success_rates_percent": success_rates(results),
        "per_episode": [{k: r[k] for k in ("seed", "num_achievements", "length", "return", "died")} for r in results],
        "wall_seconds": time.perf_counter() - start,
    }
    path = write_result(f"crafter_text_{args.agent}", summary)
    print(f"{args.agent}: Crafter score {summary['crafter_score']:.2f} over {episodes} episodes, ", end="")
    print(f"{summary['achievements_per_episode_mean']:.2f} achievements/episode -> {path}")


if __name__ == "__main__":
    main()
