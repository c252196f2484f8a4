"""A person at the terminal: shows the observation and the admissible commands, reads a command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class HumanAgent:
    """A read-eval-print loop: ``act`` prints the mission, the text and the commands, then reads a line.

    A number picks the command of that index; anything else is sent as typed (the env reports an invalid
    one). End of input (Ctrl-D) raises ``EOFError`` so that the caller can stop the episode.
    """

    uid = "human"

    def __init__(self, read: Callable[[str], str] | None = None, write: Callable[[str], None] | None = None):
        self.read = read or (lambda prompt: input(prompt))
        self.write = write or print

    @property
    def params(self) -> dict[str, Any]:
        return {}

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        mission = obs.get("mission", "") if isinstance(obs, dict) else ""
        if mission:
            self.write(f"Mission: {mission}")

    def act(self, obs: Any, info: dict[str, Any]) -> str:
        if isinstance(obs, dict) and "text" in obs:
            self.write(obs["text"])
        if info.get("feedback"):
            self.write(f"({info['feedback']})")
        commands = list(info.get("admissible_commands") or [])
        for index, command in enumerate(commands):
            self.write(f"  [{index}] {command}")
        line = self.read("> ").strip()
        if line.isdigit() and int(line) < len(commands):
            return commands[int(line)]
        return line

    def observe(self, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> None:
        if reward:
            self.write(f"reward {reward:+g}")
        if terminated or truncated:
            self.write(f"episode over: success={info.get('success')} metrics={info.get('episode_metrics', {})}")
