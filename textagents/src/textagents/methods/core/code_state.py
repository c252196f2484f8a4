"""The code a run was made at, from its ``config.json`` (``git`` at the start, and each resume's): runs are
pooled in one comparison only when they were all made at one known code state. Outside a git checkout (an
installed wheel) the installed versions of textagents and textenvs stand for the code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textagents.methods.core.config import ConfigError

UNKNOWN = "unknown"


class MixedCodeError(ConfigError):
    """Runs of one comparison made at different (or unknown) code states."""


#: The packages whose installed versions identify the code outside a checkout.
INSTALLED_PACKAGES = ("textagents", "textenvs")


@dataclass(frozen=True)
class CodeState:
    commit: str | None
    dirty: bool
    diff_sha256: str | None
    installed: str | None = None

    @classmethod
    def of(cls, git: Mapping[str, Any] | None, versions: Mapping[str, Any] | None = None) -> CodeState:
        """The state ``project_commit()`` recorded; outside a checkout (``git`` None), the installed versions of
        textagents and textenvs from ``versions`` (``package_versions()``); unknown when neither was recorded."""
        if git and git.get("commit"):
            return cls(git["commit"], bool(git.get("dirty")), git.get("diff_sha256"))
        if versions and all(versions.get(name) for name in INSTALLED_PACKAGES):
            return cls(None, False, None, ", ".join(f"{name} {versions[name]}" for name in INSTALLED_PACKAGES))
        return cls(None, False, None)

    @property
    def known(self) -> bool:
        """A commit, and for a dirty checkout the hash of its diff (without it two dirty runs may differ); or,
        outside a checkout, the installed versions."""
        if self.commit is None:
            return self.installed is not None
        return not self.dirty or self.diff_sha256 is not None

    def __str__(self) -> str:
        if self.commit is None:
            return f"installed {self.installed}" if self.installed else UNKNOWN
        if not self.dirty:
            return f"{self.commit[:10]} clean"
        return f"{self.commit[:10]} dirty, diff {self.diff_sha256[:12] if self.diff_sha256 else UNKNOWN}"


def run_code_states(recorded: Mapping[str, Any] | None) -> tuple[CodeState, ...]:
    """The distinct code states a run was trained at, in order: where it started, then each resume's."""
    if recorded is None:
        return (CodeState.of(None),)
    sessions = [recorded, *recorded.get("resumed", [])]
    return tuple(dict.fromkeys(CodeState.of(session.get("git"), session.get("versions")) for session in sessions))


def describe(states: tuple[CodeState, ...]) -> str:
    return ", resumed at ".join(map(str, states))


def pooled_state(runs: Mapping[str, tuple[CodeState, ...]]) -> CodeState | None:
    """The one known code state every run was made at, or None when they differ (or one is unknown)."""
    distinct = set(runs.values())
    if len(distinct) == 1:
        (states,) = distinct
        if len(states) == 1 and states[0].known:
            return states[0]
    return None


def check_pooled(runs: Mapping[str, tuple[CodeState, ...]], allow_mixed: bool) -> CodeState | None:
    """``pooled_state``; a ``MixedCodeError`` naming each state and its runs when there is none, unless
    ``allow_mixed``."""
    state = pooled_state(runs)
    if state is None and not allow_mixed and runs:
        by_state: dict[str, list[str]] = {}
        for name, states in runs.items():
            by_state.setdefault(describe(states), []).append(name)
        listed = "; ".join(f"{state}: {', '.join(names)}" for state, names in by_state.items())
        raise MixedCodeError(
            f"runs made at different or unknown code states ({listed}): run them again at one commit, or pass "
            "--allow-mixed-code to pool them (the report then lists each run's code state)"
        )
    return state
