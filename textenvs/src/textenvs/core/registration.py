"""The registration table's record type and its registration with Gymnasium."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym


@dataclass(frozen=True)
class EnvEntry:
    """One registered id.

    ``entry_point`` is ``"module:Class"``; ``requires`` names the importable modules it needs and
    ``extra`` the pip extra that installs them (``pip install "textenvs[extra]"``).
    """

    id: str
    entry_point: str
    family: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    extra: str | None = None
    vector_entry_point: str | None = None
    summary: str = ""

    def missing_requirements(self) -> list[str]:
        """Modules this id needs that are not installed."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]


def load_attr(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class LazyEntryPoint:
    """Imports the env class on first use and checks kwargs against its signature.

    Unknown kwargs raise a TypeError naming the bad kwarg and every valid one (Gymnasium's own error
    names only the bad one). Missing optional dependencies raise an ImportError naming the pip extra.
    """

    def __init__(self, entry: EnvEntry, path: str):
        self.env_id = entry.id
        self.path = path
        self.requires = entry.requires
        self.extra = entry.extra

    def __call__(self, **kwargs: Any) -> Any:
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            packages = f'"textenvs[{self.extra}]"' if self.extra else " ".join(missing)
            hint = f"pip install {packages}"
            raise ImportError(f"{self.env_id} needs {', '.join(missing)}, which is not installed: {hint}")
        factory = load_attr(self.path)
        check_kwargs(self.env_id, factory, kwargs)
        return factory(**kwargs)

    def __repr__(self) -> str:
        return self.path


def accepted_kwargs(factory: Any) -> list[str] | None:
    """Keyword names ``factory`` accepts, or None when it takes ``**kwargs``."""
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def check_kwargs(env_id: str, factory: Any, kwargs: dict[str, Any]) -> None:
    valid = accepted_kwargs(factory)
    if valid is None:
        return
    unknown = [k for k in kwargs if k not in valid]
    if unknown:
        close = {k: difflib.get_close_matches(k, valid, n=1) for k in unknown}
        hints = "".join(f" (did you mean {c[0]!r}?)" for c in close.values() if c)
        raise TypeError(
            f"{env_id} got unknown keyword argument(s) {', '.join(map(repr, unknown))}{hints}; "
            f"valid keyword arguments: {', '.join(valid)}"
        )


def register_envs(entries: Iterable[EnvEntry]) -> None:
    """Register every entry with Gymnasium (idempotent).

    Without Gymnasium's passive env checker: in gymnasium 1.4 an env whose first ``reset`` raised (a bad
    option) fails on every later ``step`` inside that wrapper. The contract kit runs Gymnasium's full
    ``check_env`` on every id instead (``textenvs.testing``).
    """
    for entry in entries:
        if entry.id in gym.registry:
            continue
        gym.register(
            id=entry.id,
            entry_point=LazyEntryPoint(entry, entry.entry_point),
            vector_entry_point=LazyEntryPoint(entry, entry.vector_entry_point) if entry.vector_entry_point else None,
            kwargs=dict(entry.kwargs),
            disable_env_checker=True,
        )


def unknown_id_error(env_id: str, known: Iterable[str]) -> ValueError:
    """A ValueError for an unknown id that lists the closest registered ids."""
    known = list(known)
    close = difflib.get_close_matches(env_id, known, n=5, cutoff=0.6)
    hint = f" Closest ids: {', '.join(close)}." if close else ""
    return ValueError(f"Unknown environment id {env_id!r}.{hint} `textenvs list` shows every textenvs id.")
