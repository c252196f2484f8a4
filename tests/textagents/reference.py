"""Reference computations for the tests, written the plain way (no batching, no cache reuse)."""

from __future__ import annotations

import torch

from textagents.llm.transformers_backend import TransformersBackend


def hand_scores(backend: TransformersBackend, context: str, candidate: str, legacy: bool = False) -> float:
    """Sum over the candidate's tokens of log p(token | everything before), from one plain forward pass."""
    context_ids = backend.tokenizer(context)["input_ids"]
    candidate_ids = backend.tokenizer(candidate, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        if backend.seq2seq:
            start = backend.model.config.decoder_start_token_id
            logits = backend.model(
                input_ids=torch.tensor([context_ids]), decoder_input_ids=torch.tensor([[start, *candidate_ids[:-1]]])
            ).logits[0]
            predicting = list(range(len(candidate_ids)))
        else:
            logits = backend.model(input_ids=torch.tensor([context_ids + candidate_ids])).logits[0]
            predicting = [len(context_ids) - 1 + i for i in range(len(candidate_ids))]
    total = 0.0
    for step, token in zip(predicting, candidate_ids, strict=True):
        row = logits[step].double()
        total += float(row[token]) if legacy else float(row[token] - torch.logsumexp(row, dim=0))
    return total
