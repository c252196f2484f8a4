"""Crafter's episode metrics and its score over many episodes (Hafner 2021; BALROG's progression)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from textenvs.envs.crafter_text.constants import ACHIEVEMENTS


def unlocked_achievements(counts: Mapping[str, int]) -> list[str]:
    """The achievements (in crafter's order) that ``counts`` shows unlocked at least once."""
    return [name for name in ACHIEVEMENTS if counts.get(name, 0) > 0]


def episode_metrics(counts: Mapping[str, int], length: int, episode_return: float) -> dict[str, Any]:
    """What an episode achieved: each of the 22 achievements unlocked or not, how many, progression."""
    unlocked = unlocked_achievements(counts)
    return {
        "achievements": {name: counts.get(name, 0) > 0 for name in ACHIEVEMENTS},
        "num_achievements": len(unlocked),
        "progression": len(unlocked) / len(ACHIEVEMENTS),
        "length": int(length),
        "return": float(episode_return),
    }


def success_rates(episodes: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Per achievement, the percentage of episodes that unlocked it.

    Each episode is an ``episode_metrics`` dict or a mapping from achievement names to counts or bools.
    """
    unlocked = {name: 0 for name in ACHIEVEMENTS}
    total = 0
    for episode in episodes:
        achieved = episode.get("achievements", episode)
        unknown = sorted(set(achieved) - set(ACHIEVEMENTS))
        if unknown:
            raise ValueError(f"unknown achievements {unknown}; valid: {', '.join(ACHIEVEMENTS)}")
        for name in ACHIEVEMENTS:
            unlocked[name] += bool(achieved.get(name, 0))
        total += 1
    if total == 0:
        raise ValueError("success_rates needs at least one episode, got none")
    return {name: 100.0 * count / total for name, count in unlocked.items()}


def crafter_score(episodes: Iterable[Mapping[str, Any]]) -> float:
    """Crafter's score: ``exp(mean(ln(1 + success_rate_%))) - 1`` over the 22 achievements.

    A geometric mean of success rates in percent, so rare achievements count; a random agent scores
    about 1.6 and humans 50.5 (Hafner 2021).
    """
    rates = success_rates(episodes).values()
    return math.exp(sum(math.log1p(rate) for rate in rates) / len(ACHIEVEMENTS)) - 1.0
