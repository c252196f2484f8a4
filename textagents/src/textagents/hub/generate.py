"""Token generators for ``play_episodes``: a ``transformers`` causal LM sampling one assistant turn for a
batch of token sequences."""

from __future__ import annotations

import copy
from typing import Any

import torch


class ModelGenerator:
    """``model.generate`` on left-padded sequences; each turn is cut after its first end-of-turn token.

    ``generation_config`` (a ``transformers.GenerationConfig``) sets the sampling; its ``max_new_tokens``
    is replaced by ``max_new_tokens``, the length of one turn.
    """

    def __init__(self, model: Any, generation_config: Any, max_new_tokens: int, pad_token_id: int):
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.pad_token_id = pad_token_id
        self.generation_config = copy.deepcopy(generation_config)
        self.generation_config.max_new_tokens = max_new_tokens
        eos = self.generation_config.eos_token_id
        self.eos_ids = set(eos) if isinstance(eos, list) else {eos} if eos is not None else set()

    def __call__(self, sequences: list[list[int]]) -> list[list[int]]:
        if not sequences:
            return []
        width = max(len(s) for s in sequences)
        input_ids = torch.full((len(sequences), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, sequence in enumerate(sequences):
            input_ids[row, width - len(sequence) :] = torch.tensor(sequence, dtype=torch.long)
            attention_mask[row, width - len(sequence) :] = 1
        device = next(self.model.parameters()).device
        with torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention_mask.to(device),
                generation_config=self.generation_config,
            )
        return [self._cut(row[width:].tolist()) for row in output]

    def _cut(self, ids: list[int]) -> list[int]:
        for index, token in enumerate(ids):
            if token in self.eos_ids:
                return ids[: index + 1]
        return ids
