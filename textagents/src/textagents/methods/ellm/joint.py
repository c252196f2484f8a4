"""The original's goal-conditioned text input: one sentence-encoder pass over the caption's and the goal
string's token ids together (``goal_encoding: joint``).

At e068cf4 each text is tokenized on its own (``[CLS] ... [SEP]``) and zero-padded (cut) to
``max_seq_tokens`` (200) ids (``text_env.py:180-206``, ``goal_wrapper.py:106-109``); the DQN joins the two
padded rows (``dqn.py:124``) and the frozen encoder runs once over them with the zeros masked, mean-pools,
L2-normalises (``encoder.py:95-161``) and a trained ``Linear(384, hidden)`` follows (in the network). The
padding between the two stays in the input, so the goal's tokens sit at positions 200 and up.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from textagents.methods.ellm.goals import Caption
from textagents.methods.ellm.reward import goal_string

if TYPE_CHECKING:
    from textagents.sb3.features import SentenceEmbedder

#: ``config.yaml``'s ``max_seq_tokens``: the length of each padded token row.
MAX_SEQ_TOKENS = 200

Tokenize = Callable[[str], list[int]]


def state_text(caption: Caption) -> str:
    """The original's text observation (``text_env.py:135-139, 212-217``): the lower-cased view sentence,
    then each of inventory and status followed by a space unless it is ``"."`` or mentions ``null``."""
    parts = (caption.inventory.lower(), caption.status.lower())
    return caption.observation.lower() + " " + "".join(p + " " for p in parts if p != "." and "null" not in p)


def padded(ids: Sequence[int], length: int = MAX_SEQ_TOKENS) -> list[int]:
    """``pad_sbert`` (``text_env.py:200-206``): cut to ``length``, then zeros."""
    ids = list(ids[:length])
    return ids + [0] * (length - len(ids))


def joined_ids(tokenize: Tokenize, caption: Caption, goals: Sequence[str], length: int = MAX_SEQ_TOKENS) -> list[int]:
    """The encoder's input row: the caption's padded ids, then the goal string's (``dqn.py:124``)."""
    return padded(tokenize(state_text(caption)), length) + padded(tokenize(goal_string(goals)), length)


class JointEmbedder:
    """The L2-normalised mean-pooled embedding of ``joined_ids``, with the zeros masked, by the
    ``SentenceEmbedder``'s transformer; an LRU cache keyed by the input's non-zero ids, as the original's."""

    def __init__(self, embedder: SentenceEmbedder, length: int = MAX_SEQ_TOKENS, cache_size: int = 100_000):
        self.tokenizer = embedder.model.tokenizer
        self.transformer = embedder.model[0].auto_model
        self.dim, self.length, self.cache_size = embedder.dim, length, cache_size
        self.cache: OrderedDict[tuple[int, ...], np.ndarray] = OrderedDict()

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text)["input_ids"])

    def __call__(self, caption: Caption, goals: Sequence[str]) -> np.ndarray:
        ids = joined_ids(self.tokenize, caption, goals, self.length)
        key = tuple(i for i in ids if i != 0)
        if key not in self.cache:
            self.cache[key] = self.embed(ids)
            if len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        self.cache.move_to_end(key)
        return self.cache[key]

    def embed(self, ids: list[int]) -> np.ndarray:
        """``SbertEncoder.embed`` and ``forward``'s normalisation (``encoder.py:154-161, 145``); the trailing
        zeros are dropped (masked, they change nothing)."""
        last = max(i for i, token in enumerate(ids) if token != 0)
        device = next(self.transformer.parameters()).device
        input_ids = torch.tensor([ids[: last + 1]], device=device)
        mask = (input_ids != 0).long()
        with torch.no_grad():
            tokens = self.transformer(input_ids=input_ids, attention_mask=mask)[0]
        weights = mask.unsqueeze(-1).float()
        pooled = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)[0].cpu().numpy().astype(np.float32)
