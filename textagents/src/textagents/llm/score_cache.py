"""An in-memory cache of module-function outputs per (functions, context, candidates) for an LLM whose weights
are being trained (lamorel-style ``Caller``): valid only while the weights it was filled under stay frozen.

An RL loop scores the same (prompt, commands) pairs again and again between two optimizer steps (every
evaluation episode starts from a few prompts; a rollout revisits states), and a deterministic model gives
them the same numbers, so each pair is computed once per weights state. The state is read from the
parameters themselves: every in-place write to a parameter (an optimizer step, ``load_state_dict``, ``copy_``)
bumps its version counter, and any change empties the cache. A module in training mode (dropout) makes the
outputs random: then nothing is cached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torch import nn

Row = dict[str, list[float]]  # one context's outputs: function name -> one value per candidate
Compute = Callable[[list[str], list[list[str]]], list[Row]]


def weights_state(modules: Sequence[nn.Module]) -> tuple[int, ...] | None:
    """The parameters' in-place version counters (``Tensor._version``, what autograd uses to detect
    modified tensors), or None when a module is in training mode (its outputs may be random)."""
    if any(m.training for module in modules for m in module.modules()):
        return None
    return tuple(p._version for module in modules for p in module.parameters())


class ScoreCache:
    """Rows of outputs keyed by (function names, context, candidates) under one weights state; the oldest
    entries go beyond ``max_entries``. ``hits`` and ``misses`` count rows (a repeat within a call is a hit)."""

    def __init__(self, max_entries: int = 100_000):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self.entries: dict[tuple[tuple[str, ...], str, tuple[str, ...]], Row] = {}
        self.state: tuple[int, ...] | None = None
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        self.entries.clear()
        self.state = None

    def rows(
        self,
        functions: Sequence[str],
        contexts: Sequence[str],
        candidates: Sequence[Sequence[str]],
        state: tuple[int, ...],
        compute: Compute,
    ) -> list[Row]:
        """Each context's row, computing (once each) only the pairs not cached under ``state``."""
        if state != self.state:
            self.clear()
            self.state = state
        names = tuple(functions)
        keys = [(names, context, tuple(options)) for context, options in zip(contexts, candidates, strict=True)]
        missing = list(dict.fromkeys(key for key in keys if key not in self.entries))
        if missing:
            computed = compute([key[1] for key in missing], [list(key[2]) for key in missing])
            self.entries.update(zip(missing, computed, strict=True))
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        rows = [{name: list(values) for name, values in self.entries[key].items()} for key in keys]
        for stale in list(self.entries)[: max(0, len(self.entries) - self.max_entries)]:
            del self.entries[stale]
        return rows
