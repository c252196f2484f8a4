"""A person at the terminal: shows the observation and the admissible commands, reads a command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

QUIT_WORDS = ("quit", "exit")
HELP_WORDS = ("help", "?")
HELP = "Type a command's [number] or the command itself; 'help' shows this, 'quit' (or Ctrl-D) stops."


class HumanAgent:
    """A read-eval-print loop: ``act`` prints the mission, the text and the commands, then reads a line.

    A number picks the command of that index; ``help`` says what can be typed; anything else is sent as
    typed (the env reports an invalid one). ``quit``, ``exit`` and end of input (Ctrl-D) raise ``EOFError``
    so that the caller can stop the episode.
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
        while (line := self.read("> ").strip()).lower() in HELP_WORDS:
            self.write(HELP)
        if line.lower() in QUIT_WORDS:
            raise EOFError(line)
        if line.isdigit() and int(line) < len(commands):
            return commands[int(line)]
        return line

    def observe(self, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> None:
        if reward:
            self.write(f"reward {reward:+g}")
        if terminated or truncated:
            self.write(f"episode over: success={info.get('success')} metrics={info.get('episode_metrics', {})}")
