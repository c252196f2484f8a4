"""BK-Goal's potentials, by ``goal_rule``, with all-MiniLM-L6-v2 sentence embeddings (cached in
``SentenceEmbedder``) and thresholds recalibrated for it (``benchmarks/methods/bk/calibrate_goal_threshold.py``):

- ``original`` (``NearestGoalsPotential``; the original's ``models/reward_provider.py:72-98``): the labelling
  rounds form a library of (the observations a round showed, the goals it gave); the episode's last
  observations before the current one are compared with the library's, and Φ = the best cosine similarity
  between the last transition's caption (previous observation, action, current observation) and the goals
  of the 3 nearest rounds, if above the threshold, else 0. The history is embedded only when it can change
  Φ: not with 3 rounds or fewer (one mission asked in ``goal_rounds: 3``: every round is among the nearest),
  nor when no round's goals pass the threshold (Φ is 0 whichever rounds are nearest).
- ``count`` (``GoalPotential``): Φ = how many of the goals proposed for the mission one sentence of the
  current caption (BabyAI-Text's: one per line) matches, at a similarity of at least the threshold.
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
from textagents.methods.bk.environments import action_name, discrete_commands, family_name
from textagents.methods.bk.goal_prompt import GoalProposal, describe_steps, parse_goals, propose_goals, round_steps
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


#: How many of the library's rounds nearest the current history give their goals (the original's top 3).
NEAREST = 3
#: A round of the library: the observations it showed (as the LLM saw them) and the goals it gave.
Round = tuple[str, Sequence[str]]


def transition_caption(previous: str | None, action: str | None, observation: str) -> str:
    """The last transition as the original captions it (``utils/caption.py:50-51``): the previous
    observation, the action taken, the current observation; the observation alone at an episode's start."""
    if previous is None:
        return f"Current observation: {observation}"
    return f"{previous}\nYou choose the action: {action}.\nCurrent observation: {observation}"


class NearestGoalsPotential:
    """Φ(obs, info) by the original's rule, from ``library(mission)`` (every round so far, the mission's
    asked for on first use) and the episode's earlier steps (``info["history"]``: as many as a round shows).
    Counts its calls and the calls with Φ > 0."""

    def __init__(
        self, library: Callable[[str], Sequence[Round]], embed: Embed, threshold: float, commands: Sequence[str]
    ):
        self.library, self.embed, self.threshold, self.commands = library, embed, threshold, list(commands)
        self.context_vectors = np.zeros((0, 0), np.float32)
        self.goal_vectors: list[np.ndarray] = []
        self.calls = 0
        self.rewarded = 0

    def _vectors(self, rounds: Sequence[Round]) -> None:
        """Embeds the rounds not embedded yet (the library only grows)."""
        new = rounds[len(self.goal_vectors) :]
        if not new:
            return
        contexts = unit_rows(np.asarray(self.embed([context for context, _ in new]), dtype=np.float32))
        self.context_vectors = np.concatenate([self.context_vectors.reshape(-1, contexts.shape[1]), contexts])
        for _, goals in new:
            vectors = self.embed(list(goals)) if goals else np.zeros((0, contexts.shape[1]))
            self.goal_vectors.append(unit_rows(np.asarray(vectors, dtype=np.float32)))

    def __call__(self, obs: Any, info: dict[str, Any]) -> float:
        self.calls += 1
        mission, text = str(obs["mission"]), str(obs["text"])
        rounds = self.library(mission)
        if not rounds:
            return 0.0
        self._vectors(rounds)
        history = info.get("history", ())
        earlier = [Step(mission, action_name(a, self.commands), str(o["text"]), 0.0, None) for a, o in history]
        previous = earlier[-1].observation if earlier else None
        caption = transition_caption(previous, action_name(info.get("action"), self.commands), text)
        (last,) = unit_rows(np.asarray(self.embed([caption]), np.float32))
        per_round = np.array([(goals @ last).max() if len(goals) else -np.inf for goals in self.goal_vectors])
        if len(rounds) > NEAREST and per_round.max() > self.threshold:
            (query,) = unit_rows(np.asarray(self.embed([describe_steps(mission, earlier)]), np.float32))
            nearest = np.argsort(self.context_vectors @ query)[-NEAREST:]
        else:  # every round is among the nearest, or no round's goals pass: the history cannot change Φ
            nearest = np.arange(len(rounds))
        best = float(per_round[nearest].max())
        if best > self.threshold:
            self.rewarded += 1
            return best
        return 0.0


