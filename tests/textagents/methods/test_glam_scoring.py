"""GLAM's policy scorings, reward and NPAE's action head against the original's own arithmetic
(golden/glam_scoring.json, written by benchmarks/methods/glam/golden/make_golden.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from textagents.llm.transformers_backend import CandidateForward
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.llm_learner import trained_reward
from textagents.methods.glam.scoring import ActionHead, CommandScores

GOLDEN = json.loads((Path(__file__).parent / "golden" / "glam_scoring.json").read_text())


def _golden_forward(raw_logits: bool) -> CandidateForward:
    """The rows our backend hands the policy module for the golden prompt: per-token log-probs (or raw
    logits for ``pinned``), pads 0, as ``TransformersBackend._forward_chunk`` computes them."""
    logits = torch.tensor(GOLDEN["logits"])
    tokens = torch.tensor(GOLDEN["tokens"])
    mask = (tokens != GOLDEN["pad"]).long()
    scored = logits if raw_logits else torch.log_softmax(logits, dim=-1)
    token_scores = scored.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) * mask
    rows = torch.zeros(len(tokens), dtype=torch.long)
    return CandidateForward(torch.zeros(len(tokens), 4), torch.zeros(0), mask, token_scores, rows)


@pytest.mark.parametrize("scoring", ["paper", "pinned", "logprob"])
def test_each_scoring_gives_the_originals_policy_on_the_golden_logits(scoring):
    logits = CommandScores(4, scoring)(_golden_forward(raw_logits=scoring == "pinned"))
    np.testing.assert_allclose(torch.softmax(logits, -1).numpy(), GOLDEN["pi"][scoring], rtol=1e-5, atol=1e-6)


def test_the_paper_scoring_is_the_default_and_flatter_than_log_probs():
    assert GlamConfig().scoring == "paper"
    assert max(GOLDEN["pi"]["paper"]) < 0.4 < 0.7 < max(GOLDEN["pi"]["logprob"])  # the flattening is real


def test_the_paper_scoring_falls_back_to_uniform_when_every_probability_underflows():
    forward = _golden_forward(raw_logits=False)
    forward.token_scores = forward.token_scores - 200.0  # p = e^-200... < 1e-45 for every command
    pi = torch.softmax(CommandScores(4, "paper")(forward), -1)
    np.testing.assert_allclose(pi.numpy(), np.full(6, 1 / 6), rtol=1e-6)


def test_ppo_trains_on_the_originals_reward():
    config = GlamConfig()
    assert config.reward_scale == 20.0
    got = [trained_reward(r, config.reward_scale) for r in GOLDEN["rewards"]]
    np.testing.assert_allclose(got, GOLDEN["trained_rewards"], rtol=1e-12)


@pytest.mark.parametrize(("name", "value"), [("scoring", "softmax"), ("npae_policy", "lm"), ("reward_scale", 0)])
def test_bad_values_are_refused_in_one_line(name, value):
    with pytest.raises(ValueError, match=name):
        GlamConfig(**{name: value})


def test_the_action_head_has_the_originals_layers_and_gives_row_r_action_r():
    head = ActionHead(hidden_size=32)
    shapes = [tuple(m.weight.shape) for m in head.net if isinstance(m, torch.nn.Linear)]
    assert shapes == [(1024, 32), (1024, 1024), (6, 1024)]
    assert [type(m).__name__ for m in head.net] == ["Linear", "Sigmoid", "Linear", "Sigmoid", "Linear"]
    hidden = torch.randn(2, 32).repeat_interleave(6, 0)  # two contexts, each row repeats its context's state
    rows = torch.arange(2).repeat_interleave(6)
    logits = head(CandidateForward(hidden, torch.zeros(0), torch.ones(12, 1), torch.zeros(12, 1), rows))
    expected = head.net(hidden[[0, 6]])
    torch.testing.assert_close(logits.view(2, 6), expected)
    with pytest.raises(ValueError, match="exactly 6 commands"):
        head(CandidateForward(hidden[:5], torch.zeros(0), torch.ones(5, 1), torch.zeros(5, 1), rows[:5]))
