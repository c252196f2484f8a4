"""BK-Pref's scorer: a small transformer over a snippet's words whose output is the snippet's score, trained
on the LLM's preference labels with a Bradley-Terry loss.

The original's loss (``train_preference_model.py``): P(B better) = softmax(score A, score B)[B]; cross-entropy
on the pairs with a decisive label (ties dropped) plus ``smoothing`` (0.3) times the cross-entropy against the
uniform label (½, ½) over every labelled pair — its "label smoothing". The original's scorer was a causal
transformer over image and action embeddings of 5-step segments; this one reads the words of a window of
snippets (``encode_windows``: each step's snippet in its own slot of positions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch
from torch import nn

_WORDS = re.compile(r"[a-z0-9]+")
PAD, UNKNOWN = 0, 1


def words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def build_vocabulary(texts: Sequence[str]) -> list[str]:
    """The words of ``texts``, sorted; ids start at 2 (0: padding, 1: an unknown word)."""
    return sorted({word for text in texts for word in words(text)})


def encode(texts: Sequence[str], vocabulary: Sequence[str], max_tokens: int) -> torch.Tensor:
    """Word ids, ``[len(texts), max_tokens]``, cut at ``max_tokens`` and padded with ``PAD``."""
    return encode_windows([(text,) for text in texts], vocabulary, max_tokens)


def encode_windows(windows: Sequence[Sequence[str]], vocabulary: Sequence[str], max_tokens: int) -> torch.Tensor:
    """Word ids of windows of snippets (all of one length W), ``[len(windows), W * max_tokens]``: snippet i
    of a window cut at ``max_tokens`` words at positions ``i * max_tokens`` on, padded with ``PAD``."""
    index = {word: i + 2 for i, word in enumerate(vocabulary)}
    width = len(windows[0]) if windows else 1
    tokens = torch.full((len(windows), width * max_tokens), PAD, dtype=torch.long)
    for row, window in enumerate(windows):
        if len(window) != width:
            raise ValueError(f"windows must all hold {width} snippets, got {len(window)}")
        for slot, text in enumerate(window):
            ids = [index.get(word, UNKNOWN) for word in words(text)][:max_tokens]
            start = slot * max_tokens
            tokens[row, start : start + len(ids)] = torch.tensor(ids, dtype=torch.long)
    return tokens


class SnippetScorer(nn.Module):
    """Word and position embeddings, ``layers`` transformer encoder layers (``heads`` heads, the original's 1,
    width ``width``), the mean over the snippet's words and a linear score."""

    def __init__(self, vocabulary_size: int, *, width: int, layers: int, max_tokens: int, heads: int = 1):
        super().__init__()
        if width % heads:
            raise ValueError(f"width ({width}) must be a multiple of heads ({heads})")
        self.words = nn.Embedding(vocabulary_size + 2, width, padding_idx=PAD)
        self.positions = nn.Embedding(max_tokens, width)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.score = nn.Linear(width, 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Scores, ``[batch]``, of word ids ``[batch, max_tokens]``."""
        padding = tokens == PAD
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden = self.encoder(self.words(tokens) + self.positions(positions), src_key_padding_mask=padding)
        keep = (~padding).unsqueeze(-1).float()
        pooled = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return self.score(pooled).squeeze(-1)


def bradley_terry_loss(
    score_a: torch.Tensor, score_b: torch.Tensor, label: torch.Tensor, smoothing: float
) -> torch.Tensor:
    """The original's loss for ``label`` = P(B better) in {0, ½, 1}: mean cross-entropy over the decisive
    pairs (0 when there is none) + ``smoothing`` × mean of −log P over both snippets of every pair."""
    log_p = torch.log_softmax(torch.stack([score_a, score_b], dim=-1), dim=-1)
    decisive = label != 0.5
    target = label[decisive].long()
    cross_entropy = -log_p[decisive].gather(1, target.unsqueeze(1)).mean() if decisive.any() else log_p.new_zeros(())
    return cross_entropy + smoothing * (-log_p).mean()


def train_scorer(
    scorer: SnippetScorer,
    tokens_a: torch.Tensor,
    tokens_b: torch.Tensor,
    labels: torch.Tensor,
    *,
    epochs: int,
    learning_rate: float,
    smoothing: float,
    seed: int,
    batch_size: int = 32,
) -> list[float]:
    """AdamW on the Bradley-Terry loss with gradients clipped at norm 1 (the original's), the pairs shuffled
    by ``seed`` every epoch; each epoch's mean loss."""
    optimizer = torch.optim.AdamW(scorer.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)
    losses = []
    scorer.train()
    for _ in range(epochs):
        order = torch.randperm(len(labels), generator=generator)
        total = 0.0
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            loss = bradley_terry_loss(scorer(tokens_a[batch]), scorer(tokens_b[batch]), labels[batch], smoothing)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(scorer.parameters(), 1.0)
            optimizer.step()
            total += loss.item() * len(batch)
        losses.append(total / len(order))
    scorer.eval()
    return losses
