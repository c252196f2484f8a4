"""Top-down floor plans of a Housekeep world: the scene's geometry in metres, its projection to pixels, and
the small ``image`` observation (rooms, receptacles, known objects, robots; no text).

The labelled floor plan that ``render()`` returns is drawn by ``floor_plan_view`` from the same geometry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from textenvs.envs.housekeep.world import HELD, World

IMAGE_SIZE = 128
_MARGIN_M = 0.6  # around the outermost receptacle or room centre
_ROOM_PAD_M = 0.4  # a room's box: its receptacles' positions grown by this much

ROOM_RGB = np.array(
    [[230, 220, 200], [200, 225, 235], [215, 235, 205], [240, 215, 215], [225, 215, 240], [240, 235, 200]],
    dtype=np.uint8,
)
UNVISITED_RGB = np.array([120, 120, 120], dtype=np.uint8)
RECEPTACLE_RGB = np.array([90, 70, 50], dtype=np.uint8)
CORRECT_RGB = np.array([40, 170, 60], dtype=np.uint8)
MISPLACED_RGB = np.array([210, 40, 40], dtype=np.uint8)
ROBOT_RGB = np.array([30, 80, 220], dtype=np.uint8)
BACKGROUND_RGB = np.array([40, 40, 40], dtype=np.uint8)
_WHITE = np.array([255, 255, 255], dtype=np.uint8)
_ROBOT_STEP = 8  # pixels between robots side by side (a robot is 7 wide)


@dataclass(frozen=True)
class PlanGeometry:
    """A scene's floor plan in metres (x, z): the drawn extent and each room's box."""

    low: np.ndarray
    high: np.ndarray
    room_boxes: tuple[tuple[np.ndarray, np.ndarray], ...]

    @classmethod
    def of(cls, world: World) -> PlanGeometry:
        """Rooms span their receptacles (the scene files have no room outlines); an empty room is its centre."""
        points = np.array([r.position for r in world.receptacles] + [r.center for r in world.rooms])
        boxes = []
        for room, members in enumerate(world.room_receptacles):
            pts = np.array([world.receptacles[i].position for i in members] or [world.rooms[room].center])
            boxes.append((pts.min(0) - _ROOM_PAD_M, pts.max(0) + _ROOM_PAD_M))
        return cls(points.min(0) - _MARGIN_M, points.max(0) + _MARGIN_M, tuple(boxes))


class Projection:
    """Metres to pixel (row, col) inside a ``height`` x ``width`` box at (``top``, ``left``): x runs along
    columns, z along rows, one scale for both (the scene's aspect kept), the plan centred in the box."""

    def __init__(self, geometry: PlanGeometry, top: int, left: int, height: int, width: int):
        extent = geometry.high - geometry.low
        self.scale = min((width - 1) / float(extent[0]), (height - 1) / float(extent[1]))
        self.low = geometry.low
        self.offset = np.array(
            [left + (width - 1 - extent[0] * self.scale) / 2, top + (height - 1 - extent[1] * self.scale) / 2]
        )

    def pixel(self, xz) -> tuple[int, int]:
        col, row = ((np.asarray(xz, dtype=np.float64) - self.low) * self.scale + self.offset).round().astype(int)
        return int(row), int(col)


def side_by_side(anchors: Iterable[tuple[int, int]], spacing: int) -> list[tuple[int, int]]:
    """Marker centres (x, y): each anchor moved right in ``spacing`` steps until it is at least ``spacing``
    away (in x or y) from every earlier marker, so objects on one receptacle, or on receptacles drawn at
    the same place, line up instead of covering each other."""
    placed: list[tuple[int, int]] = []
    for x, y in anchors:
        while any(abs(x - px) < spacing and abs(y - py) < spacing for px, py in placed):
            x += spacing
        placed.append((x, y))
    return placed


def robot_slots(world: World) -> list[int]:
    """Where each robot is drawn, in robot widths left of its position: robots at one point stand side by
    side (the k-th earlier one there counts k), and robots at a receptacle's position (they went to it, to an
    object on it, or to a room whose centre it is) one more, so a robot hides neither a receptacle, its
    objects (drawn on the right) nor another robot."""
    receptacle_at = {rec.position for rec in world.receptacles}
    slots, earlier = [], {}
    for robot in world.robots:
        point = (robot.x, robot.z)
        slots.append(earlier.get(point, 0) + (point in receptacle_at))
        earlier[point] = earlier.get(point, 0) + 1
    return slots


def object_color(world: World, obj: int) -> np.ndarray:
    """Green on a correct receptacle, red elsewhere (a held object counts as misplaced)."""
    return CORRECT_RGB if world.is_correct(obj) else MISPLACED_RGB


class FloorPlan:
    """The ``image`` observation: what robot ``robot_id`` knows, drawn at ``size`` x ``size`` without text.

    Rooms are filled boxes (grey until visited), receptacles 3x3 brown squares, each known object a 3x3
    square one pixel right of its receptacle (green when correct, red when misplaced; several side by side),
    every robot a blue 5x5 square in a white frame whose centre shows the colour of the object it holds (a
    robot at a receptacle is drawn just left of it, see ``robot_slots``).
    """

    def __init__(self, world: World, size: int = IMAGE_SIZE):
        self.size = size
        self.geometry = PlanGeometry.of(world)
        self.projection = Projection(self.geometry, 0, 0, size, size)

    def draw(self, world: World, robot_id: int = 0) -> np.ndarray:
        image = np.empty((self.size, self.size, 3), dtype=np.uint8)
        image[:] = BACKGROUND_RGB
        robot = world.robots[robot_id]
        pixel = self.projection.pixel
        for room, (low, high) in enumerate(self.geometry.room_boxes):
            (r0, c0), (r1, c1) = pixel(low), pixel(high)
            self._fill(image, r0, c0, r1, c1, ROOM_RGB[room % len(ROOM_RGB)] if robot.visited[room] else UNVISITED_RGB)
        for rec in world.receptacles:
            self._square(image, pixel(rec.position), 1, RECEPTACLE_RGB)
        known = [
            obj for obj in range(len(world.location)) if robot.is_known_object[obj] and world.location[obj] != HELD
        ]
        anchors = []
        for obj in known:
            row, col = pixel(world.receptacles[world.location[obj]].position)
            anchors.append((col + 4, row))
        for obj, (col, row) in zip(known, side_by_side(anchors, 4), strict=True):
            self._square(image, (row, col), 1, object_color(world, obj))
        for other, slot in zip(world.robots, robot_slots(world), strict=True):
            row, col = pixel((other.x, other.z))
            center = row, col - slot * _ROBOT_STEP
            self._square(image, center, 3, _WHITE)
            self._square(image, center, 2, ROBOT_RGB)
            if other.holding != HELD:
                self._square(image, center, 1, object_color(world, other.holding))
        return image

    def _square(self, image: np.ndarray, center: tuple[int, int], radius: int, color: np.ndarray) -> None:
        row, col = center
        self._fill(image, row - radius, col - radius, row + radius, col + radius, color)

    def _fill(self, image: np.ndarray, r0: int, c0: int, r1: int, c1: int, color: np.ndarray) -> None:
        """Fill rows r0..r1 and columns c0..c1 (inclusive), clipped to the image."""
        image[max(r0, 0) : max(r1 + 1, 0), max(c0, 0) : max(c1 + 1, 0)] = color
