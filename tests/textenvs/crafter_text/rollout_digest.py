"""A 2,000-step Crafter-Text rollout with a fixed action sequence, hashed step by step.

``python -m tests.textenvs.crafter_text.rollout_digest OBS_MODE`` prints the digest, so tests can compare
processes started with different ``PYTHONHASHSEED`` values.
"""

from __future__ import annotations

import hashlib
import json
import sys

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)

STEPS = 2000
SEED = 7


def rollout_digest(obs_mode: str = "text", steps: int = STEPS, seed: int = SEED) -> str:
    """sha256 over every step's semantic map, inventory, achievements and player position."""
    env = gym.make("Crafter-Text-v0", obs_mode=obs_mode, action_mode="discrete")
    game = env.unwrapped.game
    actions = np.random.default_rng(seed).integers(0, env.action_space.n, steps)
    digest = hashlib.sha256()
    env.reset(seed=seed)
    for action in actions:
        _obs, reward, terminated, truncated, info = env.step(int(action))
        digest.update(np.ascontiguousarray(game.semantic()).tobytes())
        record = [info["inventory"], info["achievements"], info["player_pos"], reward, terminated, truncated]
        digest.update(json.dumps(record, sort_keys=True).encode())
        if terminated or truncated:
            env.reset()
    env.close()
    return digest.hexdigest()


if __name__ == "__main__":
    print(rollout_digest(sys.argv[1] if len(sys.argv) > 1 else "text"))
