"""Text for a robot's situation, in the terms of the language-grounded QD paper.

Positions in text and annotations use the paper's frame: map pixels (200 per side), origin bottom left,
y up, so "north" is up. The simulator's frame is real units (600 per side), origin top left, y down.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from textenvs.envs.fastsim.layouts import Layout
from textenvs.envs.fastsim.simulator import World

#: The paper's radius (pixels) within which an object is "near", and its dead zone for directions.
NEAR_OBJECT_PX = 30.0
DIRECTION_DEAD_ZONE_PX = 6.0
WALL_COLOUR = "black"
FLOOR_COLOUR = "white"

_COMPASS = ("east", "north-east", "north", "north-west", "west", "south-west", "south", "south-east")
_COMPASS_SECTOR = math.pi / 4


def to_pixels(world: World, x: float, y: float) -> tuple[float, float]:
    """Real (simulator) coordinates to map pixels (y down), as the paper scales trajectories."""
    scale = world.size / world.layout.real_size
    return x * scale, y * scale


def paper_position(world: World, x: float, y: float) -> list[float]:
    """The paper's annotation position: pixels with the y axis flipped (origin bottom left)."""
    px, py = to_pixels(world, x, y)
    return [px, world.size - py]


def near_objects(layout: Layout, px: float, py: float) -> dict[str, float]:
    """The paper's ``point_near_objects``: ``{"to the <v> <h> of <name>" | "on <name>": distance}``.

    Directions are the robot's side of the object; an empty component leaves the paper's double
    space (e.g. "to the north  of fan").
    """
    near: dict[str, float] = {}
    for name, (ox, oy) in layout.objects:
        distance = math.hypot(ox - px, oy - py)
        if distance >= NEAR_OBJECT_PX:
            continue
        horizontal = "west" if px < ox - DIRECTION_DEAD_ZONE_PX else "east" if px > ox + DIRECTION_DEAD_ZONE_PX else ""
        vertical = "north" if py < oy - DIRECTION_DEAD_ZONE_PX else "south" if py > oy + DIRECTION_DEAD_ZONE_PX else ""
        phrase = f"to the {vertical} {horizontal} of {name}" if vertical or horizontal else f"on {name}"
        near[phrase] = distance
    return near


def tile_colour(world: World, i: int, j: int) -> str:
    """The paper's tiling colour of pixel (i, j): walls black, tiles by 60-px squares, other floor white."""
    if not (0 <= i < world.size and 0 <= j < world.size) or world.obstacles[j, i]:
        return WALL_COLOUR
    tiling = world.layout.tiling
    if tiling is None:
        return FLOOR_COLOUR
    ti, tj = (i - tiling.margin) // tiling.size, (j - tiling.margin) // tiling.size
    if i >= tiling.margin and j >= tiling.margin and ti < len(tiling.colours[0]) and tj < len(tiling.colours):
        return tiling.colours[tj][ti]
    return FLOOR_COLOUR


def area_info(world: World, i: int, j: int) -> list[Any]:
    """The paper's ``get_area_info``: ``[colour, {side: [next colour, pixel index where it starts]}]``
    for the sides right, left, down and up (image directions)."""
    colour = tile_colour(world, i, j)
    sides: dict[str, list[Any]] = {}
    if colour == WALL_COLOUR:  # unreachable for a robot centre (the paper raises here)
        return [colour, sides]
    for side, (di, dj) in (("right", (1, 0)), ("left", (-1, 0)), ("down", (0, 1)), ("up", (0, -1))):
        ni, nj = i, j
        while tile_colour(world, ni, nj) == colour:  # walls and the map's outside end every walk
            ni, nj = ni + di, nj + dj
        sides[side] = [tile_colour(world, ni, nj), ni if di else nj]
    return [colour, sides]


def annotate_points(world: World, points: Sequence[tuple[int, float, float]]) -> list[dict[str, Any]]:
    """The paper's annotation of ``(timestep, x, y)`` points (real units): each ``{"timestep", "pos"
    (y flipped), "semantics", "colors"}`` (``colors`` is None without tiles)."""
    entries = []
    for t, x, y in points:
        px, py = to_pixels(world, x, y)
        colours = area_info(world, int(px), int(py)) if world.layout.tiling is not None else None
        entries.append(
            {
                "timestep": t,
                "pos": paper_position(world, x, y),
                "semantics": near_objects(world.layout, px, py),
                "colors": colours,
            }
        )
    return entries


