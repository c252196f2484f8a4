"""Per-robot episode bookkeeping: reward, goal, trajectory, and the paper's end-of-episode outputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.envs.fastsim.captioner import annotate_trajectory
from textenvs.envs.fastsim.simulator import World

#: Annotate every this many steps (plus the last), as the paper does.
ANNOTATION_EVERY = 40


class EpisodeTracker:
    """Episode state of ``n`` robots of one world: steps taken, fitness (summed reward), whether the goal
    was reached, and every position visited (the paper's behaviour = the positions after each step)."""

    def __init__(self, world: World, n: int, max_steps: int):
        if max_steps < 1:
            raise ValueError(f"max_steps must be a positive number of steps, got {max_steps!r}")
        self.world = world
        self.max_steps = max_steps
        layout = world.layout
        self.goal = np.asarray(layout.goal, np.float64)
        self.goal_radius = layout.goal_diameter / 2
        self.start = np.asarray(layout.start[:2], np.float64)
        self.steps = np.zeros(n, np.int64)
        self.fitness = np.zeros(n, np.float64)
        self.reached = np.zeros(n, bool)
        self.positions = np.zeros((n, max_steps, 2), np.float64)
        self.start_distance = np.full(n, float(np.linalg.norm(self.start - self.goal)))

    def reset(self, state: np.ndarray, rows: np.ndarray) -> None:
        """Start new episodes for ``rows`` at their current poses (``state`` float32[n, 3])."""
        self.steps[rows] = 0
        self.fitness[rows] = 0.0
        self.reached[rows] = False
        self.start_distance[rows] = self.distance_to_goal(state[rows])

    def record(self, state: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Count one step for ``rows`` (after the move); their rewards: 1 inside the goal, else 0."""
        inside = self.distance_to_goal(state[rows]) <= self.goal_radius
        rewards = inside.astype(np.float64)
        self.positions[rows, self.steps[rows]] = state[rows, :2]
        self.steps[rows] += 1
        self.fitness[rows] += rewards
        self.reached[rows] |= inside
        return rewards

    def distance_to_goal(self, state: np.ndarray) -> np.ndarray:
        return np.hypot(state[:, 0] - self.goal[0], state[:, 1] - self.goal[1])

    def truncated(self, rows: np.ndarray) -> np.ndarray:
        return self.steps[rows] >= self.max_steps

    def progression(self, state: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """1 once the goal was reached, else the fraction of the start's straight-line distance covered."""
        covered = 1.0 - self.distance_to_goal(state[rows]) / np.maximum(self.start_distance[rows], 1e-9)
        return np.where(self.reached[rows], 1.0, np.clip(covered, 0.0, 1.0))

    def behaviour_descriptor(self, state: np.ndarray, row: int) -> list[float]:
        """The final (x, y) in real units: the behaviour descriptor of novelty search."""
        return [float(state[row, 0]), float(state[row, 1])]

    def annotation(self, row: int) -> list[dict[str, Any]]:
        """The paper's annotation of this episode's trajectory so far."""
        return annotate_trajectory(self.world, self.positions[row, : self.steps[row]], ANNOTATION_EVERY)

    def episode_metrics(self, state: np.ndarray, row: int) -> dict[str, Any]:
        """What the paper reports per evaluated policy."""
        final_distance = float(self.distance_to_goal(state[row : row + 1])[0])
        return {
            "bd": self.behaviour_descriptor(state, row),
            "fitness": float(self.fitness[row]),
            "reached_goal": bool(self.reached[row]),
            "task_solved": final_distance < self.world.layout.solved_radius,
            "final_distance_to_goal": final_distance,
            "steps": int(self.steps[row]),
        }
