"""Golden numbers for GLAM's scoring and reward, from the original's own arithmetic (MIT), transcribed line
for line and run on fixed inputs: per-token logits of one prompt's 6 candidate commands. Not imported by the
package; run `python benchmarks/methods/glam/golden/make_golden.py` to rewrite
tests/textagents/methods/golden/glam_scoring.json.

Sources (flowersteam/Grounding_LLMs_with_online_RL = GLAM, flowersteam/lamorel = lamorel):
- paper: lamorel @ d76c7c2 lamorel/src/lamorel/server/llms/module_functions/score_module_function.py:21-32
  (softmax over the vocabulary, gather, pads -> probability 1, product), then GLAM @ 84d8165^ (a7f1d4e...,
  the parent of "Added new logscoring method") experiments/agents/ppo/llm_ppo_agent.py:102-121
  (softmax(scores / max), uniform if max < 1e-45 or NaN; Categorical(probs=...)).
- pinned: GLAM @ 31847fb experiments/train_language_agent.py:71-81 (LogScoringModuleFn: gather the raw
  logits, pads -> 1.0, sum), then experiments/agents/ppo/llm_ppo_agent.py:99-100 (Categorical(logits=...)).
- logprob: lamorel @ dce6f0d lamorel/src/lamorel/server/llms/module_functions/score_module_function.py:29-40
  (log_softmax, gather, pads -> 0, sum), Categorical(logits=...).
- reward: GLAM @ 31847fb experiments/train_language_agent.py:41-45 (reward_function), applied in
  experiments/agents/ppo/llm_ppo_agent.py:148-153 (rewards[i] = reshaped[:, 0]).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.distributions import Categorical

PAD = 0  # lamorel's pad token id (hf_llm.py: self.pad_token = 0)
VOCAB, LENGTH = 12, 3
# token ids of 6 commands padded with 0 to the longest (3 tokens); ids 1..11
TOKENS = [[3, 0, 0], [4, 0, 0], [5, 6, 0], [7, 8, 0], [9, 0, 0], [10, 11, 2]]
REWARDS = [0.0, 0.55, 1.0, -0.3, 0.0125]
OUT = Path(__file__).resolve().parents[4] / "tests" / "textagents" / "methods" / "golden" / "glam_scoring.json"


def fixed_logits() -> torch.Tensor:
    """[6, LENGTH, VOCAB]: a peaked next-token distribution, as an LLM's, the same for every command."""
    generator = torch.Generator().manual_seed(32)
    return torch.randn(6, LENGTH, VOCAB, generator=generator) * 1.0


def pad_mask(output_tokens: torch.Tensor) -> torch.Tensor:
    # both score modules: True where the token is the pad token
    mask = torch.ones(output_tokens.shape, dtype=torch.bool)
    for i, _output in enumerate(output_tokens):
        for j, _token in enumerate(_output):
            if _token != PAD:
                mask[i, j] = False
    return mask


def paper(logits: torch.Tensor, output_tokens: torch.Tensor) -> torch.Tensor:
    probs = logits.softmax(-1)
    tokens_probs = torch.gather(probs, 2, output_tokens[:, :, None]).squeeze(-1)
    scores = tokens_probs.masked_fill(pad_mask(output_tokens), 1.0).prod(-1)[None]  # one context
    scores_max = torch.max(scores, dim=1)[0]
    proba_dist = []
    for j in range(len(scores)):
        if scores_max[j] < 1e-45 or torch.isnan(scores_max[j]):
            proba_dist.append(F.softmax(torch.ones_like(scores[j]), dim=-1).unsqueeze(dim=0))
        else:
            proba_dist.append(F.softmax(scores[j] / scores_max[j], dim=-1).unsqueeze(dim=0))
    return Categorical(probs=torch.cat(proba_dist, dim=0)).probs[0]


def pinned(logits: torch.Tensor, output_tokens: torch.Tensor) -> torch.Tensor:
    tokens_logprobs = torch.gather(logits, 2, output_tokens[:, :, None]).squeeze(-1).to(torch.float32)
    scores = tokens_logprobs.masked_fill(pad_mask(output_tokens), 1.0).sum(-1)
    return Categorical(logits=scores[None]).probs[0]


def logprob(logits: torch.Tensor, output_tokens: torch.Tensor) -> torch.Tensor:
    logits = F.log_softmax(logits, dim=-1)
    tokens_logprobs = torch.gather(logits, 2, output_tokens[:, :, None]).squeeze(-1).to(torch.float32)
    scores = tokens_logprobs.masked_fill(pad_mask(output_tokens), 0.0).sum(-1)
    return Categorical(logits=scores[None]).probs[0]


def reward_function(subgoal_proba=None, reward=None, policy_value=None, llm_0=None):
    if reward > 0:
        return [20 * reward, 0]
    else:
        return [0, 0]


def main() -> None:
    logits, tokens = fixed_logits(), torch.tensor(TOKENS)
    golden = {
        "tokens": TOKENS,
        "pad": PAD,
        "logits": logits.tolist(),
        "pi": {fn.__name__: fn(logits, tokens).tolist() for fn in (paper, pinned, logprob)},
        "rewards": REWARDS,
        "trained_rewards": [reward_function(reward=r)[0] for r in REWARDS],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    for name, pi in golden["pi"].items():
        print(name, np.round(pi, 3))


if __name__ == "__main__":
    main()
