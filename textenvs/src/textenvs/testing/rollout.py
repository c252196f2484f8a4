"""Seeded rollouts with a mix of valid and garbage actions, and their canonical digest.

``main(["--seed", "0", "--steps", "100", ID, ...])`` prints a JSON object
``{id: sha256}``; the contract kit runs it in two processes with different ``PYTHONHASHSEED`` values.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

#: Strings no family accepts as a command (plus whatever the action space samples).
GARBAGE_COMMANDS = (
    "",
    "   ",
    "fly to the moon",
    "PICK UP PICK UP",
    "\x0b\t\n",
    "go",
    "0",
    "}{][",
    "drop it!",
)


def canonical(value: Any) -> Any:
    """A JSON-serializable form of an observation/info value; arrays by dtype, shape and hash."""
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return {"dtype": str(data.dtype), "shape": list(data.shape), "sha256": _sha(data.tobytes())}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise TypeError(f"{type(value).__name__} {value!r} is not plain data, as observations and info must be")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def choose_action(env: gym.Env, rng: np.random.Generator, info: dict[str, Any]) -> Any:
    """Mostly an admissible command, sometimes a sample of the action space, sometimes garbage."""
    space = env.action_space
    admissible = info.get("admissible_commands") or []
    roll = rng.random()
    if isinstance(space, gym.spaces.Text):
        if admissible and roll < 0.75:
            return admissible[rng.integers(len(admissible))]
        if roll < 0.9:
            return GARBAGE_COMMANDS[rng.integers(len(GARBAGE_COMMANDS))]
        return space.sample()
    if isinstance(space, gym.spaces.Discrete) and roll > 0.95:
        return int(space.start + space.n + rng.integers(3))  # out of range: must be a no-op
    return space.sample()


def rollout_records(env_id: str, seed: int, steps: int, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Canonical records of ``steps`` steps from ``reset(seed=seed)``, resetting (unseeded) at episode end.

    The image is left out unless ``obs_mode`` asks for pixels; the agent's choices depend only on ``seed``
    and the admissible commands, so two runs can be compared record by record.
    """
    env = gym.make(env_id, **kwargs)
    env.action_space.seed(seed)
    rng = np.random.default_rng(seed)
    try:
        obs, info = env.reset(seed=seed)
        yield {"reset": True, "obs": canonical(obs), "info": canonical(info)}
        for _ in range(steps):
            action = choose_action(env, rng, info)
            obs, reward, terminated, truncated, info = env.step(action)
            yield {
                "action": canonical(action),
                "obs": canonical(obs),
                "reward": float(reward),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
                "info": canonical(info),
            }
            if terminated or truncated:
                obs, info = env.reset()
                yield {"reset": True, "obs": canonical(obs), "info": canonical(info)}
    finally:
        env.close()


def rollout_digest(env_id: str, seed: int = 0, steps: int = 100, **kwargs: Any) -> str:
    """sha256 of every record of a seeded rollout."""
    digest = hashlib.sha256()
    for record in rollout_records(env_id, seed, steps, **kwargs):
        digest.update(json.dumps(record, sort_keys=True).encode())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("ids", nargs="+")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--kwargs", default="{}", help="JSON object {id: {kwarg: value}}")
    args = parser.parse_args(argv)
    import textenvs  # noqa: F401  (registers the ids)

    per_id = json.loads(args.kwargs)
    print(json.dumps({i: rollout_digest(i, args.seed, args.steps, **per_id.get(i, {})) for i in args.ids}))


if __name__ == "__main__":
    main()
