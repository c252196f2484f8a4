"""Recalibrate BK-Goal's similarity threshold for all-MiniLM-L6-v2 (the paper's 0.85 was for bert-small):
cosine similarities of goals an LLM would propose ("go to the red ball", "find the red ball" ...) with the
sentences of real BabyAI-Text captions (random policies on BK levels). A goal about an object *matches* a
sentence that names that object (its colour and kind: "You see a red ball 3 steps forward", "You carry a red
ball"); it does not match one naming another object. The hard cases are objects sharing the kind or the
colour ("a blue ball", "a red box"). The threshold chosen is the one (on a 0.05 grid) that best separates
matching pairs from these hard ones (balanced accuracy); the paper's 0.85 accepts almost no matching pair.

Writes ``benchmarks/methods/bk/results/goal_threshold.{json,png}``. Run: ``python calibrate_goal_threshold.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from textagents.bench.store import write_json_atomic
from textagents.methods.bk.config import GOAL_THRESHOLD
from textagents.methods.bk.goal_potential import caption_sentences, unit_rows
from textagents.methods.bk.samples import random_steps
from textagents.methods.core.report import plot_similarity_histogram
from textagents.sb3.features import SentenceEmbedder

OUT = Path(__file__).resolve().parent / "results"
LEVELS = (
    "BabyAI-Text-GoToLocal-RedBall-S20-v0",
    "BabyAI-Text-GoToLocal-Pretraining-S20-v0",
    "BabyAI-Text-PickUp-RedBall-S20-v0",
)
STEPS_PER_LEVEL = 400
#: Wordings of object goals an LLM gives for BabyAI missions.
TEMPLATES = ("go to the {}", "find the {}", "move towards the {}", "approach the {}", "pick up the {}")
_OBJECT = re.compile(r"\b(red|green|blue|purple|yellow|grey) (ball|box|key)\b")


def main() -> None:
    sentences = sorted(
        {
            sentence
            for level in LEVELS
            for step in random_steps(level, STEPS_PER_LEVEL, seed=0, keep=0.5)
            for sentence in caption_sentences(step.observation)
        }
    )
    named = {sentence: set(_OBJECT.findall(sentence)) for sentence in sentences}
    objects = sorted({obj for found in named.values() for obj in found})
    goals = [(obj, template.format(" ".join(obj))) for obj in objects for template in TEMPLATES]
    embed = SentenceEmbedder()
    similarity = unit_rows(embed([g for _, g in goals])) @ unit_rows(embed(sentences)).T
    matching, other, hard = [], [], []
    for row, (obj, _) in enumerate(goals):
        for column, sentence in enumerate(sentences):
            value = float(similarity[row, column])
            if obj in named[sentence]:
                matching.append(value)
            else:
                other.append(value)
                if any(o[0] == obj[0] or o[1] == obj[1] for o in named[sentence]):
                    hard.append(value)
    matching_a, other_a, hard_a = np.array(matching), np.array(other), np.array(hard)
    candidates = np.round(np.arange(0.30, 0.951, 0.05), 2)
    balanced = [((matching_a >= t).mean() + (hard_a < t).mean()) / 2 for t in candidates]
    best = float(candidates[int(np.argmax(balanced))])

    def accepted(values: list[float], threshold: float) -> float:
        return float(np.mean(np.array(values) >= threshold))

    result = {
        "model": "all-MiniLM-L6-v2",
        "levels": list(LEVELS),
        "sentences": len(sentences),
        "goals": len(goals),
        "best_threshold": best,
        "threshold_in_use": GOAL_THRESHOLD,
        "balanced_accuracy_matching_vs_hard": {
            f"{t:.2f}": round(float(b), 4) for t, b in zip(candidates, balanced, strict=True)
        },
        "matching_pairs": len(matching),
        "other_pairs": len(other),
        "hard_pairs": len(hard),
        "matching_accepted": accepted(matching, GOAL_THRESHOLD),
        "other_accepted": accepted(other, GOAL_THRESHOLD),
        "hard_accepted": accepted(hard, GOAL_THRESHOLD),
        "matching_accepted_at_paper_0.85": accepted(matching, 0.85),
        "matching_quantiles": {q: float(np.quantile(matching_a, q)) for q in (0.05, 0.25, 0.5)},
        "other_quantiles": {q: float(np.quantile(other_a, q)) for q in (0.5, 0.95, 0.99)},
    }
    OUT.mkdir(parents=True, exist_ok=True)
    write_json_atomic(OUT / "goal_threshold.json", result)
    plot_similarity_histogram(
        {
            "goal names the sentence's object": matching,
            "another object": other,
            "another object sharing colour or kind": hard,
        },
        GOAL_THRESHOLD,
        OUT / "goal_threshold.png",
        "cosine similarity of goal and caption sentence (all-MiniLM-L6-v2)",
        density=True,
    )
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("balanced")}, indent=2))


if __name__ == "__main__":
    main()
