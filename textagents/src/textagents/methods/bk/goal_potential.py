"""BK-Goal's potential: Φ(s) = how many of the goals proposed for the mission the current caption matches,
a goal matching when the cosine similarity of its sentence embedding with one of the caption's sentences
(BabyAI-Text's caption: one sentence per line) reaches the threshold. Embeddings are cached (goals per
mission here, sentences in ``SentenceEmbedder``'s cache).

The original (``models/reward_provider.py``) retrieved the goal lists of the 3 labelling rounds whose
captions were nearest the current one and paid the best similarity above 0.85 (bert-small); here every goal
proposed for the mission counts, as METHODS.md states it, with the threshold recalibrated for
all-MiniLM-L6-v2 (``benchmarks/methods/bk/calibrate_goal_threshold.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from textagents.bench.store import write_json_atomic
from textagents.llm.base import LLMBackend
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import family_name
from textagents.methods.bk.goal_prompt import GoalProposal, propose_goals
from textagents.methods.bk.knowledge import Knowledge
from textagents.methods.bk.samples import Step, random_steps

Embed = Callable[[Sequence[str]], np.ndarray]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def caption_sentences(observation: str) -> list[str]:
    return [line.strip() for line in observation.splitlines() if line.strip()]


class GoalPotential:
    """Φ(obs) = the number of ``goals_for(mission)`` that one of the caption's sentences matches (cosine
    similarity of ``embed``'s vectors >= ``threshold``); called as a potential with BabyAI-Text's
    observation (``mission`` and ``text``). Counts its calls and the matches."""

    def __init__(self, goals_for: Callable[[str], Sequence[str]], embed: Embed, threshold: float):
        self.goals_for, self.embed, self.threshold = goals_for, embed, threshold
        self.goal_vectors: dict[tuple[str, ...], np.ndarray] = {}
        self.calls = 0
        self.matches = 0

    def count(self, mission: str, observation: str) -> int:
        goals = tuple(self.goals_for(mission))
        sentences = caption_sentences(observation)
        if not goals or not sentences:
            return 0
        if goals not in self.goal_vectors:
            self.goal_vectors[goals] = unit_rows(np.asarray(self.embed(list(goals)), dtype=np.float32))
        similarity = self.goal_vectors[goals] @ unit_rows(np.asarray(self.embed(sentences), dtype=np.float32)).T
        return int((similarity.max(axis=1) >= self.threshold).sum())

    def __call__(self, obs: Any, info: dict[str, Any] | None = None) -> float:
        self.calls += 1
        matched = self.count(str(obs["mission"]), str(obs["text"]))
        self.matches += matched
        return float(matched)


class GoalKnowledge(Knowledge):
    """BK-Goal: goals proposed per mission (``goals.json`` in the run: goals and answers), for the missions
    of the labelling's random steps first and for any other mission when Φ first meets it."""

    def __init__(self, config: BKConfig, run_dir: Path, llm: Callable[[], LLMBackend]):
        super().__init__(config, run_dir, llm)
        self.proposals: dict[str, GoalProposal] = {}
        self.steps: list[Step] = []
        self._potential: GoalPotential | None = None

    def _steps(self) -> list[Step]:
        if not self.steps:
            config = self.config
            self.steps = random_steps(config.env_id, config.goal_rounds * config.goal_samples, config.seed)
        return self.steps

    def goals_for(self, mission: str) -> list[str]:
        """The goals for ``mission``, asked for on first use (the prompt depends only on the mission: the
        answers are cached per prompt)."""
        if mission not in self.proposals:
            config = self.config
            self.proposals[mission] = propose_goals(
                self.llm(),
                family_name(config.env_id),
                mission,
                self._steps(),
                rounds=config.goal_rounds,
                per_round=config.goal_samples,
                prompt_source=config.prompt_source,
            )
            write_json_atomic(self.run_dir / "goals.json", self.state()["proposals"])
        return self.proposals[mission].goals

    def label(self) -> dict[str, float]:
        for mission in dict.fromkeys(step.mission for step in self._steps()):
            self.goals_for(mission)
        return self.metrics()

    def state(self) -> dict[str, Any]:
        return {
            "proposals": {
                mission: {"goals": p.goals, "answers": p.answers, "unparsed": p.unparsed}
                for mission, p in self.proposals.items()
            }
        }

    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        self.proposals = {
            mission: GoalProposal(mission, list(p["goals"]), list(p["answers"]), int(p["unparsed"]))
            for mission, p in state["proposals"].items()
        }

    def potential(self) -> GoalPotential:
        if self._potential is None:
            from textagents.sb3.features import SentenceEmbedder

            self._potential = GoalPotential(self.goals_for, SentenceEmbedder(), self.config.goal_threshold)
        return self._potential

    def metrics(self) -> dict[str, float]:
        proposals = list(self.proposals.values())
        metrics = {
            "goal/missions": len(proposals),
            "goal/goals_per_mission": float(np.mean([len(p.goals) for p in proposals])) if proposals else 0.0,
            "goal/unparsed_answers": sum(p.unparsed for p in proposals),
        }
        if self._potential is not None and self._potential.calls:
            metrics["goal/phi_calls"] = self._potential.calls
            metrics["goal/matched_per_call"] = self._potential.matches / self._potential.calls
        return metrics
