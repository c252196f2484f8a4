"""OpenAI's frequency and presence penalties as a ``transformers`` logits processor.

OpenAI's definition: the logit of token j becomes ``logit[j] - c[j] * frequency_penalty - (c[j] > 0) *
presence_penalty``, c[j] being how many times j was sampled so far in this completion (the prompt's tokens do
not count). Applied before temperature and top-p, as ``generate`` runs custom processors before its warpers.
"""

from __future__ import annotations

import torch
from transformers import LogitsProcessor


class OpenAIPenalties(LogitsProcessor):
    """Lowers the logits of the tokens generated after the first ``prompt_length`` positions of ``input_ids``
    (the padded prompt of a causal model; the start token of a seq2seq decoder)."""

    def __init__(self, prompt_length: int, frequency_penalty: float = 0.0, presence_penalty: float = 0.0):
        self.prompt_length = prompt_length
        self.frequency_penalty = frequency_penalty
        self.presence_penalty = presence_penalty

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        generated = input_ids[:, self.prompt_length :]
        counts = torch.zeros_like(scores).scatter_add_(1, generated, torch.ones_like(generated, dtype=scores.dtype))
        return scores - self.frequency_penalty * counts - self.presence_penalty * (counts > 0).to(scores.dtype)
