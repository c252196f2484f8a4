"""A top-down floor plan: rooms (the extent of their receptacles), receptacles, objects and robots."""

from __future__ import annotations

import numpy as np

from textenvs.envs.housekeep.world import HELD, World

IMAGE_SIZE = 128
_MARGIN_M = 0.6
_ROOM_COLORS = np.array(
    [[230, 220, 200], [200, 225, 235], [215, 235, 205], [240, 215, 215], [225, 215, 240], [240, 235, 200]],
    dtype=np.uint8,
)
_UNVISITED = np.array([120, 120, 120], dtype=np.uint8)
_RECEPTACLE = np.array([90, 70, 50], dtype=np.uint8)
_CORRECT = np.array([40, 170, 60], dtype=np.uint8)
_MISPLACED = np.array([210, 40, 40], dtype=np.uint8)
_ROBOT = np.array([30, 80, 220], dtype=np.uint8)
_BACKGROUND = np.array([40, 40, 40], dtype=np.uint8)


class FloorPlan:
    """Maps scene metres to pixels once per episode and draws the current state."""

    def __init__(self, world: World, size: int = IMAGE_SIZE):
        self.size = size
        points = np.array([r.position for r in world.receptacles] + [r.center for r in world.rooms])
        low, high = points.min(0) - _MARGIN_M, points.max(0) + _MARGIN_M
        self.low = low
        self.scale = (size - 1) / float(max(high - low))
        self.room_boxes = []
        for room in range(len(world.rooms)):
            members = [world.receptacles[i].position for i in world.room_receptacles[room]] or [
                world.rooms[room].center
            ]
            pts = np.array(members)
            self.room_boxes.append((self.pixel(pts.min(0) - 0.4), self.pixel(pts.max(0) + 0.4)))

    def pixel(self, xz) -> tuple[int, int]:
        col, row = ((np.asarray(xz, dtype=np.float64) - self.low) * self.scale).round().astype(int)
        return int(np.clip(row, 0, self.size - 1)), int(np.clip(col, 0, self.size - 1))

    def draw(self, world: World, robot_id: int = 0) -> np.ndarray:
        image = np.empty((self.size, self.size, 3), dtype=np.uint8)
        image[:] = _BACKGROUND
        robot = world.robots[robot_id]
        for room, ((r0, c0), (r1, c1)) in enumerate(self.room_boxes):
            color = _ROOM_COLORS[room % len(_ROOM_COLORS)] if robot.visited[room] else _UNVISITED
            image[r0 : r1 + 1, c0 : c1 + 1] = color
        for rec in world.receptacles:
            self._square(image, self.pixel(rec.position), 1, _RECEPTACLE)
        for obj, location in enumerate(world.location):
            if location != HELD and robot.is_known_object[obj]:
                row, col = self.pixel(world.receptacles[location].position)
                color = _CORRECT if world.is_correct(obj) else _MISPLACED
                self._square(image, (row - 2 + (obj % 3) * 2, col + 2), 0, color)
        for other in world.robots:
            self._square(image, self.pixel((other.x, other.z)), 2, _ROBOT)
        return image

    def _square(self, image: np.ndarray, center: tuple[int, int], radius: int, color: np.ndarray) -> None:
        row, col = center
        r0, r1 = max(row - radius, 0), min(row + radius + 1, self.size)
        c0, c1 = max(col - radius, 0), min(col + radius + 1, self.size)
        image[r0:r1, c0:c1] = color
