"""BK-Pref: the LLM labels pairs of (action, observation) snippets of a random policy, a ``SnippetScorer`` is
trained on the labels, and its score of the current snippet is Φ.

The labels are checked against the env's own progress signal: of two snippets, the one whose agent is
nearer the object the mission names (``Step.distance``; 0 once the mission is done) made more progress.
``pref/label_agreement`` is the share of decisive LLM labels that agree with it (over the pairs where the
distances differ), ``pref/scorer_agreement`` the same for the trained scorer's ranking of all sampled pairs.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from textagents.bench.store import write_text_atomic
from textagents.llm.base import LLMBackend
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import action_name, discrete_commands, family_name
from textagents.methods.bk.knowledge import Knowledge
from textagents.methods.bk.pref_model import SnippetScorer, build_vocabulary, encode, train_scorer
from textagents.methods.bk.pref_prompt import (
    A_BETTER,
    B_BETTER,
    EQUAL,
    PreferenceLabel,
    label_pairs,
    snippet_text,
    step_snippet,
)
from textagents.methods.bk.samples import Step, random_steps


def env_preference(a: Step, b: Step) -> float | None:
    """``A_BETTER`` or ``B_BETTER`` by the env's progress signal (the smaller distance); None when the
    distances are equal or unknown."""
    if a.distance is None or b.distance is None or a.distance == b.distance:
        return None
    return A_BETTER if a.distance < b.distance else B_BETTER


def agreement(predicted: Sequence[float | None], truth: Sequence[float | None]) -> tuple[float, int]:
    """The share of pairs with a decisive prediction and a known truth where they are equal, and how many
    such pairs there are (NaN share when none)."""
    judged = [(p, t) for p, t in zip(predicted, truth, strict=True) if p in (A_BETTER, B_BETTER) and t is not None]
    if not judged:
        return float("nan"), 0
    return float(np.mean([p == t for p, t in judged])), len(judged)


class PrefPotential:
    """Φ(obs, info) = the scorer's score of the snippet (mission, ``info["action"]`` unless not
    ``with_action``, observation text), cached per snippet (the same few observations recur)."""

    def __init__(
        self,
        scorer: SnippetScorer,
        vocabulary: Sequence[str],
        max_tokens: int,
        commands: Sequence[str],
        cache_size: int = 100_000,
        with_action: bool = True,
    ):
        self.scorer, self.vocabulary, self.max_tokens = scorer, list(vocabulary), max_tokens
        self.commands, self.with_action = list(commands), with_action
        self.cache: OrderedDict[str, float] = OrderedDict()
        self.cache_size = cache_size
        self.calls = 0

    def score(self, snippet: str) -> float:
        if snippet not in self.cache:
            with torch.no_grad():
                self.cache[snippet] = float(self.scorer(encode([snippet], self.vocabulary, self.max_tokens))[0])
            if len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        self.cache.move_to_end(snippet)
        return self.cache[snippet]

    def __call__(self, obs: Any, info: dict[str, Any] | None = None) -> float:
        self.calls += 1
        action = action_name((info or {}).get("action"), self.commands)
        return self.score(snippet_text(str(obs["mission"]), action, str(obs["text"]), self.with_action))


class PrefKnowledge(Knowledge):
    """BK-Pref: ``pref_pairs`` labelled pairs (``preferences.jsonl`` in the run: snippets, answer, label, the
    env's preference), the scorer trained on them (its weights in checkpoints), its score as Φ. With no
    decisive label there is no scorer and the run is PPO alone (``pref_trained: 0``). The labels are the
    LLM's, or with ``pref_labeller: env`` the env's preference (equal where it has none; no LLM asked)."""

    def __init__(self, config: BKConfig, run_dir: Path, llm: Callable[[], LLMBackend]):
        super().__init__(config, run_dir, llm)
        self.vocabulary: list[str] = []
        self.scorer: SnippetScorer | None = None
        self._potential: PrefPotential | None = None

    def _new_scorer(self) -> SnippetScorer:
        config = self.config
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            return SnippetScorer(
                len(self.vocabulary),
                width=config.pref_width,
                layers=config.pref_layers,
                max_tokens=config.pref_max_tokens,
                heads=config.pref_heads,
            )

    def _write(self, labels: list[PreferenceLabel], truth: list[float | None]) -> None:
        lines = [
            json.dumps({"a": row.a, "b": row.b, "answer": row.answer, "label": row.label, "env_preference": env})
            for row, env in zip(labels, truth, strict=True)
        ]
        write_text_atomic(self.run_dir / "preferences.jsonl", "".join(line + "\n" for line in lines))

    def label(self) -> dict[str, float]:
        config = self.config
        steps = random_steps(config.env_id, 2 * config.pref_pairs, config.seed)
        pairs = list(zip(steps[: config.pref_pairs], steps[config.pref_pairs :], strict=True))
        with_action = config.pref_action
        snippets = [(step_snippet(a, with_action), step_snippet(b, with_action)) for a, b in pairs]
        truth = [env_preference(a, b) for a, b in pairs]
        if config.pref_labeller == "env":
            labels = [
                PreferenceLabel(a, b, "", EQUAL if env is None else env)
                for (a, b), env in zip(snippets, truth, strict=True)
            ]
        else:
            labels = label_pairs(self.llm(), family_name(config.env_id), snippets, prompt_source=config.prompt_source)
        self._write(labels, truth)
        given = [row.label for row in labels]
        label_agreement, agreement_pairs = agreement(given, truth)
        metrics = {
            "pref/pairs": len(pairs),
            "pref/decisive": sum(label in (A_BETTER, B_BETTER) for label in given),
            "pref/equal": sum(label == EQUAL for label in given),
            "pref/unparsed": sum(label is None for label in given),
            "pref/label_agreement": label_agreement,
            "pref/agreement_pairs": agreement_pairs,
        }
        trained = [row for row in labels if row.label is not None]
        if not any(row.label != EQUAL for row in trained):
            return {**metrics, "pref_trained": 0.0}
        self.vocabulary = build_vocabulary([text for row in trained for text in (row.a, row.b)])
        self.scorer = self._new_scorer()
        losses = train_scorer(
            self.scorer,
            encode([row.a for row in trained], self.vocabulary, config.pref_max_tokens),
            encode([row.b for row in trained], self.vocabulary, config.pref_max_tokens),
            torch.tensor([row.label for row in trained], dtype=torch.float32),
            epochs=config.pref_epochs,
            learning_rate=config.pref_learning_rate,
            smoothing=config.pref_smoothing,
            seed=config.seed,
        )
        with torch.no_grad():
            score_a = self.scorer(encode([row.a for row in labels], self.vocabulary, config.pref_max_tokens))
            score_b = self.scorer(encode([row.b for row in labels], self.vocabulary, config.pref_max_tokens))
        ranked = [A_BETTER if a > b else B_BETTER if b > a else EQUAL for a, b in zip(score_a, score_b, strict=True)]
        scorer_agreement, _ = agreement(ranked, truth)
        scorer_fit, _ = agreement(ranked, given)
        return {
            **metrics,
            "pref_trained": 1.0,
            "pref/loss_first_epoch": losses[0],
            "pref/loss_last_epoch": losses[-1],
            "pref/scorer_agreement": scorer_agreement,
            "pref/scorer_fits_labels": scorer_fit,
        }

    def state(self) -> dict[str, Any]:
        return {"vocabulary": self.vocabulary, "trained": self.scorer is not None}

    def tensors(self) -> dict[str, torch.Tensor]:
        if self.scorer is None:
            return {}
        return {key: value.detach().clone() for key, value in self.scorer.state_dict().items()}

    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        self.vocabulary = list(state["vocabulary"])
        self.scorer = None
        if state["trained"]:
            self.scorer = self._new_scorer()
            self.scorer.load_state_dict(tensors)
            self.scorer.eval()

    def potential(self) -> PrefPotential | None:
        if self._potential is None and self.scorer is not None:
            commands = discrete_commands(self.config.env_id)
            self._potential = PrefPotential(
                self.scorer, self.vocabulary, self.config.pref_max_tokens, commands, with_action=self.config.pref_action
            )
        return self._potential

    def metrics(self) -> dict[str, float]:
        if self._potential is None:
            return {}
        return {"pref/phi_calls": self._potential.calls, "pref/snippets_scored": len(self._potential.cache)}
