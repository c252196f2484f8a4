"""Kernel properties the golden traces cannot pin down on their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from textenvs.envs.fastsim import kernels
from textenvs.envs.fastsim.simulator import free_room, load_world


@pytest.mark.parametrize("layout", ["hardmaze", "household"])
def test_laser_walk_with_free_room_jumps_equals_the_plain_walk(data_dir: Path, layout: str):
    """``room`` only skips pixels that are free: every ray ends where the pixel-by-pixel walk ends."""
    world = load_world(layout, data_dir)
    no_room = np.zeros_like(world.room)
    rng = np.random.default_rng(0)
    starts = rng.integers(-3, world.size + 3, size=(4000, 2))
    ends = starts + rng.integers(-40, 41, size=(4000, 2))
    hits = 0
    for (a1, b1), (a2, b2) in zip(starts.tolist(), ends.tolist(), strict=True):
        fast = kernels.trace_ray(world.pixels, world.room, world.size, a1, b1, a2, b2)
        plain = kernels.trace_ray(world.pixels, no_room, world.size, a1, b1, a2, b2)
        assert fast == plain, f"ray ({a1}, {b1}) -> ({a2}, {b2})"
        hits += fast[0]
    assert 0 < hits < len(starts)


def test_free_room_is_the_chebyshev_distance_to_the_nearest_blocked_pixel_or_the_outside():
    blocked = np.random.default_rng(1).random((24, 24)) < 0.05
    room = free_room(blocked)
    outside = np.ones((24 + 2, 24 + 2), bool)
    outside[1:-1, 1:-1] = blocked
    walls = np.argwhere(outside) - 1
    for j in range(24):
        for i in range(24):
            expected = np.abs(walls - [j, i]).max(axis=1).min()
            assert room[j, i] == expected, (i, j)


@pytest.mark.parametrize("angle", [2.0**27, -(2.0**27), 1e9, 3e38, 7.0, -7.0])
@pytest.mark.parametrize("compiled", [True, False])
def test_normalize_angle_ends_in_minus_pi_pi_whatever_the_angle(angle: float, compiled: bool):
    normalize = kernels.normalize_angle_f32 if compiled else getattr(kernels.normalize_angle_f32, "py_func", None)
    if normalize is None:
        pytest.skip("numba is not installed: the kernel is the plain function")
    result = float(normalize(np.float32(angle)))
    assert -np.pi <= result <= np.pi
    assert np.cos(result) == pytest.approx(np.cos(np.float64(np.float32(angle))), abs=1e-5)
