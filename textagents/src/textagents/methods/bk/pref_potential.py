"""BK-Pref: the LLM labels pairs of windows of (action, observation) snippets of a random policy
(``pref_window`` consecutive steps of an episode each), a ``SnippetScorer`` is trained on the labels, and its
score of the episode's last ``pref_window`` snippets is Φ.

The labels are checked against the env's own progress signal: of two snippets, the one whose agent is
nearer the object the mission names at the window's last step (``Step.distance``; 0 once the mission is
done) made more progress.
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
from textagents.methods.bk.pref_model import SnippetScorer, build_vocabulary, encode_windows, train_scorer
from textagents.methods.bk.pref_prompt import (
    A_BETTER,
    B_BETTER,
    EQUAL,
    PreferenceLabel,
    label_pairs,
    snippet_text,
    step_snippet,
    window_text,
)
from textagents.methods.bk.samples import Step, random_windows


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
    """Φ(obs, info) = the scorer's score of the window of the episode's last ``window`` snippets, oldest
    first: those of ``info["history"]``'s (action, observation) steps and the current one (mission,
    ``info["action"]`` unless not ``with_action``, observation text). Early in an episode the window is padded
    in front with copies of its first snippet (the original's ``train_rs.py:130-135`` fills its window with
    the episode's first step). Scores are cached per window (the same few observations recur)."""

    def __init__(
        self,
        scorer: SnippetScorer,
        vocabulary: Sequence[str],
        max_tokens: int,
        commands: Sequence[str],
        cache_size: int = 100_000,
        with_action: bool = True,
        window: int = 1,
    ):
        self.scorer, self.vocabulary, self.max_tokens = scorer, list(vocabulary), max_tokens
        self.commands, self.with_action, self.window = list(commands), with_action, window
        self.cache: OrderedDict[tuple[str, ...], float] = OrderedDict()
        self.cache_size = cache_size
        self.calls = 0

    def score(self, window: tuple[str, ...]) -> float:
        if window not in self.cache:
            with torch.no_grad():
                tokens = encode_windows([window], self.vocabulary, self.max_tokens)
                self.cache[window] = float(self.scorer(tokens)[0])
            if len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        self.cache.move_to_end(window)
        return self.cache[window]

    def snippets(self, obs: Any, info: dict[str, Any] | None = None) -> tuple[str, ...]:
        """The window Φ scores: the last ``window`` snippets of the episode, padded with its first."""
        info = info or {}
        steps = [*info.get("history", ()), (info.get("action"), obs)][-self.window :]
        mission = str(obs["mission"])
        texts = [
            snippet_text(mission, action_name(action, self.commands), str(seen["text"]), self.with_action)
            for action, seen in steps
        ]
        return (texts[0],) * (self.window - len(texts)) + tuple(texts)

    def __call__(self, obs: Any, info: dict[str, Any] | None = None) -> float:
        self.calls += 1
        return self.score(self.snippets(obs, info))


class PrefKnowledge(Knowledge):
    """BK-Pref: ``pref_pairs`` labelled pairs (``preferences.jsonl`` in the run: snippets, answer, label, the
    env's preference), the scorer trained on them (its weights in checkpoints), its score as Φ. With no
    decisive label there is no scorer and the run is PPO alone (``pref_trained: 0``). The labels are the
    LLM's, or with ``pref_labeller: env`` the env's preference (equal where it has none; no LLM asked)."""

    def __init__(self, config: BKConfig, run_dir: Path, llm: Callable[[], LLMBackend]):
        super().__init__(config, run_dir, llm)
        self.history = config.pref_window - 1
        self.vocabulary: list[str] = []
        self.scorer: SnippetScorer | None = None
        self._potential: PrefPotential | None = None

    def _new_scorer(self) -> SnippetScorer:
        config = self.config
        with torch.random.fork_rng():
            torch.manual_seed(config.knowledge_seed)
            return SnippetScorer(
                len(self.vocabulary),
                width=config.pref_width,
                layers=config.pref_layers,
                max_tokens=config.pref_max_tokens * config.pref_window,
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
        windows = random_windows(config.env_id, 2 * config.pref_pairs, config.knowledge_seed, config.pref_window)
        pairs = list(zip(windows[: config.pref_pairs], windows[config.pref_pairs :], strict=True))
        with_action = config.pref_action
        snippets = [(window_text(a, with_action), window_text(b, with_action)) for a, b in pairs]
        inputs = [tuple(tuple(step_snippet(step, with_action) for step in w) for w in pair) for pair in pairs]
        truth = [env_preference(a[-1], b[-1]) for a, b in pairs]
        if config.pref_labeller == "env":
            labels = [
                PreferenceLabel(a, b, "", EQUAL if env is None else env)
                for (a, b), env in zip(snippets, truth, strict=True)
            ]
        else:
            labels = label_pairs(
                self.llm(),
                family_name(config.env_id),
                snippets,
                prompt_source=config.prompt_source,
                steps=config.pref_window,
                sampling=config.sampling(),
            )
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
        trained = [(row.label, pair) for row, pair in zip(labels, inputs, strict=True) if row.label is not None]
        if not any(label != EQUAL for label, _ in trained):
            return {**metrics, "pref_trained": 0.0}
        self.vocabulary = build_vocabulary([text for _, pair in trained for window in pair for text in window])
        self.scorer = self._new_scorer()

        def tokens(windows: Sequence[tuple[str, ...]]) -> torch.Tensor:
            return encode_windows(windows, self.vocabulary, config.pref_max_tokens)

        losses = train_scorer(
            self.scorer,
            tokens([a for _, (a, _) in trained]),
            tokens([b for _, (_, b) in trained]),
            torch.tensor([label for label, _ in trained], dtype=torch.float32),
            epochs=config.pref_epochs,
            learning_rate=config.pref_learning_rate,
            smoothing=config.pref_smoothing,
            seed=config.knowledge_seed,
        )
        with torch.no_grad():
            score_a = self.scorer(tokens([a for a, _ in inputs]))
            score_b = self.scorer(tokens([b for _, b in inputs]))
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
                self.scorer,
                self.vocabulary,
                self.config.pref_max_tokens,
                commands,
                with_action=self.config.pref_action,
                window=self.config.pref_window,
            )
        return self._potential

    def metrics(self) -> dict[str, float]:
        if self._potential is None:
            return {}
        return {"pref/phi_calls": self._potential.calls, "pref/snippets_scored": len(self._potential.cache)}
