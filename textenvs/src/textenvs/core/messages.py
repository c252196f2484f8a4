"""Values a user gave, put into error messages: shortened, so that a huge value still makes a one-line message."""

from __future__ import annotations

import reprlib
from typing import Any

#: The most characters of a value an error message shows.
MAX_REPR_CHARS = 80


def _shortener() -> reprlib.Repr:
    shortener = reprlib.Repr()  # Python 3.10's takes no keyword arguments
    shortener.maxlevel = 3  # with at most 6 items a level (reprlib's default), a few hundred values are read
    shortener.maxstring = shortener.maxother = MAX_REPR_CHARS
    return shortener


_SHORTENER = _shortener()


def short_repr(value: Any) -> str:
    """``repr(value)`` in at most ``MAX_REPR_CHARS`` characters (``...`` marks what was left out), read from the
    first items of each collection only, however large or self-referencing the value is."""
    text = _SHORTENER.repr(value)
    return text if len(text) <= MAX_REPR_CHARS else text[: MAX_REPR_CHARS - 3] + "..."


def type_and_repr(value: Any) -> str:
    """``list [1, 2, 3, 4, 5, 6, ...]``: what a wrong value is, for ``expected ..., got <this>``."""
    return f"{type(value).__name__} {short_repr(value)}"
