"""How large the shaping term is against the env's reward ×10 under the ``original`` and ``markovian`` forms,
on one scripted stream: a uniformly random policy (seeded) on a BK level of BabyAI-Text, 8 envs × 128 steps a
rollout, Φ = the nearest-object potential of ``reference_potentials/babyai.py.txt`` (−cells to the nearest
object seen / 10; rewritten here as a plain function). Both forms see the same episodes, actions and Φ.

Writes ``benchmarks/methods/bk/results/shaping_scale.json``. Run: ``python shaping_scale.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textagents.bench.store import write_json_atomic
from textagents.methods.bk.shaping import LaggedShaping, PotentialShaping, PreActionPotential

OUT = Path(__file__).resolve().parent / "results" / "shaping_scale.json"
LEVEL = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
ENVS, STEPS, ROLLOUTS, GAMMA, SCALE = 8, 128, 20, 0.99, 10.0
FAR = 10.0
_STEPS = re.compile(r"(\d+) steps? (left|right|forward)")


def nearest_object(obs: Any, info: dict[str, Any]) -> float:
    nearest = FAR
    for line in str(obs["text"]).lower().split("\n"):
        if line.startswith("you see") and "wall" not in line:
            nearest = min(nearest, float(sum(int(count) for count, _ in _STEPS.findall(line))))
    return -nearest / FAR


def play(form: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The shaping term and the scaled env reward of every step, [ROLLOUTS * STEPS, ENVS]."""
    rng = np.random.default_rng(seed)
    envs: list[gym.Env] = []
    for index in range(ENVS):
        env = gym.make(LEVEL, action_mode="discrete")
        if form == "original":
            env = PreActionPotential(env, nearest_object, reward_scale=SCALE)
        else:
            env = PotentialShaping(env, nearest_object, gamma=GAMMA, reward_scale=SCALE, form=form)
        env.reset(seed=seed + index)
        envs.append(env)
    lagged = LaggedShaping(ENVS, GAMMA)
    terms, rewards = [], []
    for _ in range(ROLLOUTS):
        for _ in range(STEPS):
            actions = rng.integers(envs[0].action_space.n, size=ENVS)
            resets = rng.integers(1 << 30, size=ENVS)
            row_terms, row_rewards = [], []
            for env, action, reset in zip(envs, actions, resets, strict=True):
                _, _, terminated, truncated, info = env.step(int(action))
                row_rewards.append(SCALE * info["env_reward"])
                if form == "original":
                    row_terms.append(info["pre_action_potential"])
                else:
                    row_terms.append(info["shaping"])
                if terminated or truncated:
                    env.reset(seed=int(reset))
            rewards.append(row_rewards)
            if form == "original":
                lagged.record(np.array(row_terms))
            else:
                terms.append(row_terms)
        if form == "original":
            terms.extend(lagged.finish(STEPS).tolist())
    return np.array(terms), np.array(rewards)


def summary(terms: np.ndarray, rewards: np.ndarray) -> dict[str, float]:
    """|shaping| over all steps and over the second half (after the normalisers' start), against the mean
    scaled reward of a success."""
    paid = rewards[rewards > 0]
    settled = np.abs(terms[len(terms) // 2 :])
    return {
        "mean_abs_shaping": float(np.abs(terms).mean()),
        "median_abs_shaping": float(np.median(np.abs(terms))),
        "mean_abs_shaping_second_half": float(settled.mean()),
        "max_abs_shaping_second_half": float(settled.max()),
        "successes": int(paid.size),
        "mean_scaled_reward_of_a_success": float(paid.mean()),
        "second_half_mean_abs_shaping_over_scaled_success_reward": float(settled.mean() / paid.mean()),
    }


def main() -> None:
    result: dict[str, Any] = {"level": LEVEL, "envs": ENVS, "steps": STEPS, "rollouts": ROLLOUTS}
    for form in ("original", "markovian"):
        result[form] = summary(*play(form))
    for key in ("median_abs_shaping", "mean_abs_shaping_second_half"):
        result[f"markovian_over_original_{key}"] = result["markovian"][key] / result["original"][key]
    write_json_atomic(OUT, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
