"""How GLAM's policy π comes from the LLM, as module functions (the original registers its own scoring
module with lamorel): each returns one logit per (context, command) row, and π = softmax over a context's rows.

``scoring``: ``paper`` (the paper-era code: p = the product of the command's token probabilities,
π = softmax(p / max p), uniform when max p < 1e-45 or NaN), ``pinned`` (the pinned code: the sum of the
command's raw token logits, +1 per pad position up to the context's longest command), ``logprob``
(softmax over the summed log-probs). NPAE's policy is ``ActionHead``: an MLP from the context's hidden state
to one logit per action of BabyAI's fixed six, in the env's command order.
"""

from __future__ import annotations

import torch
from torch import nn

from textagents.llm.transformers_backend import CandidateForward
from textagents.methods.glam.config import SCORINGS

POLICY = "policy"
ACTIONS = 6  # BabyAI-Text's commands, in the original's action_space order
UNDERFLOW = 1e-45  # below it, the paper-era code fell back to a uniform π


def context_max(values: torch.Tensor, rows_of_context: torch.Tensor) -> torch.Tensor:
    """Each row's value replaced by the maximum over its context's rows."""
    contexts = int(rows_of_context.max()) + 1
    empty = torch.full((contexts,), float("-inf"), dtype=values.dtype, device=values.device)
    return empty.scatter_reduce(0, rows_of_context, values, "amax")[rows_of_context]


def paper_logits(summed_logprobs: torch.Tensor, rows_of_context: torch.Tensor) -> torch.Tensor:
    """p / max p per context (the paper-era rescaling), or 1 everywhere (uniform) where max p underflows."""
    p = summed_logprobs.exp()
    top = context_max(p, rows_of_context)
    degenerate = (top < UNDERFLOW) | torch.isnan(top)
    return torch.where(degenerate, torch.ones_like(p), p / top)


def pinned_logits(summed_raw_logits: torch.Tensor, mask: torch.Tensor, rows_of_context: torch.Tensor) -> torch.Tensor:
    """The summed raw logits, +1 for each pad position up to the context's longest command."""
    lengths = mask.sum(-1).to(summed_raw_logits.dtype)
    return summed_raw_logits + context_max(lengths, rows_of_context) - lengths


class CommandScores(nn.Module):
    """GLAM's scoring module: one policy logit per (context, command) row. ``pinned`` needs the backend's
    raw logits (``score_mode="legacy_logits"``); the others its log-probs."""

    def __init__(self, hidden_size: int, scoring: str = "paper"):
        super().__init__()
        if scoring not in SCORINGS:
            raise ValueError(f"scoring {scoring!r} is not one of {SCORINGS}")
        self.scoring = scoring

    def forward(self, batch: CandidateForward) -> torch.Tensor:
        summed = batch.token_scores.float().sum(-1)
        if self.scoring == "paper":
            return paper_logits(summed, batch.rows_of_context)
        if self.scoring == "pinned":
            return pinned_logits(summed, batch.candidate_mask, batch.rows_of_context)
        return summed


class ActionHead(nn.Module):
    """The original's ``ActionHeadsModuleFn``: two ``width``-unit sigmoid layers on the context's hidden
    state (last prompt token, or the first decoder position) to ``actions`` logits; row r of a context gets
    the logit of action r, so each context must offer the ``actions`` commands in the env's order."""

    def __init__(self, hidden_size: int, actions: int = ACTIONS, width: int = 1024):
        super().__init__()
        self.actions = actions
        self.net = nn.Sequential(
            nn.Linear(hidden_size, width),
            nn.Sigmoid(),
            nn.Linear(width, width),
            nn.Sigmoid(),
            nn.Linear(width, actions),
        )

    def forward(self, batch: CandidateForward) -> torch.Tensor:
        rows = batch.rows_of_context
        counts = torch.bincount(rows)
        if bool((counts[counts > 0] != self.actions).any()):
            raise ValueError(f"the action head needs exactly {self.actions} commands per context")
        first_row = torch.cumsum(counts, 0) - counts
        position = torch.arange(len(rows), device=rows.device) - first_row[rows]
        logits = self.net(batch.context_hidden.float())
        return logits.gather(1, position.unsqueeze(1)).squeeze(1)