def annotate_trajectory(world: World, positions: np.ndarray, every: int = 40) -> list[dict[str, Any]]:
    """The paper's ``annotate_traj(..., step=every)`` of real positions [T, 2] (e.g. a population's
    recorded trajectories): every ``every``-th step plus the last (listed twice when it is one of them)."""
    if len(positions) == 0:
        return []
    steps = [*range(0, len(positions), every), len(positions) - 1]
    return annotate_points(world, [(t, float(positions[t, 0]), float(positions[t, 1])) for t in steps])


def compass(dx: float, dy_up: float) -> str:
    """One of eight compass directions for a vector in a y-up frame."""
    sector = round(math.atan2(dy_up, dx) / _COMPASS_SECTOR) % 8
    return _COMPASS[sector]


class Captioner:
    """Describes robots of one world in one paragraph each: where (tile colour or region of the maze,
    nearby objects), heading, goal bearing, laser readings and bumpers. Constants are computed once."""

    def __init__(self, world: World):
        layout = world.layout
        self.world = world
        self.layout = layout
        self.scale = world.size / layout.real_size
        self.size = world.size
        self.third = world.size / 3
        self.goal_x, self.goal_y = layout.goal
        self.goal_radius = layout.goal_diameter / 2
        self.laser_range = layout.laser_range
        # positive laser angles turn clockwise on the map (y down): the robot's right
        self.laser_sides = tuple(
            "ahead" if angle == 0 else f"{abs(angle):.0f} degrees to the {'right' if angle > 0 else 'left'}"
            for angle in layout.laser_angles_deg
        )
        # per laser: the phrase without a hit, and the format of a hit (filled with the distance)
        self._laser_phrases = tuple(
            (f"{side}: nothing within range", f"{side}: a wall at {{:.0f}}") for side in self.laser_sides
        )

    def describe(self, pose: Sequence[float], sensors: Sequence[float], hit_wall: bool) -> str:
        """The paragraph for a robot at ``pose`` (x, y, theta) with fastsim_gym's ``sensors``. Pass plain
        floats (``array.tolist()``): NumPy scalars format several times slower."""
        x, y, theta = pose
        px, py = x * self.scale, y * self.scale
        layout = self.layout
        if layout.tiling is not None:
            place = f"on a {tile_colour(self.world, int(px), int(py))} tile"
        else:
            third = self.third
            place = f"in the {_REGIONS[min(int(py // third), 2)][min(int(px // third), 2)]} of the maze"
        where = f"You are at ({px:.1f}, {self.size - py:.1f}) {place}"
        if layout.objects:
            objects = [" ".join(phrase.split()) for phrase in near_objects(layout, px, py)]
            if objects:
                where += ", " + _join(objects)
        gx, gy = self.goal_x, self.goal_y
        goal_distance = math.hypot(gx - x, gy - y)
        laser_range = self.laser_range
        lasers = [
            no_hit if reading >= laser_range else hit.format(reading)
            for (no_hit, hit), reading in zip(self._laser_phrases, sensors, strict=False)
        ]
        goal = (
            f"The goal is {goal_distance:.0f} units away to the {compass(gx - x, y - gy)}."
            if goal_distance > self.goal_radius
            else "You are on the goal."
        )
        text = f"{where}, facing {compass(math.cos(theta), -math.sin(theta))}. {goal} Lasers: {'; '.join(lasers)}."
        left, right = sensors[-2] > 0, sensors[-1] > 0
        if left or right:
            pressed = "left and right bumpers are" if left and right else f"{'left' if left else 'right'} bumper is"
            text += f" Your {pressed} pressed."
        if hit_wall:
            text += " You bumped into a wall and did not move."
        return text


def _region_name(row: str, column: str) -> str:
    if not row and not column:
        return "centre"
    return f"{row}-{column} part" if row and column else f"{row or column} part"


#: The maze's regions by third of the map: ``_REGIONS[row][column]``, rows from the top.
_REGIONS = tuple(tuple(_region_name(row, column) for column in ("west", "", "east")) for row in ("north", "", "south"))


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
