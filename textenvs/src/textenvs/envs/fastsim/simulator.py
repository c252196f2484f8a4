"""The fastsim world and a batch of robots stepped together (one robot is a batch of one)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from textenvs.data import read_asset
from textenvs.envs.fastsim import kernels
from textenvs.envs.fastsim.layouts import Layout, get_layout
from textenvs.envs.fastsim.pbm import parse_pbm, physics_pixels

#: Columns of ``RobotBatch.flags``.
LEFT_BUMPER, RIGHT_BUMPER, COLLISION, HIT_WALL = range(4)


@dataclass(frozen=True, eq=False)
class World:
    """A loaded layout: its obstacle mask (as drawn) and the pixels the physics reads."""

    layout: Layout
    obstacles: np.ndarray  # bool[size, size], True = wall, as the PBM file says
    pixels: np.ndarray  # uint8[size * size], libfastsim's view (see pbm.physics_pixels)
    room: np.ndarray  # int64[size * size], Chebyshev distance to the nearest obstacle or the outside
    fx: np.float32  # pixels per real unit
    maps: np.ndarray  # int64[2, size * size]: pixels and room stacked, passed to the kernel as one argument

    @property
    def size(self) -> int:
        return self.obstacles.shape[1]

    @property
    def laser_angles(self) -> np.ndarray:
        # the XML's degrees become radians as libfastsim computes them: float(deg / 180) * pi
        degrees = np.asarray(self.layout.laser_angles_deg, np.float32)
        return (degrees / np.float32(180.0)).astype(np.float64) * np.pi

    def real_to_pixel(self, value: float) -> int:
        return kernels.real_to_pixel(np.float32(value), self.fx)


def load_world(layout: Layout | str, data_dir: str | os.PathLike[str] | None = None) -> World:
    """Load a layout's map; worlds are shared (and read-only) per layout and map content."""
    layout = get_layout(layout) if isinstance(layout, str) else layout
    return _load_world(layout, read_asset(layout.map_asset, data_dir=data_dir))


@functools.lru_cache(maxsize=8)
def _load_world(layout: Layout, map_bytes: bytes) -> World:
    obstacles = parse_pbm(map_bytes, layout.map_asset)
    pixels = physics_pixels(obstacles)
    room = free_room(pixels.reshape(obstacles.shape)).ravel()
    maps = np.stack([pixels, room]).astype(np.int64)
    for array in (obstacles, pixels, room, maps):
        array.setflags(write=False)
    fx = np.float32(obstacles.shape[1]) / np.float32(layout.real_size)
    return World(layout, obstacles, pixels, room, fx, maps)


def free_room(blocked: np.ndarray) -> np.ndarray:
    """Chebyshev distance from every pixel to the nearest blocked pixel, the map's outside counting as
    blocked (0 on obstacles): the laser walk jumps over pixels this says are free."""
    size = blocked.shape[0]
    room = np.where(blocked != 0, 0, size).astype(np.int64)
    while True:
        padded = np.pad(room, 1, constant_values=0)
        nearest = np.min([padded[dj : dj + size, di : di + size] for dj in range(3) for di in range(3)], axis=0)
        updated = np.minimum(room, nearest + 1)
        if np.array_equal(updated, room):
            return room
        room = updated


class RobotBatch:
    """``n`` robots in one world, stepped by one kernel call.

    State lives in arrays: ``state`` float32[n, 3] (x, y, theta in real units, y down), ``lasers``
    float32[n, n_lasers] (libfastsim's distances, -1 = nothing in range), ``flags`` bool[n, 4] (left
    bumper, right bumper, libfastsim's collision flag — set by any collision since reset —, and whether
    this step's move was refused by a wall) and ``sensors`` float32[n, n_lasers + 2] (fastsim_gym's
    observation: lasers with -1 => range, clipped to [0, range], then the left and right bumpers).
    ``state``, ``lasers`` and ``sensors`` are column ranges of one array (not contiguous for n > 1), so
    that the kernel takes them as one argument: each argument costs time at every call from Python.
    """

    def __init__(self, world: World, n: int):
        if n < 1:
            raise ValueError(f"a robot batch needs n >= 1 robots, got {n}")
        layout = world.layout
        n_lasers = len(layout.laser_angles_deg)
        self.world = world
        self.n = n
        self._values = np.zeros((n, 3 + n_lasers + n_lasers + 2), np.float32)
        self.state = self._values[:, :3]
        self.lasers = self._values[:, 3 : 3 + n_lasers]
        self.sensors = self._values[:, 3 + n_lasers :]
        self.flags = np.zeros((n, 4), bool)
        self._all = np.arange(n)
        self._still = np.zeros((n, 2))
        decimals = -1 if layout.action_decimals is None else layout.action_decimals
        self._config = np.array(
            [
                world.size,
                world.fx,
                np.float32(layout.robot_radius),
                np.float32(layout.laser_range),
                layout.sticky_walls,
                layout.max_speed,
                decimals,
                *world.laser_angles.astype(np.float32),  # float32 values, exact in float64
            ],
            np.float64,
        )

    def reset(self, mask: np.ndarray | None = None, pose: tuple[float, float, float] | None = None) -> None:
        """fastsim_gym's reset for the robots in ``mask`` (all by default): clear the flags, put the robot
        at ``pose`` (the layout's start by default) and ``move(0, 0)`` once to read the sensors."""
        rows = self._all if mask is None else np.flatnonzero(mask)
        self.state[rows] = np.asarray(pose if pose is not None else self.world.layout.start, np.float32)
        self.flags[rows] = False
        self._run(self._still, rows)

    def step(self, actions: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Apply wheel speeds ``actions`` (float64[n, 2]: left, right) to the robots in ``mask`` (all by
        default): clipped to the maximum speed, rounded as the layout says, non-finite values count as 0."""
        actions = np.asarray(actions, np.float64)
        if actions.shape != (self.n, 2):
            actions = actions.reshape(self.n, 2)
        self._run(actions, self._all if mask is None else np.flatnonzero(mask))

    def _run(self, actions: np.ndarray, rows: np.ndarray) -> None:
        kernels.step_robots(self.world.maps, self._config, self._values, self.flags, actions, rows)
