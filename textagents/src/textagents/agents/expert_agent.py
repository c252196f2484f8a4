"""The family's expert (oracle policy) behind the agent protocol."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class ExpertAgent:
    """Wraps ``env.unwrapped.expert()``; a fresh expert is created at every ``reset``."""

    uid = "expert"

    def __init__(self, env: gym.Env):
        self.env = env
        self.expert: Any = None

    @property
    def params(self) -> dict[str, Any]:
        return {"env": self.env.spec.id if self.env.spec is not None else type(self.env.unwrapped).__name__}

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.expert = self.env.unwrapped.expert()
        self.expert.reset(obs, info)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self.expert is None:
            raise RuntimeError("ExpertAgent.act called before reset(obs, info)")
        return self.expert.act(obs, info)