class GoalKnowledge(Knowledge):
    """BK-Goal: goals proposed per mission (``goals.json`` in the run: goals and answers), for the missions
    of the labelling's random steps first and for any other mission when Φ first meets it."""

    def __init__(self, config: BKConfig, run_dir: Path, llm: Callable[[], LLMBackend]):
        super().__init__(config, run_dir, llm)
        self.proposals: dict[str, GoalProposal] = {}
        self.steps: list[Step] = []
        self.rounds: list[Round] = []
        self._potential: GoalPotential | NearestGoalsPotential | None = None
        self.history = config.goal_samples if config.goal_rule == "original" else 0

    def _steps(self) -> list[Step]:
        if not self.steps:
            config = self.config
            self.steps = random_steps(config.env_id, config.goal_rounds * config.goal_samples, config.knowledge_seed)
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
                sampling=config.sampling(),
                prompt_source=config.prompt_source,
            )
            write_json_atomic(self.run_dir / "goals.json", self.state()["proposals"])
        return self.proposals[mission].goals

    def library(self, mission: str) -> list[Round]:
        """Every round asked so far, as (what it showed, the goals it gave), ``mission``'s asked for first;
        a new mission's rounds come after the others'."""
        self.goals_for(mission)
        if len(self.rounds) != sum(len(proposal.answers) for proposal in self.proposals.values()):
            per_round = self.config.goal_samples
            self.rounds = [
                (describe_steps(m, round_steps(self._steps(), index, per_round)), parse_goals(answer).goals)
                for m, proposal in self.proposals.items()
                for index, answer in enumerate(proposal.answers)
            ]
        return self.rounds

    def label(self) -> dict[str, float]:
        for mission in dict.fromkeys(step.mission for step in self._steps()):
            self.goals_for(mission)
        return self.metrics()

    def state(self) -> dict[str, Any]:
        return {
            "proposals": {
                mission: {"goals": p.goals, "answers": p.answers, "unparsed": p.unparsed, "trimmed": p.trimmed}
                for mission, p in self.proposals.items()
            }
        }

    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        self.proposals = {
            mission: GoalProposal(
                mission, list(p["goals"]), list(p["answers"]), int(p["unparsed"]), int(p.get("trimmed", 0))
            )
            for mission, p in state["proposals"].items()
        }

    def potential(self) -> GoalPotential | NearestGoalsPotential:
        if self._potential is None:
            from textagents.sb3.features import SentenceEmbedder

            config = self.config
            if config.goal_rule == "original":
                commands = discrete_commands(config.env_id)
                self._potential = NearestGoalsPotential(
                    self.library, SentenceEmbedder(), config.goal_similarity, commands
                )
            else:
                self._potential = GoalPotential(self.goals_for, SentenceEmbedder(), config.goal_similarity)
        return self._potential

    def metrics(self) -> dict[str, float]:
        proposals = list(self.proposals.values())
        metrics = {
            "goal/missions": len(proposals),
            "goal/goals_per_mission": float(np.mean([len(p.goals) for p in proposals])) if proposals else 0.0,
            "goal/unparsed_answers": sum(p.unparsed for p in proposals),
            "goal/trimmed_rounds": sum(p.trimmed for p in proposals),
        }
        potential = self._potential
        if potential is not None and potential.calls:
            metrics["goal/phi_calls"] = potential.calls
            if isinstance(potential, NearestGoalsPotential):
                metrics["goal/rewarded_share"] = potential.rewarded / potential.calls
            else:
                metrics["goal/matched_per_call"] = potential.matches / potential.calls
        return metrics
