"""Per-robot episode bookkeeping: reward, goal, trajectory, and the paper's end-of-episode outputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from textenvs.envs.fastsim.captioner import annotate_points
from textenvs.envs.fastsim.simulator import World

#: Annotate every this many steps (plus the last), as the paper does.
ANNOTATION_EVERY = 40


class EpisodeTracker:
    """Episode state of ``n`` robots of one world, robot by robot: steps taken, fitness (summed reward),
    whether the goal was reached, and the positions the paper's annotation samples (after every
    ``ANNOTATION_EVERY``-th step, and the latest). Plain Python per robot: a single env pays no array
    overhead, and memory does not grow with the episode."""

    def __init__(self, world: World, n: int, max_steps: int):
        if not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive number of steps, got {max_steps!r}")
        self.world = world
        self.max_steps = int(max_steps)
        layout = world.layout
        self.goal_x, self.goal_y = (float(v) for v in layout.goal)
        self.goal_radius = layout.goal_diameter / 2
        self.steps = [0] * n
        self.fitness = [0.0] * n
        self.reached = [False] * n
        self.start_distance = [1.0] * n
        self.samples: list[list[tuple[int, float, float]]] = [[] for _ in range(n)]
        self.latest: list[tuple[int, float, float]] = [(0, 0.0, 0.0)] * n

    def distance_to_goal(self, x: float, y: float) -> float:
        return math.hypot(float(x) - self.goal_x, float(y) - self.goal_y)

    def reset(self, row: int, x: float, y: float) -> None:
        """Start robot ``row``'s episode at (x, y)."""
        self.steps[row] = 0
        self.samples[row] = []
        self.fitness[row] = 0.0
        self.reached[row] = False
        self.start_distance[row] = max(self.distance_to_goal(x, y), 1e-9)

    def record(self, row: int, x: float, y: float) -> float:
        """Count one step of robot ``row``, now at (x, y); its reward: 1 inside the goal, else 0."""
        inside = math.hypot(x - self.goal_x, y - self.goal_y) <= self.goal_radius
        t = self.steps[row]
        self.latest[row] = (t, x, y)
        if t % ANNOTATION_EVERY == 0:
            self.samples[row].append(self.latest[row])
        self.steps[row] = t + 1
        self.fitness[row] += inside
        self.reached[row] = self.reached[row] or inside
        return 1.0 if inside else 0.0

    def truncated(self, row: int) -> bool:
        return self.steps[row] >= self.max_steps

    def progression(self, row: int, x: float, y: float) -> float:
        """1 once the goal was reached, else the fraction of the start's straight-line distance covered."""
        if self.reached[row]:
            return 1.0
        return min(max(1.0 - self.distance_to_goal(x, y) / self.start_distance[row], 0.0), 1.0)

    def annotation(self, row: int) -> list[dict[str, Any]]:
        """The paper's annotation of this episode's trajectory so far."""
        if self.steps[row] == 0:
            return []
        return annotate_points(self.world, [*self.samples[row], self.latest[row]])

    def episode_metrics(self, row: int, x: float, y: float) -> dict[str, Any]:
        """What the paper reports per evaluated policy; ``bd`` is the final (x, y) in real units."""
        final_distance = self.distance_to_goal(x, y)
        return {
            "bd": [float(x), float(y)],
            "fitness": float(self.fitness[row]),
            "reached_goal": bool(self.reached[row]),
            "task_solved": final_distance < self.world.layout.solved_radius,
            "final_distance_to_goal": final_distance,
            "steps": int(self.steps[row]),
        }
