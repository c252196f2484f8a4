"""Recalibrate ELLM's similarity threshold for all-MiniLM-L6-v2: cosine similarities of goal pairs that mean
the same achievement (the goal and its wordings with an article, a plural, a synonym) against pairs of
different goals (ELLM's aliases excluded), as a histogram, and the threshold that separates them.

Writes ``benchmarks/methods/ellm/results/threshold.{json,png}``. Run: ``python calibrate_threshold.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from textagents.methods.core.report import plot_similarity_histogram
from textagents.methods.ellm.goals import ALL_GOALS
from textagents.methods.ellm.reward import ALIASES, DEFAULT_THRESHOLD
from textagents.sb3.features import SentenceEmbedder

OUT = Path(__file__).resolve().parent / "results"
#: Wordings an LLM gives for the same goal (after ELLM's lower-casing and stripping).
SAME = {
    "chop tree": ["chop the tree", "chop trees", "chop a tree", "cut down a tree", "collect wood"],
    "mine stone": ["mine the stone", "mine stones", "mine some stone"],
    "make wood pickaxe": ["make a wood pickaxe", "craft wood pickaxe", "make wooden pickaxe"],
    "drink water": ["drink some water", "drink the water"],
    "attack zombie": ["attack the zombie", "kill zombie", "fight zombie"],
    "place crafting table": ["place a crafting table", "place table", "build crafting table"],
    "eat plant": ["eat the plant", "eat a plant"],
    "attack cow": ["attack the cow", "kill cow"],
    "mine coal": ["mine the coal", "collect coal"],
    "place stone": ["place a stone", "place the stone"],
}


def main() -> None:
    embed = SentenceEmbedder()

    def unit(texts: list[str]) -> np.ndarray:
        vectors = embed(texts)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    goals = list(ALL_GOALS)
    vectors = unit(goals)
    similarity = vectors @ vectors.T
    different = [
        float(similarity[i, j])
        for i in range(len(goals))
        for j in range(i + 1, len(goals))
        if ALIASES.get(goals[i]) != goals[j]
    ]
    same = {
        (goal, wording): float(unit([goal])[0] @ unit([wording])[0])
        for goal, words in SAME.items()
        for wording in words
    }
    result = {
        "model": "all-MiniLM-L6-v2",
        "threshold": DEFAULT_THRESHOLD,
        "different_goals_max": max(different),
        "different_goals_pairs": len(different),
        "same_goal": {f"{g} | {w}": s for (g, w), s in same.items()},
        "same_goal_accepted": sum(s >= DEFAULT_THRESHOLD for s in same.values()) / len(same),
        "different_goals_accepted": sum(s >= DEFAULT_THRESHOLD for s in different) / len(different),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "threshold.json").write_text(json.dumps(result, indent=2) + "\n")

    plot_similarity_histogram(
        {"different goals": different, "same goal, other wording": list(same.values())},
        DEFAULT_THRESHOLD,
        OUT / "threshold.png",
        "cosine similarity (all-MiniLM-L6-v2)",
    )
    print(json.dumps({k: v for k, v in result.items() if k != "same_goal"}, indent=2))


if __name__ == "__main__":
    main()
