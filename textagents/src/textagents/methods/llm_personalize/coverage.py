"""Whether the household's preferences that an evaluation needs were in the pairs the planner was trained on:
for each evaluated episode's initially misplaced objects, whether some trained plan places that object (by
name) on one of its correct receptacles. A planner cannot have learnt from its pairs a placement they never
show; a row that does not move with high coverage fails elsewhere (the diagnostics say where)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from textagents.methods.llm_personalize.plan_parser import parse_step, split_steps


def placements(plans: Iterable[str]) -> set[tuple[str, str]]:
    """The (object, receptacle) of every ``place`` step of ``plans`` (the assistant's text of the pairs, as
    the original's parser reads it)."""
    steps = (parse_step(text) for plan in plans for text in split_steps(plan))
    return {(step.names[0], step.names[1]) for step in steps if step.verb == "place"}


def trained_plans(datasets: Sequence[Path]) -> list[str]:
    """The assistant's text of every pair in ``datasets`` (chat JSONL files; missing files hold none)."""
    return [
        json.loads(line)["messages"][-1]["content"]
        for path in datasets
        if path.is_file()
        for line in path.read_text().splitlines()
        if line.strip()
    ]


def preference_coverage(
    make_env: Callable[[], Any], jobs: Sequence[tuple[str, int]], placed: set[tuple[str, str]]
) -> dict[str, float]:
    """Per scene of the ``(scene, episode index)`` jobs and in all: the share of the episodes' initially
    misplaced objects that some pair in ``placed`` puts on one of their correct receptacles."""
    env = make_env()
    counts: dict[str, list[int]] = {}
    try:
        for scene, index in jobs:
            env.reset(seed=index, options={"scene": scene, "episode_index": index})
            world = env.unwrapped.world
            for obj in world.misplaced_at_start:
                name = world.object_names[obj].lower()  # the parser lower-cases the plans
                correct = {world.receptacles[r].name.lower() for r in world.correct[obj]}
                counts.setdefault(scene, []).append(any((name, r) in placed for r in correct))
    finally:
        env.close()
    every = [hit for hits in counts.values() for hit in hits]
    result = {scene: sum(hits) / len(hits) for scene, hits in counts.items()}
    return {**result, "all": sum(every) / len(every) if every else 0.0}
