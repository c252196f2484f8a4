"""The metrics Housekeep and LLM-Personalize report, computed from a finished (or running) world.

With M = objects misplaced at start and P = correctly placed objects the robots picked up:
``episode_success`` (all of M and P correct), ``object_success`` (fraction of M and P correct),
``avg_soft_score`` (mean over M and P of the fraction of annotators ranking the final room|receptacle
positive), ``rearrange_quality`` (mean over M and P of the mean reciprocal positive rank of the final
receptacle when it is correct, else 0), ``pick_place_efficiency`` (sum over touched misplaced objects that
end correct of 2 / their picks and places, over the number of touched objects), ``misplaced_objects_found``
(seen / |M|), ``map_coverage`` (floor area seen, m², as Housekeep reports it: the visited rooms' areas,
estimated from the scene as ``scenes.floor_area`` says), ``rooms_visited_fraction`` (fraction of rooms
visited), ``path_efficiency`` (Housekeep's: per object of M and P that was carried, the distance between where
the robot stood at its first pick and at its last place, over the distance walked while carrying it, averaged;
None when nothing was carried; our distances are straight lines between the places gone to, as the robot
walks them, where Housekeep used navmesh geodesics), ``success_pick_place`` (successful / all pick and place
commands, 0 when none), ``success_look_at`` (successful / all look-at commands, 0 when none), ``steps``
(low-level), ``commands``, and LLM-Personalize's ``success_rate`` ((#correct at end - #correct at start) / |M|,
can be negative).
"""

from __future__ import annotations

import math
from typing import Any

from textenvs.envs.housekeep.commands import LOOK_AT, PICK_UP, PLACE
from textenvs.envs.housekeep.world import HELD, World


def scored_objects(world: World) -> list[int]:
    """M and P: the objects the metrics are about, in object order."""
    return [i for i in range(len(world.object_keys)) if not world.initially_correct[i] or world.picks[i] > 0]


def path_efficiency(world: World, objects: list[int]) -> float | None:
    """Housekeep's ``_add_path_efficiency``: for each carried object, the straight distance from the carrier's
    position at its first pick to that at its last place (or now, if still held) — at most the distance walked
    while carrying it — over that walked distance; the mean over the objects that moved at all."""
    ratios = []
    for obj in objects:
        points = list(world.carry_points[obj])
        if not points:
            continue
        holder = world.holder(obj)
        if holder is not None:
            robot = world.robots[holder]
            points.append((robot.walked, (robot.x, robot.z)))
        walked = sum(points[i + 1][0] - points[i][0] for i in range(0, len(points) - 1, 2))
        (x0, z0), (x1, z1) = points[0][1], points[-1][1]
        direct = min(math.hypot(x1 - x0, z1 - z0), walked)
        if not math.isclose(max(direct, walked), 0.0, abs_tol=1e-8):
            ratios.append(direct / max(direct, walked))
    return sum(ratios) / len(ratios) if ratios else None


def _rate(successes: int, attempts: int) -> float:
    return successes / attempts if attempts else 0.0


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
    visited = [any(r.visited[k] for r in world.robots) for k in range(len(world.rooms))]
    return {
        "episode_success": bool(all(correct_now)),
        "object_success": sum(correct_now) / n,
        "avg_soft_score": sum(soft) / n,
        "rearrange_quality": sum(quality) / n,
        "pick_place_efficiency": efficiency / max(len(touched), 1),
        "misplaced_objects_found": sum(world.seen_objects[i] for i in misplaced) / max(len(misplaced), 1),
        "misplaced_objects_start": len(misplaced),
        "map_coverage": sum(room.area for room, seen in zip(world.rooms, visited, strict=True) if seen),
        "rooms_visited_fraction": sum(visited) / len(world.rooms),
        "path_efficiency": path_efficiency(world, objects),
        "success_pick_place": _rate(
            world.successes[PICK_UP] + world.successes[PLACE], world.attempts[PICK_UP] + world.attempts[PLACE]
        ),
        "success_look_at": _rate(world.successes[LOOK_AT], world.attempts[LOOK_AT]),
        "steps": world.steps,
        "commands": world.commands,
        "success_rate": (n_correct_end - n_correct_start) / max(len(misplaced), 1),
    }
