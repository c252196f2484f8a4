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
#: The captioner finds near objects among those listed for the robot's cell of this many pixels.
GRID_CELL_PX = 10
WALL_COLOUR = "black"
FLOOR_COLOUR = "white"

_COMPASS = ("east", "north-east", "north", "north-west", "west", "south-west", "south", "south-east")
_COMPASS_SECTOR = math.pi / 4
#: An object as the captioner keeps it: pixel x, y and its phrase for each (vertical, horizontal) side.
_Object = tuple[float, float, dict[tuple[str, str], str]]


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
        if distance < NEAR_OBJECT_PX:
            near[object_phrase(name, *object_side(px, py, ox, oy))] = distance
    return near


def object_side(px: float, py: float, ox: float, oy: float) -> tuple[str, str]:
    """The robot's side of an object: (vertical, horizontal), "" inside the dead zone."""
    horizontal = "west" if px < ox - DIRECTION_DEAD_ZONE_PX else "east" if px > ox + DIRECTION_DEAD_ZONE_PX else ""
    vertical = "north" if py < oy - DIRECTION_DEAD_ZONE_PX else "south" if py > oy + DIRECTION_DEAD_ZONE_PX else ""
    return vertical, horizontal


def object_phrase(name: str, vertical: str, horizontal: str) -> str:
    """The paper's phrase for the robot's side of an object, its double space included."""
    return f"to the {vertical} {horizontal} of {name}" if vertical or horizontal else f"on {name}"


def tile_colour(world: World, i: int, j: int) -> str:
    """The paper's tiling colour of pixel (i, j): walls black, tiles by 60-px squares, other floor white."""
    size = world.size
    if not (0 <= i < size and 0 <= j < size):
        return WALL_COLOUR
    return tile_colours(world)[j * size + i]


@functools.lru_cache(maxsize=8)
def tile_colours(world: World) -> tuple[str, ...]:
    """The colour of every map pixel, row by row (``[j * size + i]``), computed once per world."""
    size = world.size
    tiling = world.layout.tiling
    names = [WALL_COLOUR, FLOOR_COLOUR]
    index = np.where(world.obstacles, 0, 1)
    if tiling is not None:
        rows, columns = len(tiling.colours), len(tiling.colours[0])
        tile = (np.arange(size) - tiling.margin) // tiling.size  # a pixel's tile row/column, < 0 before the margin
        for tj in range(rows):
            for ti in range(columns):
                names.append(tiling.colours[tj][ti])
                inside = (tile[:, None] == tj) & (tile[None, :] == ti)
                index[inside & ~world.obstacles] = len(names) - 1
    return tuple(names[k] for k in index.ravel().tolist())


@functools.lru_cache(maxsize=8)
def tile_places(world: World) -> tuple[str, ...]:
    """``"on a <colour> tile"`` for every map pixel, row by row, as the captioner says where it is."""
    colours = tile_colours(world)
    places = {colour: f"on a {colour} tile" for colour in set(colours)}
    return tuple(places[colour] for colour in colours)


