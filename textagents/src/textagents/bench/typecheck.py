"""Checking YAML values against Python type hints, so that a suite's bad kwarg fails before any episode runs."""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from typing import Any


def describe(hint: Any) -> str:
    """A short readable name of a type hint (``int``, ``str | None``, ``one of 'a', 'b'``)."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(describe(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "None"
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(describe(a) for a in typing.get_args(hint))}]"
    return getattr(hint, "__name__", str(hint))


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` (parsed from YAML) fits ``hint``; hints this cannot judge accept anything.

    YAML has no tuples, so a list fits ``tuple[...]`` and ``Sequence[...]``; an int fits ``float``; a bool
    fits neither ``int`` nor ``float``.
    """
    if hint is Any or hint is inspect.Parameter.empty:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, a) for a in args)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (bool, str):
        return isinstance(value, hint)
    if origin in (tuple, list, collections.abc.Sequence):
        if not isinstance(value, list | tuple):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(matches(v, a) for v, a in zip(value, args, strict=True))
        item = args[0] if args else Any
        return all(matches(v, item) for v in value)
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return False
        key, item = args if args else (Any, Any)
        return all(matches(k, key) and matches(v, item) for k, v in value.items())
    if isinstance(hint, type) and hint.__module__ == "builtins":
        return isinstance(value, hint)
    return True


def parameter_hints(factory: Any) -> dict[str, Any]:
    """Type hints of ``factory``'s keyword parameters (a class: of its ``__init__``); {} when unresolvable."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # hints naming optional modules that are not imported: judge nothing
        return {}
    hints.pop("return", None)
    return hints
