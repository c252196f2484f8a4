"""The trajectory file of one episode: what ``textagents bench run --trajectories`` writes and ``textenvs replay``
reads.

A trajectory is a JSON object::

    {"format": "textenvs-trajectory/1", "env_id": ..., "env_kwargs": {...}, "seed": 3,
     "agent": "expert", "kind": "expert",
     "steps": [{"observation": ..., "action": ..., "reward": 0.0, "feedback": "",
                "invalid_action": false, "success": false}, ...]}

Each step holds the text of the observation the action answered (a string, or the string entries of a dict
observation), the action, and what the env answered: reward, ``info["feedback"]``, ``info["invalid_action"]``
and ``info["success"]``. Runs recorded before the format had a header hold a bare list of steps without the two
flags; they still load (flags unknown, the env and seed given by the caller).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "textenvs-trajectory/1"
STEP_KEYS = ("observation", "action", "reward", "feedback", "invalid_action", "success")


def text_of(obs: Any) -> str | dict[str, str] | None:
    """The text of an observation: a string as is, the string entries of a dict, None when it has no text."""
    if isinstance(obs, Mapping):
        return {k: v for k, v in obs.items() if isinstance(v, str)}
    return obs if isinstance(obs, str) else None


@dataclass
class Step:
    """One step: the observation's text the action answered, the action, and the env's answer (None where a
    recording does not say)."""

    observation: str | dict[str, str] | None
    action: Any
    reward: float | None = None
    feedback: str | None = None
    invalid_action: bool | None = None
    success: bool | None = None

    @classmethod
    def from_json(cls, data: Any, where: str) -> Step:
        if not isinstance(data, Mapping) or "action" not in data:
            raise ValueError(f"{where}: a step must be an object with an 'action', got {str(data)[:200]!r}")
        unknown = sorted(set(data) - set(STEP_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown step key(s) {unknown}; valid: {', '.join(STEP_KEYS)}")
        return cls(**{k: data.get(k) for k in STEP_KEYS})


@dataclass
class Trajectory:
    """One recorded episode: the env (``env_id``, ``env_kwargs`` as given to ``gym.make``), the reset seed,
    who played (``agent``, ``kind``; None when unknown) and its steps."""

    env_id: str | None
    seed: int | None
    steps: list[Step]
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    agent: str | None = None
    kind: str | None = None

    @property
    def actions(self) -> list[Any]:
        return [s.action for s in self.steps]

    def to_json(self) -> dict[str, Any]:
        header = {k: v for k, v in asdict(self).items() if k != "steps"}
        return {"format": FORMAT, **header, "steps": [asdict(s) for s in self.steps]}


def parse_trajectory(data: Any, where: str = "trajectory") -> Trajectory:
    """A trajectory from its JSON value (``where`` names it in errors): the headed format or a bare list of
    steps (whose env and seed are then None)."""
    if isinstance(data, list):
        return Trajectory(None, None, [Step.from_json(s, f"{where} step {i}") for i, s in enumerate(data)])
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise ValueError(f"{where} is not a trajectory: format {found!r}, expected {FORMAT!r} or a list of steps")
    if not isinstance(data.get("steps"), list):
        raise ValueError(f"{where}: 'steps' must be a list")
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError(f"{where}: seed must be an integer or null, got {seed!r}")
    kwargs = data.get("env_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"{where}: env_kwargs must be an object, got {kwargs!r}")
    return Trajectory(
        env_id=data.get("env_id"),
        seed=seed,
        steps=[Step.from_json(s, f"{where} step {i}") for i, s in enumerate(data["steps"])],
        env_kwargs=dict(kwargs),
        agent=data.get("agent"),
        kind=data.get("kind"),
    )


def load_trajectory(path: str | Path) -> Trajectory:
    """Read a trajectory file (``ValueError`` naming the file when it is not one)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not JSON: {error}") from error
    return parse_trajectory(data, str(path))
