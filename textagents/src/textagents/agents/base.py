"""The agent protocol: what every textagents agent implements, and the result-file identity of an agent."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Agent(Protocol):
    """A policy over a textenvs environment.

    Call ``reset`` after every ``env.reset`` and ``act`` before every ``env.step``; ``observe`` (optional)
    receives the outcome of each step. ``uid`` names the agent in result files and ``params`` holds what
    is needed to reproduce it (model, temperature, ...), as plain JSON-serializable data.
    """

    uid: str

    @property
    def params(self) -> dict[str, Any]: ...

    def reset(self, obs: Any, info: dict[str, Any]) -> None: ...

    def act(self, obs: Any, info: dict[str, Any]) -> Any: ...


def admissible_commands(info: dict[str, Any]) -> list[str]:
    """The admissible commands of ``info``; an error naming the keys present when there are none."""
    commands = info.get("admissible_commands")
    if not commands:
        raise ValueError(
            f"this agent needs info['admissible_commands'] (a non-empty list); got {commands!r} "
            f"with info keys {sorted(info)}"
        )
    return list(commands)
