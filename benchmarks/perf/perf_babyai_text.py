"""Throughput of captioned ``BabyAI-Text-GoToLocal-v0`` against raw minigrid ``BabyAI-GoToLocal-v0``.

Both run in this process with the same seeded stream of random actions (auto-reset at episode end);
the result, ``benchmarks/results/perf_babyai_text.json``, reports steps/s and their ratio
(target >= 0.85). Run: ``python benchmarks/perf/perf_babyai_text.py [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
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
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per env and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each is kept")
    args = parser.parse_args()

    indices = np.random.default_rng(0).integers(0, len(COMMANDS), 10_000).tolist()
    raw = gym.make("BabyAI-GoToLocal-v0")
    text = gym.make("BabyAI-Text-GoToLocal-v0")
    steppers = {
        "minigrid_raw": stepper(raw, indices, 0),
        "babyai_text": stepper(text, [COMMANDS[i] for i in indices], 0),
    }
    best = dict.fromkeys(steppers, 0.0)
    with contextlib.redirect_stdout(io.StringIO()):  # raw minigrid prints each rejected mission
        for _ in range(args.rounds):
            for name, step in steppers.items():
                best[name] = max(best[name], rate(step, min_seconds=args.seconds))
    result = {
        "env": "BabyAI-Text-GoToLocal-v0 (obs_mode=text, text actions)",
        "baseline": "minigrid BabyAI-GoToLocal-v0 (gym.make, discrete actions)",
        "steps_per_second": {name: round(value, 1) for name, value in best.items()},
        "ratio": round(best["babyai_text"] / best["minigrid_raw"], 3),
        "target_ratio": 0.85,
    }
    path = write_result("perf_babyai_text", result)
    print(f"{result['steps_per_second']} ratio {result['ratio']} -> {path}")


if __name__ == "__main__":
    main()
