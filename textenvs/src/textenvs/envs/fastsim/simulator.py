"""The fastsim world and a batch of robots stepped together (one robot is a batch of one)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from textenvs.data import asset_path
from textenvs.envs.fastsim import kernels
from textenvs.envs.fastsim.layouts import Layout, get_layout
from textenvs.envs.fastsim.pbm import load_pbm, physics_pixels

#: Columns of ``RobotBatch.flags``.
LEFT_BUMPER, RIGHT_BUMPER, COLLISION, HIT_WALL = range(4)


@dataclass(frozen=True, eq=False)
class World:
    """A loaded layout: its obstacle mask (as drawn) and the pixels the physics reads."""

    layout: Layout
    obstacles: np.ndarray  # bool[size, size], True = wall, as the PBM file says
    pixels: np.ndarray  # uint8[size * size], libfastsim's view (see pbm.physics_pixels)
    fx: np.float32  # pixels per real unit

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
    """Load a layout's map; worlds are shared (and read-only) per layout and map file."""
    layout = get_layout(layout) if isinstance(layout, str) else layout
    return _load_world(layout, asset_path(layout.map_asset, data_dir=data_dir))


@functools.lru_cache(maxsize=8)
def _load_world(layout: Layout, path: Path) -> World:
    obstacles = load_pbm(path)
    pixels = physics_pixels(obstacles)
    obstacles.setflags(write=False)
    pixels.setflags(write=False)
    fx = np.float32(obstacles.shape[1]) / np.float32(layout.real_size)
    return World(layout, obstacles, pixels, fx)


class RobotBatch:
    """``n`` robots in one world, stepped by one kernel call.

    State lives in arrays: ``state`` float32[n, 3] (x, y, theta in real units, y down), ``lasers``
    float32[n, n_lasers] (libfastsim's distances, -1 = nothing in range) and ``flags`` bool[n, 4]
    (left bumper, right bumper, libfastsim's collision flag — set by any collision since reset —, and
    whether this step's move was refused by a wall).
    """

    def __init__(self, world: World, n: int):
        if n < 1:
            raise ValueError(f"a robot batch needs n >= 1 robots, got {n}")
        layout = world.layout
        self.world = world
        self.n = n
        self.state = np.zeros((n, 3), np.float32)
        self.lasers = np.zeros((n, len(layout.laser_angles_deg)), np.float32)
        self.flags = np.zeros((n, 4), bool)
        self._radius = np.float32(layout.robot_radius)
        self._laser_range = np.float32(layout.laser_range)
        self._laser_angles = world.laser_angles.astype(np.float32)
        self._max_speed = float(layout.max_speed)
        self._decimals = layout.action_decimals
        self._still = np.zeros((n, 2), np.float32)

    def reset(self, mask: np.ndarray | None = None, pose: tuple[float, float, float] | None = None) -> None:
        """fastsim_gym's reset for the robots in ``mask`` (all by default): clear the flags, put the robot
        at ``pose`` (the layout's start by default) and ``move(0, 0)`` once to read the sensors."""
        rows = np.arange(self.n) if mask is None else np.flatnonzero(mask)
        if rows.size == 0:
            return
        self.state[rows] = np.asarray(pose if pose is not None else self.world.layout.start, np.float32)
        self.flags[rows] = False
        self._run(rows, self._still[: rows.size])

    def step(self, actions: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Apply wheel speeds ``actions`` (shape [n, 2]; rounded as the layout says, clipped to the
        maximum speed, non-finite values count as 0) to the robots in ``mask`` (all by default)."""
        wheels = self.wheel_speeds(actions)
        if mask is None:
            self._run(None, wheels)
        else:
            rows = np.flatnonzero(mask)
            self._run(rows, wheels[rows])

    def wheel_speeds(self, actions: np.ndarray) -> np.ndarray:
        """The float32 wheel displacements the simulator receives for ``actions``."""
        speeds = np.nan_to_num(np.asarray(actions, np.float64).reshape(self.n, 2), nan=0.0)
        if self._decimals is not None:
            speeds = np.round(speeds, self._decimals)
        return np.clip(speeds, -self._max_speed, self._max_speed).astype(np.float32)

    def sensors(self) -> np.ndarray:
        """fastsim_gym's observation: lasers (-1 => range, clipped to [0, range]) then the left and right
        bumpers, float32[n, n_lasers + 2]."""
        lasers = np.where(self.lasers < 0, self._laser_range, np.clip(self.lasers, 0, self._laser_range))
        bumpers = self.flags[:, :2].astype(np.float32)
        return np.concatenate([lasers.astype(np.float32), bumpers], axis=1)

    def _run(self, rows: np.ndarray | None, wheels: np.ndarray) -> None:
        if rows is None:
            self._kernel(self.state, self.lasers, self.flags, wheels)
            return
        state, lasers, flags = self.state[rows], self.lasers[rows], self.flags[rows]
        self._kernel(state, lasers, flags, wheels)
        self.state[rows], self.lasers[rows], self.flags[rows] = state, lasers, flags

    def _kernel(self, state: np.ndarray, lasers: np.ndarray, flags: np.ndarray, wheels: np.ndarray) -> None:
        world = self.world
        kernels.step_robots(
            world.pixels,
            world.size,
            world.fx,
            self._radius,
            self._laser_angles,
            self._laser_range,
            world.layout.sticky_walls,
            state,
            lasers,
            flags,
            np.ascontiguousarray(wheels),
        )
