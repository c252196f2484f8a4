"""PBM map loading: the real maps load; malformed files fail with a message naming the problem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from textenvs.envs.fastsim.pbm import MapFormatError, load_pbm, physics_pixels


def write_pbm(path: Path, header: bytes, data: bytes) -> Path:
    path.write_bytes(header + data)
    return path


def test_the_hard_maze_loads_square_with_closed_borders(data_dir: Path):
    obstacles = load_pbm(data_dir / "fastsim" / "maps" / "maze_hard.pbm")
    assert obstacles.shape == (200, 200) and obstacles.dtype == bool
    assert obstacles[0].all() and obstacles[-1].all() and obstacles[:, 0].all() and obstacles[:, -1].all()
    assert not obstacles[150, 20]  # the start pixel (60, 450) / 3


def test_bits_are_read_msb_first_with_one_meaning_obstacle(tmp_path: Path):
    data = bytearray(8 * 8 // 8)
    data[0] = 0b10000000  # row 0: pixel 0
    data[1] = 0b00000001  # row 1: pixel 7
    obstacles = load_pbm(write_pbm(tmp_path / "m.pbm", b"P4\n# a comment\n8 8\n", bytes(data)))
    assert obstacles[0, 0] and obstacles[1, 7] and obstacles.sum() == 2


def test_physics_pixels_free_the_last_byte_as_libfastsim_does():
    pixels = physics_pixels(np.ones((16, 16), bool))
    assert pixels.shape == (256,) and pixels[:-8].all() and not pixels[-8:].any()


@pytest.mark.parametrize(
    ("header", "data", "message"),
    [
        (b"P1\n8 8\n", bytes(8), "bad magic"),
        (b"P4\n16 8\n", bytes(16), "must be square"),
        (b"P4\n12 12\n", bytes(18), "multiple of 8"),
        (b"P4\n16 16\n", bytes(31), "truncated pixel data: 31 of 32"),
        (b"P4\n16", b"", "truncated PBM header"),
        (b"P4\nab 16\n", bytes(32), "not integers"),
    ],
)
def test_malformed_maps_raise_a_clear_error(tmp_path: Path, header: bytes, data: bytes, message: str):
    with pytest.raises(MapFormatError, match=message):
        load_pbm(write_pbm(tmp_path / "bad.pbm", header, data))


def test_a_missing_map_raises_file_not_found(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        load_pbm(tmp_path / "nope.pbm")
