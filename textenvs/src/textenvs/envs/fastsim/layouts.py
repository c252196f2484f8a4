"""The two fastsim worlds: fastsim_gym's hard maze and the paper's household apartment."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The ``(x, y)`` pixel positions (200-px map frame, y down) of the apartment's objects in the paper.
HOUSEHOLD_OBJECTS: tuple[tuple[str, tuple[int, int]], ...] = (
    ("cactus", (180, 133)),
    ("fan", (60, 60)),
    ("sofa", (167, 20)),
    ("bed", (164, 174)),
    ("fridge", (22, 172)),
    ("cabinet", (23, 24)),
    ("chair", (98, 175)),
    ("statue", (120, 95)),
    ("file_cabinet", (140, 62)),
    ("bathtub", (58, 103)),
    ("table", (123, 175)),
    ("stove", (64, 175)),
)

#: The paper's 3x3 floor tiling, rows from the top.
HOUSEHOLD_TILES: tuple[tuple[str, ...], ...] = (
    ("red", "green", "blue"),
    ("yellow", "orange", "purple"),
    ("pink", "gray", "white"),
)


@dataclass(frozen=True)
class Tiling:
    """Square colour tiles covering map pixels ``[margin, margin + 3 * size)`` on both axes."""

    colours: tuple[tuple[str, ...], ...]
    margin: int
    size: int


@dataclass(frozen=True)
class Layout:
    """A fastsim world as fastsim_gym's XML and the paper describe it (real units unless stated)."""

    name: str
    map_asset: str
    real_size: float = 600.0
    start: tuple[float, float, float] = (60.0, 450.0, math.radians(45.0))
    goal: tuple[float, float] = (60.0, 60.0)
    goal_diameter: float = 7.0
    robot_radius: float = 10.0
    laser_angles_deg: tuple[float, ...] = (45.0, 0.0, -45.0)
    laser_range: float = 100.0
    max_speed: float = 4.0
    sticky_walls: bool = False
    #: round wheel speeds to this many decimals before clipping (the paper's household env: 1)
    action_decimals: int | None = None
    objects: tuple[tuple[str, tuple[int, int]], ...] = ()
    tiling: Tiling | None = None
    #: the paper's "task solved" radius around the goal, for the final position (NavigationEnv)
    solved_radius: float = 42.0
    mission: str = ""


LAYOUTS: dict[str, Layout] = {
    "hardmaze": Layout(
        name="hardmaze",
        map_asset="fastsim/maps/maze_hard.pbm",
        mission="Drive the robot through the maze to the goal in its top left corner.",
    ),
    "household": Layout(
        name="household",
        map_asset="fastsim/maps/maze_19_2.pbm",
        action_decimals=1,
        objects=HOUSEHOLD_OBJECTS,
        tiling=Tiling(colours=HOUSEHOLD_TILES, margin=10, size=60),
        mission="Drive the robot through the apartment to the goal by the cabinet, on the red tiles.",
    ),
}


def get_layout(name: str) -> Layout:
    """The layout called ``name``; a ValueError naming the valid ones otherwise."""
    if name not in LAYOUTS:
        raise ValueError(f"layout={name!r} is not a fastsim layout; choose one of {', '.join(map(repr, LAYOUTS))}")
    return LAYOUTS[name]
