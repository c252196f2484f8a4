"""Observation and action spaces shared by every family."""

from __future__ import annotations

import string

import numpy as np
from gymnasium import spaces

#: Characters allowed in every text observation and text action: Python's ``string.printable``.
PRINTABLE = string.printable

OBS_MODES = ("text", "pixels", "text+pixels")
ACTION_MODES = ("text", "discrete")


def text_space(max_length: int) -> spaces.Text:
    """A printable ``Text`` space of at most ``max_length`` characters (empty allowed)."""
    return spaces.Text(max_length=max_length, min_length=0, charset=PRINTABLE)


def image_space(height: int, width: int) -> spaces.Box:
    """An RGB ``uint8`` image space of shape ``(height, width, 3)``."""
    return spaces.Box(0, 255, (height, width, 3), np.uint8)


def check_choice(name: str, value: object, valid: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``valid``, else raise a ValueError naming both."""
    if value not in valid:
        raise ValueError(f"{name}={value!r} is not valid; choose one of {', '.join(map(repr, valid))}")
    return value  # type: ignore[return-value]


_PRINTABLE_BYTES = PRINTABLE.encode("ascii")


def is_printable(text: str) -> bool:
    """Whether every character of ``text`` is in ``PRINTABLE`` (a C-speed check: ~1 ns a character)."""
    return text.isascii() and not text.encode("ascii").translate(None, _PRINTABLE_BYTES)


def check_text_fits(text: str, space: spaces.Text, what: str) -> str:
    """Refuse text that a printable ``text_space`` cannot hold instead of truncating it silently."""
    if len(text) > space.max_length:
        raise ValueError(
            f"{what} is {len(text)} characters long but its space holds at most {space.max_length}; "
            "this is a bug in the environment's text size, please report it"
        )
    if not is_printable(text):
        bad = sorted(set(text) - set(PRINTABLE))
        raise ValueError(f"{what} contains characters outside the printable charset: {bad!r}")
    return text