_WALL_PLACE = f"on a {WALL_COLOUR} tile"


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
        self.two_thirds = 2 * self.third  # exact: ``v // third >= 2`` exactly when ``v >= 2 * third``
        self.places = tuple(tuple(f"in the {region} of the maze" for region in row) for row in _REGIONS)
        self.goal_x, self.goal_y = layout.goal
        self.goal_radius = layout.goal_diameter / 2
        self.laser_range = layout.laser_range
        # positive laser angles turn clockwise on the map (y down): the robot's right
        self.laser_sides = tuple(
            "ahead" if angle == 0 else f"{abs(angle):.0f} degrees to the {'right' if angle > 0 else 'left'}"
            for angle in layout.laser_angles_deg
        )
        # per laser: its side and the phrase without a hit
        self._laser_phrases = tuple((side, f"{side}: nothing within range") for side in self.laser_sides)
        self.tile_places = tile_places(world) if layout.tiling is not None else ()
        # per object: its pixel position and its phrase for every side, double spaces collapsed
        sides = [(v, h) for v in ("north", "south", "") for h in ("west", "east", "")]
        self.objects = tuple(
            (float(ox), float(oy), {side: " ".join(object_phrase(name, *side).split()) for side in sides})
            for name, (ox, oy) in layout.objects
        )
        self.objects_by_cell = objects_by_cell(self.objects, world.size)

    def describe(self, pose: Sequence[float], sensors: Sequence[float], hit_wall: bool) -> str:
        """The paragraph for a robot at ``pose`` (x, y, theta) with fastsim_gym's ``sensors``. Pass plain
        floats (``array.tolist()``): NumPy scalars format several times slower."""
        x, y, theta = pose
        px, py = x * self.scale, y * self.scale
        if self.tile_places:
            i, j, size = int(px), int(py), self.size
            place = self.tile_places[j * size + i] if 0 <= i < size and 0 <= j < size else _WALL_PLACE
        else:
            # the region's row and column: min(int(v // third), 2), by comparisons for v >= 0
            third, two_thirds = self.third, self.two_thirds
            row = min(int(py // third), 2) if py < 0 else 0 if py < third else 1 if py < two_thirds else 2
            column = min(int(px // third), 2) if px < 0 else 0 if px < third else 1 if px < two_thirds else 2
            place = self.places[row][column]
        near = ""
        if self.objects:
            cell = (int(px // GRID_CELL_PX), int(py // GRID_CELL_PX))
            objects = [
                phrases[object_side(px, py, ox, oy)]
                for ox, oy, phrases in self.objects_by_cell.get(cell, self.objects)
                if math.hypot(ox - px, oy - py) < NEAR_OBJECT_PX
            ]
            if objects:
                near = ", " + _join(objects)
        gx, gy = self.goal_x, self.goal_y
        goal_distance = math.hypot(gx - x, gy - y)
        laser_range = self.laser_range
        lasers = [
            no_hit if reading >= laser_range else f"{side}: a wall at {reading:.0f}"
            for (side, no_hit), reading in zip(self._laser_phrases, sensors, strict=False)
        ]
        goal = (
            f"The goal is {goal_distance:.0f} units away to the {compass(gx - x, y - gy)}."
            if goal_distance > self.goal_radius
            else "You are on the goal."
        )
        ending = _ENDINGS[sensors[-2] > 0, sensors[-1] > 0, bool(hit_wall)]
        return (
            f"You are at ({px:.1f}, {self.size - py:.1f}) {place}{near}, "
            f"facing {compass(math.cos(theta), -math.sin(theta))}. {goal} Lasers: {'; '.join(lasers)}.{ending}"
        )


def _ending(left: bool, right: bool, hit_wall: bool) -> str:
    """The description's last sentences: pressed bumpers, then a refused move."""
    text = ""
    if left or right:
        pressed = "left and right bumpers are" if left and right else f"{'left' if left else 'right'} bumper is"
        text += f" Your {pressed} pressed."
    if hit_wall:
        text += " You bumped into a wall and did not move."
    return text


#: ``_ENDINGS[left bumper, right bumper, hit wall]``
_ENDINGS = {
    (left, right, hit): _ending(left, right, hit)
    for left in (False, True)
    for right in (False, True)
    for hit in (False, True)
}


def objects_by_cell(objects: tuple[_Object, ...], size: int) -> dict[tuple[int, int], tuple[_Object, ...]]:
    """For every ``GRID_CELL_PX`` square cell of the map, the objects (in order) that may be near some
    point of it: those within ``NEAR_OBJECT_PX`` (plus a pixel against rounding) of the cell."""
    cells = {}
    for ci in range(math.ceil(size / GRID_CELL_PX)):
        for cj in range(math.ceil(size / GRID_CELL_PX)):
            x0, y0, x1, y1 = ci * GRID_CELL_PX, cj * GRID_CELL_PX, (ci + 1) * GRID_CELL_PX, (cj + 1) * GRID_CELL_PX
            cells[ci, cj] = tuple(
                o
                for o in objects
                if math.hypot(max(x0 - o[0], 0, o[0] - x1), max(y0 - o[1], 0, o[1] - y1)) < NEAR_OBJECT_PX + 1
            )
    return cells


def _region_name(row: str, column: str) -> str:
    if not row and not column:
        return "centre"
    return f"{row}-{column} part" if row and column else f"{row or column} part"


#: The maze's regions by third of the map: ``_REGIONS[row][column]``, rows from the top.
_REGIONS = tuple(tuple(_region_name(row, column) for column in ("west", "", "east")) for row in ("north", "", "south"))


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
