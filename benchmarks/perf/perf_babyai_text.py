"""Throughput of captioned ``BabyAI-Text-GoToLocal-v0`` against raw minigrid ``BabyAI-GoToLocal-v0``.

Both run in this process with the same seeded stream of random actions (auto-reset at episode end);
the result, ``benchmarks/results/perf_babyai_text.json``, reports the median steps/s of each and the
median of their per-round ratios (target >= 0.95). Run: ``python benchmarks/perf/perf_babyai_text.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
from collections.abc import Callable

import gymnasium as gym
import minigrid  # noqa: F401  (registers BabyAI-GoToLocal-v0)
import numpy as np
from common import rate, write_result

import textenvs  # noqa: F401  (registers BabyAI-Text-GoToLocal-v0)

COMMANDS = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle")


def stepper(env: gym.Env, actions: list, seed: int) -> Callable[[], None]:
    """One step per call through a fixed cycle of actions, resetting when an episode ends."""
    env.reset(seed=seed)
    state = {"t": 0}

    def step() -> None:
        action = actions[state["t"] % len(actions)]
        state["t"] += 1
        _obs, _reward, terminated, truncated, _info = env.step(action)
        if terminated or truncated:
            env.reset()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=0.2, help="measuring time per env and round")
    parser.add_argument("--rounds", type=int, default=60, help="rounds, each timing both envs back to back")
    args = parser.parse_args()

    indices = np.random.default_rng(0).integers(0, len(COMMANDS), 10_000).tolist()
    raw = stepper(gym.make("BabyAI-GoToLocal-v0"), indices, 0)
    text = stepper(gym.make("BabyAI-Text-GoToLocal-v0"), [COMMANDS[i] for i in indices], 0)
    raw_rates, text_rates = [], []
    with contextlib.redirect_stdout(io.StringIO()):  # raw minigrid prints each rejected mission
        for _ in range(args.rounds):
            raw_rates.append(rate(raw, min_seconds=args.seconds))
            text_rates.append(rate(text, min_seconds=args.seconds))
    # Paired rounds and medians keep the ratio steady when other processes share the machine.
    ratios = [t / r for t, r in zip(text_rates, raw_rates, strict=True)]
    result = {
        "env": "BabyAI-Text-GoToLocal-v0 (obs_mode=text, text actions)",
        "baseline": "minigrid BabyAI-GoToLocal-v0 (gym.make, discrete actions)",
        "steps_per_second": {
            "minigrid_raw": round(statistics.median(raw_rates), 1),
            "babyai_text": round(statistics.median(text_rates), 1),
        },
        "ratio": round(statistics.median(ratios), 3),
        "ratio_per_round": [round(r, 3) for r in ratios],
        "target_ratio": 0.95,
    }
    path = write_result("perf_babyai_text", result)
    print(f"{result['steps_per_second']} ratio {result['ratio']} -> {path}")


if __name__ == "__main__":
    main()
