"""Where ELLM's goals come from: an LLM (any backend, answers cached per prompt), ``SimpleOracle`` (the
prerequisite table, no LLM), uniform random goals, or none. Each source suggests goals for one caption;
the reward wrapper drops those already achieved in the episode (novelty)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from textagents.llm.base import LLMBackend
from textagents.methods.ellm.prompt import PARSING, SAMPLING, goal_prompt, parse_goals

#: ELLM's prerequisites per goal: (inventory items needed, with repeats for counts; words that must appear in
#: the observation sentence), ``prereq_map`` of the original.
PREREQUISITES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "eat plant": ((), ("plant",)),
    "attack zombie": ((), ("zombie",)),
    "attack skeleton": ((), ("skeleton",)),
    "attack cow": ((), ("cow",)),
    "eat cow": ((), ("cow",)),
    "chop tree": ((), ("tree",)),
    "mine stone": (("wood_pickaxe",), ("stone",)),
    "mine coal": (("wood_pickaxe",), ("coal",)),
    "mine iron": (("stone_pickaxe",), ("iron",)),
    "mine diamond": (("iron_pickaxe",), ("diamond",)),
    "drink water": ((), ("water",)),
    "chop grass": ((), ("grass",)),
    "sleep": ((), ()),
    "place stone": (("stone",), ()),
    "place crafting table": (("wood",), ()),
    "make crafting table": (("wood",), ()),
    "place furnace": (("stone",) * 4, ()),
    "place plant": (("sapling",), ()),
    "make wood pickaxe": (("wood",), ("table",)),
    "make stone pickaxe": (("stone", "wood"), ("table",)),
    "make iron pickaxe": (("wood", "coal", "iron"), ("table", "furnace")),
    "make wood sword": (("wood",), ("table",)),
    "make stone sword": (("wood", "stone"), ("table",)),
    "make iron sword": (("wood", "coal", "iron"), ("table", "furnace")),
}
ALL_GOALS = tuple(PREREQUISITES)


@dataclass(frozen=True)
class Caption:
    """What a goal source sees: ELLM's three caption parts and the inventory counts."""

    observation: str
    inventory: str
    status: str
    items: Mapping[str, int]

    @classmethod
    def of(cls, info: Mapping[str, Any]) -> Caption:
        return cls(info["obs_caption"], info["inventory_caption"], info["status_caption"], info["inventory"])


class GoalSource(Protocol):
    name: str

    def suggest(self, caption: Caption) -> list[str]: ...


class NoGoals:
    name = "none"

    def suggest(self, caption: Caption) -> list[str]:
        return []


class UniformGoals:
    """The original's "uniform" baseline (``BaselineModel``, lm.py:163-183): every name of ``names`` (the
    env's action names, verb x noun) at every step; the reward wrapper drops those achieved (novelty).
    ``count``: ours, that many names drawn uniformly at each step instead."""

    name = "uniform"

    def __init__(self, names: Sequence[str], count: int | None = None, seed: int = 0):
        self.names, self.count = tuple(names), count
        self.rng = np.random.default_rng(seed)

    def suggest(self, caption: Caption) -> list[str]:
        if self.count is None or self.count >= len(self.names):
            return list(self.names)
        return [self.names[i] for i in self.rng.choice(len(self.names), size=self.count, replace=False)]


class SimpleOracle:
    """Every goal whose observation words all appear in the observation sentence and whose inventory items
    are held in the needed counts; ``sleep`` only when sleepy; ``place crafting table`` not when one is in
    view. The original's "drink water when thirsty" looks for the word in the inventory sentence, where it
    never is, so it never fires; kept so."""

    name = "oracle"

    def suggest(self, caption: Caption) -> list[str]:
        goals = []
        for goal, (items, words) in PREREQUISITES.items():
            needed = Counter(items)
            if all(w in caption.observation for w in words) and all(
                caption.items.get(item, 0) >= count for item, count in needed.items()
            ):
                goals.append(goal)
        if "sleepy" not in caption.status:
            goals.remove("sleep")
        if "crafting table" in caption.observation and "place crafting table" in goals:
            goals.remove("place crafting table")
        if "thirsty" in caption.inventory and "drink water" not in goals:
            goals.append("drink water")
        return goals


@dataclass
class LLMGoals:
    """Goals from ``backend`` for ELLM's prompt (``prompt_source``: ours or the original's), cached per
    prompt. ``parsing`` (``prompt.PARSING``): ``original``, where an answer with a line that is not a bullet
    gives no goal and is not cached (the next visit asks again), or ``lenient``. Counts calls, cache hits
    and malformed answers.

    A prompt asked again after a voided answer is asked with the sampling seed plus the number of its voided
    answers: the original's API drew a new answer on every call, and a fixed seed would return the voided one
    each time (still reproducible: the seeds follow the run)."""

    backend: LLMBackend
    parsing: str = "original"
    prompt_source: str = "ours"
    sampling: Mapping[str, Any] = field(default_factory=lambda: dict(SAMPLING))
    name: str = "llm"
    cache: dict[str, tuple[str, ...]] = field(default_factory=dict)
    calls: int = 0
    cache_hits: int = 0
    malformed: int = 0
    voided: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.parsing not in PARSING:
            raise ValueError(f"parsing must be one of {PARSING}, got {self.parsing!r}")

    def suggest(self, caption: Caption) -> list[str]:
        prompt = goal_prompt(caption.observation, caption.inventory, caption.status, self.prompt_source)
        if prompt in self.cache:
            self.cache_hits += 1
            return list(self.cache[prompt])
        self.calls += 1
        strict = self.parsing == "original"
        sampling = dict(self.sampling)
        if sampling.get("seed") is not None:
            sampling["seed"] += self.voided.get(prompt, 0)
        parsed = parse_goals(self.backend.generate([prompt], **sampling)[0], strict=strict)
        self.malformed += not parsed.well_formed
        if parsed.valid or not strict:
            self.cache[prompt] = parsed.goals
            self.voided.pop(prompt, None)
        else:
            self.voided[prompt] = self.voided.get(prompt, 0) + 1
        return list(parsed.goals)


def suggestion_quality(goals: Sequence[str], caption: Caption, achieved: set[str]) -> dict[str, float]:
    """Shares of ``goals`` that are valid achievements, achievable now (``SimpleOracle``'s rule) and novel."""
    if not goals:
        return {}
    achievable = set(SimpleOracle().suggest(caption))
    return {
        "valid": float(np.mean([g in PREREQUISITES for g in goals])),
        "achievable": float(np.mean([g in achievable for g in goals])),
        "novel": float(np.mean([g not in achieved for g in goals])),
    }
