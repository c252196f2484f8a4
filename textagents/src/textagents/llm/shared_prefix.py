"""The leading tokens that the contexts of a causal model's forward pass share (GLAM's prompts all start
with the same ~30 tokens), computed once: their key values feed every context's own tokens.

Without gradients the key values are also kept across calls (``KeptPrefix``) while the weights they were
computed under stay as they were: read from the parameters' in-place version counters, as the score cache
does (``score_cache.weights_state``), with the autocast setting they were computed in. With gradients they
are computed in every forward pass (the pass's graph runs through them).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from textagents.llm.score_cache import weights_state


def shared_prefix_length(sequences: Sequence[Sequence[int]]) -> int:
    """How many leading tokens all of two or more ``sequences`` share, short of the shortest one's last token
    (each context's last token starts its candidates and is computed with them)."""
    if len(sequences) < 2:
        return 0
    first, limit = sequences[0], min(map(len, sequences)) - 1
    length = 0
    while length < limit and all(s[length] == first[length] for s in sequences):
        length += 1
    return length


def computation_state(model: nn.Module, device: torch.device) -> tuple[Any, ...] | None:
    """What the model's key values depend on besides the tokens: its weights' versions and the autocast
    setting; None where they must not be kept (gradients on, or a module in training mode)."""
    if torch.is_grad_enabled():
        return None
    weights = weights_state([model])
    if weights is None:
        return None
    autocast = torch.is_autocast_enabled(device.type), torch.get_autocast_dtype(device.type)
    return weights, autocast


class KeptPrefix:
    """One prefix's key values (batch of one), kept under the computation state they were computed in."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.past: Any = None
        self.state: tuple[Any, ...] | None = None

    def clear(self) -> None:
        self.ids, self.past, self.state = [], None, None

    def length_for(self, sequences: Sequence[Sequence[int]], state: tuple[Any, ...] | None) -> int:
        """The kept prefix's length if it was computed under ``state`` and starts every sequence, leaving
        each a token of its own; else 0."""
        if state is None or state != self.state:
            return 0
        length = len(self.ids)
        fits = all(len(s) > length and list(s[:length]) == self.ids for s in sequences)
        return length if fits else 0

    def copy_for(self, rows: int) -> Any:
        """The kept key values repeated for ``rows`` contexts (a new cache: the forward pass extends it)."""
        past = copy.deepcopy(self.past)
        past.batch_repeat_interleave(rows)
        return past

    def keep(self, ids: Sequence[int], past: Any, state: tuple[Any, ...] | None) -> None:
        if state is not None:
            self.ids, self.past, self.state = list(ids), copy.deepcopy(past), state
