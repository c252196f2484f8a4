"""Text for a robot's situation, in the terms of the language-grounded QD paper.

Positions in text and annotations use the paper's frame: map pixels (200 per side), origin bottom left,
y up, so "north" is up. The simulator's frame is real units (600 per side), origin top left, y down.
"""

from __future__ import annotations

import functools
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


def annotate_trajectory(world: World, positions: np.ndarray, every: int = 40) -> list[dict[str, Any]]:
    """The paper's trajectory annotation of real positions [T, 2]: every ``every``-th step plus the last,
    each ``{"timestep", "pos" (y flipped), "semantics", "colors"}`` (``colors`` is None without tiles)."""
    if len(positions) == 0:
        return []
    steps = [*range(0, len(positions), every), len(positions) - 1]
    entries = []
    for t in steps:
        x, y = float(positions[t, 0]), float(positions[t, 1])
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


def compass(dx: float, dy_up: float) -> str:
    """One of eight compass directions for a vector in a y-up frame."""
    sector = round(math.atan2(dy_up, dx) / (math.pi / 4)) % 8
    return _COMPASS[sector]


def describe_robot(world: World, pose: Sequence[float], sensors: Sequence[float], hit_wall: bool) -> str:
    """What the robot's situation is, in one paragraph: where (tile colour, nearby objects, region),
    heading, goal bearing, laser readings and bumpers. Pass plain floats (``array.tolist()``): NumPy
    scalars format several times slower."""
    layout = world.layout
    x, y, theta = pose
    px, py = to_pixels(world, x, y)
    position = paper_position(world, x, y)
    where = f"You are at ({position[0]:.1f}, {position[1]:.1f})"
    if layout.tiling is not None:
        where += f" on a {tile_colour(world, int(px), int(py))} tile"
    else:
        where += f" in the {_region(world, px, py)} of the maze"
    objects = [" ".join(phrase.split()) for phrase in near_objects(layout, px, py)]
    if objects:
        where += ", " + _join(objects)
    gx, gy = layout.goal
    goal_distance = math.hypot(gx - x, gy - y)
    sentences = [
        f"{where}, facing {compass(math.cos(theta), -math.sin(theta))}.",
        f"The goal is {goal_distance:.0f} units away to the {compass(gx - x, y - gy)}."
        if goal_distance > layout.goal_diameter / 2
        else "You are on the goal.",
        _laser_sentence(layout, sensors),
    ]
    pressed = [side for side, value in zip(("left", "right"), sensors[-2:], strict=True) if value > 0]
    if pressed:
        sentences.append(f"Your {' and '.join(pressed)} bumper{'s are' if len(pressed) == 2 else ' is'} pressed.")
    if hit_wall:
        sentences.append("You bumped into a wall and did not move.")
    return " ".join(sentences)


@functools.lru_cache(maxsize=8)
def _laser_sides(layout: Layout) -> tuple[str, ...]:
    # positive laser angles turn clockwise on the map (y down): the robot's right
    return tuple(
        "ahead" if angle == 0 else f"{abs(angle):.0f} degrees to the {'right' if angle > 0 else 'left'}"
        for angle in layout.laser_angles_deg
    )


def _laser_sentence(layout: Layout, sensors: Sequence[float]) -> str:
    far = layout.laser_range
    parts = [
        f"{side}: nothing within range" if reading >= far else f"{side}: a wall at {reading:.0f}"
        for side, reading in zip(_laser_sides(layout), sensors, strict=False)
    ]
    return "Lasers: " + "; ".join(parts) + "."


def _region(world: World, px: float, py: float) -> str:
    third = world.size / 3
    row = ("north", "", "south")[min(int(py // third), 2)]
    column = ("west", "", "east")[min(int(px // third), 2)]
    if not row and not column:
        return "centre"
    return f"{row}-{column} part" if row and column else f"{row or column} part"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
