"""Turning text actions into commands: normalization, lookup and feedback for invalid input."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence

_SPACES = re.compile(f"[{re.escape(string.whitespace)}]+")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def normalize_command(text: str) -> str:
    """Lower-case, trim, collapse runs of whitespace and drop trailing sentence punctuation.

    Only ASCII letters and whitespace are folded: a look-alike (a Cyrillic "о", the Kelvin sign "K" that
    ``str.lower`` turns into "k", a no-break space) stays as it is, so it names no command.
    """
    folded = _SPACES.sub(" ", text.translate(_ASCII_LOWER).strip(string.whitespace))
    return folded.rstrip(".!").strip(string.whitespace)


class CommandVocabulary:
    """A fixed list of commands, matched case- and whitespace-insensitively, with optional aliases.

    ``commands`` are the canonical names (the order defines ``action_mode="discrete"`` indices);
    ``aliases`` maps other spellings (e.g. a backend's snake_case names) to canonical commands.
    """

    def __init__(self, commands: Sequence[str], aliases: Mapping[str, str] | None = None):
        if len(set(commands)) != len(commands):
            raise ValueError(f"duplicate commands in {list(commands)}")
        self.commands: tuple[str, ...] = tuple(commands)
        self._lookup = {normalize_command(c): c for c in self.commands}
        for alias, command in (aliases or {}).items():
            if command not in self.commands:
                raise ValueError(f"alias {alias!r} points to unknown command {command!r}")
            self._lookup.setdefault(normalize_command(alias), command)

    def __len__(self) -> int:
        return len(self.commands)

    def __iter__(self):
        return iter(self.commands)

    def parse(self, text: str) -> str | None:
        """The canonical command that ``text`` names, or None."""
        command = self._lookup.get(text)  # the common case: already a canonical, normalized command
        return command if command is not None else self._lookup.get(normalize_command(text))

    def index(self, command: str) -> int:
        return self.commands.index(command)


def invalid_command_feedback(action: object, valid: Iterable[str]) -> str:
    """The feedback sentence for an action that names no valid command."""
    shown = repr(action) if not isinstance(action, str) else repr(action[:80])
    return f"{shown} is not a valid command. Valid commands: {', '.join(valid)}."
