"""Reference computations for the tests, written the plain way (no batching, no cache reuse)."""

from __future__ import annotations

from typing import Any

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


def seq2seq_candidates_repeated(
    backend: TransformersBackend,
    context_ids: list[list[int]],
    rows: torch.Tensor,
    cand: torch.Tensor,
    cand_mask: torch.Tensor,
    need_hidden: bool,
) -> tuple[Any, Any, torch.Tensor]:
    """``TransformersBackend._seq2seq_candidates`` without the decoder's cross-attention cache: the encoder
    states repeated for each (context, candidate) row and one decoder pass over all of them."""
    ids, mask = backend._pad(context_ids, left=False)
    encoded = backend.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
    start = torch.full((cand.shape[0], 1), backend.model.config.decoder_start_token_id)
    out = backend.model(
        encoder_outputs=(encoded[rows],),
        attention_mask=mask[rows],
        decoder_input_ids=torch.cat([start, cand[:, :-1]], dim=1),
        decoder_attention_mask=torch.cat([torch.ones_like(start), cand_mask[:, :-1]], dim=1),
        output_hidden_states=need_hidden,
    )
    if not need_hidden:
        return None, None, out.logits
    hidden = out.decoder_hidden_states[-1]
    return hidden[:, 0], hidden, out.logits
