"""The metrics Housekeep and LLM-Personalize report, computed from a finished (or running) world.

With M = objects misplaced at start and P = correctly placed objects the robots picked up:
``episode_success`` (all of M and P correct), ``object_success`` (fraction of M and P correct),
``avg_soft_score`` (mean over M and P of the fraction of annotators ranking the final room|receptacle
positive), ``rearrange_quality`` (mean over M and P of the mean reciprocal positive rank of the final
receptacle when it is correct, else 0), ``pick_place_efficiency`` (sum over touched misplaced objects that
end correct of 2 / their picks and places, over the number of touched objects), ``misplaced_objects_found``
(seen / |M|), ``map_coverage`` (fraction of rooms visited), ``steps`` (low-level), ``commands``, and
LLM-Personalize's ``success_rate`` ((#correct at end - #correct at start) / |M|, can be negative).
"""

from __future__ import annotations

from typing import Any

from textenvs.envs.housekeep.world import HELD, World


def scored_objects(world: World) -> list[int]:
    """M and P: the objects the metrics are about, in object order."""
    return [i for i in range(len(world.object_keys)) if not world.initially_correct[i] or world.picks[i] > 0]


def episode_metrics(world: World) -> dict[str, Any]:
    objects = scored_objects(world)
    misplaced = world.misplaced_at_start
    correct_now = [world.is_correct(i) for i in objects]
    soft, quality = [], []
    for i in objects:
        location = world.location[i]
        pair = world.receptacles[location].exact_pair if location != HELD else -1
        column = world.category_columns[i]
        soft.append(float(world.annotations.positive_fraction[pair, column]) if pair >= 0 else 0.0)
        good = world.is_correct(i) and pair >= 0
        quality.append(float(world.annotations.mean_reciprocal_rank[pair, column]) if good else 0.0)
    touched = [i for i in range(len(world.object_keys)) if world.picks[i] > 0]
    efficiency = sum(
        2.0 / (world.picks[i] + world.places[i])
        for i in touched
        if not world.initially_correct[i] and world.is_correct(i)
    )
    n = max(len(objects), 1)
    n_correct_start = sum(world.initially_correct)
    n_correct_end = sum(world.is_correct(i) for i in range(len(world.object_keys)))
    return {
        "episode_success": bool(all(correct_now)),
        "object_success": sum(correct_now) / n,
        "avg_soft_score": sum(soft) / n,
        "rearrange_quality": sum(quality) / n,
        "pick_place_efficiency": efficiency / max(len(touched), 1),
        "misplaced_objects_found": sum(world.seen_objects[i] for i in misplaced) / max(len(misplaced), 1),
        "misplaced_objects_start": len(misplaced),
        "map_coverage": sum(any(r.visited[k] for r in world.robots) for k in range(len(world.rooms)))
        / len(world.rooms),
        "steps": world.steps,
        "commands": world.commands,
        "success_rate": (n_correct_end - n_correct_start) / max(len(misplaced), 1),
    }
