"""Playing recorded actions again from the recorded seed: envs are deterministic (same seed and actions, same
episode), so a text-only recording gives back its frames, and a recording that does not replay is caught."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from textenvs.viewer.trajectory import Step, text_of


class ReplayMismatchError(ValueError):
    """The recorded actions, played from the recorded seed, do not give the recorded episode."""


@dataclass
class Replay:
    """The episode played again: its steps (the recorded actions with what the env answered), the observation
    after the last step, whether the env ended the episode there, and the kept frames by state index (0: after
    ``reset``, ``i``: after step ``i``)."""

    steps: list[Step]
    final_observation: str | dict[str, str] | None
    ended: bool
    frames: dict[int, np.ndarray] = field(default_factory=dict)


def frame_indices(states: int, max_frames: int | None) -> list[int]:
    """The states that get a frame: all ``states`` of them, or ``max_frames`` spread evenly from the first
    to the last (``max_frames`` 0: none)."""
    if max_frames is not None and max_frames < 0:
        raise ValueError(f"max_frames must be >= 0 or None (no cap), got {max_frames}")
    if max_frames is None or states <= max_frames:
        return list(range(states))
    if max_frames == 1:
        return [0]
    return sorted({round(i * (states - 1) / (max_frames - 1)) for i in range(max_frames)})


def _env_action(space: gym.Space, action: Any, step: int) -> Any:
    """The recorded (JSON) action as the env takes it: continuous actions back to arrays."""
    if not isinstance(space, gym.spaces.Box):
        return action  # commands and indices as recorded: the env answers a bad one with an invalid no-op
    try:
        array = np.asarray(action, dtype=space.dtype)
    except (TypeError, ValueError):
        array = None
    if array is None or array.shape != space.shape:
        hint = (
            " (text commands for a continuous env come from a wrapper around it, e.g. textagents' commands for "
            "fastsim: replay through that wrapper, e.g. with `textagents bench view`)"
            if isinstance(action, str)
            else ""
        )
        raise ValueError(f"step {step}'s action {action!r} is not an action of the env's {space}{hint}")
    return array


def _differs(recorded: Any, replayed: Any) -> bool:
    if isinstance(recorded, float) or isinstance(replayed, float):
        return not math.isclose(recorded, replayed, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        return any(replayed.get(k) != v for k, v in recorded.items())
    return recorded != replayed


def _check(step: int, recorded: Step, replayed: Step) -> None:
    for name in ("observation", "reward", "feedback", "invalid_action", "success"):
        want, got = getattr(recorded, name), getattr(replayed, name)
        if want is not None and _differs(want, got):
            raise ReplayMismatchError(
                f"the recorded actions do not reproduce the recording: at step {step} the {name} was "
                f"{str(want)[:200]!r} when recorded and is {str(got)[:200]!r} now (another env version, other env "
                "kwargs or another seed than the recording's?)"
            )


def replay(
    env: gym.Env,
    seed: int | None,
    actions: Sequence[Any],
    *,
    recorded: Sequence[Step] | None = None,
    max_frames: int | None = None,
) -> Replay:
    """Reset ``env`` with ``seed`` and play ``actions``, keeping frames of at most ``max_frames`` states when
    ``env`` renders ``rgb_array`` images. With ``recorded`` steps, every observation, reward and flag they hold
    must come back: ``ReplayMismatchError`` names the first step that differs, or the early end."""
    if recorded is not None and len(recorded) != len(actions):
        raise ValueError(f"{len(actions)} actions but {len(recorded)} recorded steps")
    keep = set(frame_indices(len(actions) + 1, max_frames)) if env.render_mode == "rgb_array" else set()
    frames: dict[int, np.ndarray] = {}
    obs, info = env.reset(seed=seed)
    if 0 in keep:
        frames[0] = np.asarray(env.render())
    steps: list[Step] = []
    ended = False
    for i, action in enumerate(actions):
        if ended:
            raise ReplayMismatchError(
                f"the recorded actions do not reproduce the recording: the episode ended after step {i - 1} "
                f"but {len(actions)} actions were recorded"
            )
        before = text_of(obs)
        obs, reward, terminated, truncated, info = env.step(_env_action(env.action_space, action, i))
        steps.append(
            Step(
                observation=before,
                action=action,
                reward=float(reward),
                feedback=str(info.get("feedback", "")),
                invalid_action=bool(info.get("invalid_action", False)),
                success=bool(info.get("success", False)),
            )
        )
        if recorded is not None:
            _check(i, recorded[i], steps[-1])
        ended = terminated or truncated
        if i + 1 in keep:
            frames[i + 1] = np.asarray(env.render())
    return Replay(steps=steps, final_observation=text_of(obs), ended=ended, frames=frames)
