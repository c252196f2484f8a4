"""BK-Goal's ``original`` rule per frame on ELLM's Crafter (one mission, so ``goal_rounds: 3`` gives a library
of 3 rounds): Φ with the history's embedding skipped (this checkout: every round is among the 3 nearest) against
Φ with it computed (the code before, which embedded the episode's last 5 steps described, ~730 characters, and
the transition's caption, ~220, at every frame; measured here with a 4-round library, which needs them).

A random policy's ``--frames`` frames of ``Crafter-Text-ELLM-v0`` (seed 0), the episode's last 5 steps as the
shaping wrapper keeps them; each arm a fresh ``SentenceEmbedder`` (all-MiniLM-L6-v2, its cache empty), one torch
thread, arms alternating over ``--rounds``; processor and wall time per frame, and the embedder's cache hits.

Writes ``benchmarks/results/perf_bk_goal.json``.
Run: ``python benchmarks/perf/perf_bk_goal.py [--frames 200] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from common import write_result

import textenvs  # noqa: F401  (registers the environments)
from textagents.methods.bk.environments import discrete_commands
from textagents.methods.bk.goal_potential import NearestGoalsPotential
from textagents.methods.bk.goal_prompt import describe_steps
from textagents.methods.bk.samples import Step
from textagents.sb3.features import SentenceEmbedder

ENV_ID = "Crafter-Text-ELLM-v0"
HISTORY = 5  # cpu_crafter.yaml's goal_samples: the steps the original rule compares
GOALS = [
    ["collect wood", "place a crafting table", "make a wood pickaxe"],
    ["collect stone", "drink water", "eat a cow"],
    ["collect coal", "place a furnace", "make a stone pickaxe"],
]
ARMS = {"history_embedded": 4, "history_skipped": 3}


def frames(count: int, env_id: str = ENV_ID) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(observation, info) for ``count`` random-policy frames of ``env_id`` (seed 0), ``info`` as the shaping
    wrapper gives it."""
    env = gym.make(env_id, action_mode="discrete")
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    history: deque[tuple[Any, Any]] = deque(maxlen=HISTORY)
    out, action = [], None
    for _ in range(count):
        out.append((obs, {"history": tuple(history), "action": action}))
        history.append((action, obs))
        action = int(rng.integers(env.action_space.n))
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
            history.clear()
            action = None
    env.close()
    return out


def timing_fields(seconds: dict[str, dict[str, list[float]]], before: str, after: str) -> dict[str, Any]:
    """Each arm's milliseconds a frame per round and clock (``seconds[arm][clock]``), and per clock the median
    over rounds of ``before``'s time over ``after``'s."""
    return {
        **{
            f"ms_per_frame_{clock}_{arm}": [round(s * 1000, 2) for s in seconds[arm][clock]]
            for arm in seconds
            for clock in ("cpu", "wall")
        },
        **{
            f"speedup_{clock}": statistics.median(
                b / a for b, a in zip(seconds[before][clock], seconds[after][clock], strict=True)
            )
            for clock in ("cpu", "wall")
        },
    }


def library(rounds: int, samples: list[tuple[dict[str, Any], dict[str, Any]]]) -> list:
    """``rounds`` rounds, each showing 5 of the frames (described as a round shows them) with its goals."""
    rounds_out = []
    for index in range(rounds):
        shown = samples[index * HISTORY : (index + 1) * HISTORY]
        steps = [Step(str(o["mission"]), None, str(o["text"]), 0.0, None) for o, _ in shown]
        rounds_out.append((describe_steps(str(shown[0][0]["mission"]), steps), GOALS[index % len(GOALS)]))
    return rounds_out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    samples = frames(args.frames)
    commands = discrete_commands(ENV_ID)
    seconds: dict[str, dict[str, list[float]]] = {arm: {"cpu": [], "wall": []} for arm in ARMS}
    hits: dict[str, int] = {}
    for repetition in range(args.rounds):
        for arm, rounds in ARMS.items():
            embedder = SentenceEmbedder()
            rounds_library = library(rounds, samples)
            potential = NearestGoalsPotential(lambda mission, rl=rounds_library: rl, embedder, 0.4, commands)
            potential(*samples[0])  # the library's embeddings, outside the timing
            cpu, wall = time.process_time(), time.perf_counter()
            for obs, info in samples[1:]:
                potential(obs, info)
            seconds[arm]["cpu"].append((time.process_time() - cpu) / (len(samples) - 1))
            seconds[arm]["wall"].append((time.perf_counter() - wall) / (len(samples) - 1))
            hits[arm] = embedder.hits
            print(
                repetition, arm, {k: round(v[-1] * 1000, 1) for k, v in seconds[arm].items()}, "ms a frame", flush=True
            )
    result = {
        "env_id": ENV_ID,
        "frames": args.frames,
        "rounds": args.rounds,
        "torch_threads": 1,
        "embedder_cache_hits": hits,
        **timing_fields(seconds, "history_embedded", "history_skipped"),
    }
    print(write_result("perf_bk_goal", result).read_text())


if __name__ == "__main__":
    main()
