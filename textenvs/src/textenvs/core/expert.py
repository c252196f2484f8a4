"""The expert (oracle policy) interface every family implements."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Expert(Protocol):
    """A policy with privileged access to its environment.

    Create it with ``env.unwrapped.expert()``; call ``reset`` after every ``env.reset`` and ``act`` before
    every ``env.step``. ``act`` returns an action in the env's current action space.
    """

    def reset(self, obs: Any, info: dict[str, Any]) -> None: ...

    def act(self, obs: Any, info: dict[str, Any]) -> Any: ...
