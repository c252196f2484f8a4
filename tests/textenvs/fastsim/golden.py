"""Golden traces recorded from the C++ libfastsim (format: shared/data/SOURCE.md) and their comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: (map file stem, layout name) of every golden map.
GOLDEN_MAPS = (("maze_hard", "hardmaze"), ("maze_19_2", "household"))
GOLDEN_ACTIONS = ("const_44", "curve", "piecewise")
GOLDEN_CASES = [(stem, layout, actions) for stem, layout in GOLDEN_MAPS for actions in GOLDEN_ACTIONS]


class GoldenTrace:
    """One recorded run: ``actions`` float64[T, 2]; ``rows`` float64[T + 1, 10] (reset row first)."""

    def __init__(self, golden_dir: Path, stem: str, actions: str):
        self.actions = np.loadtxt(golden_dir / "actions" / f"{actions}.txt", ndmin=2)
        self.rows = np.loadtxt(golden_dir / f"{stem}__{actions}.txt", ndmin=2)
        assert self.rows.shape == (len(self.actions) + 1, 10)

    @property
    def poses(self) -> np.ndarray:
        return self.rows[:, 1:4]

    @property
    def lasers(self) -> np.ndarray:
        return self.rows[:, 4:7]

    @property
    def flags(self) -> np.ndarray:
        """left bumper, right bumper, collision."""
        return self.rows[:, 7:10].astype(bool)


def assert_matches_golden(what: str, poses, lasers, flags, golden: GoldenTrace) -> None:
    """Simulated rows (reset row first) against ``golden``: pose within 1e-4, lasers within 1e-3,
    bumpers and collision flag exact; the message names the first step that differs."""
    poses, lasers, flags = np.asarray(poses), np.asarray(lasers), np.asarray(flags, bool)
    assert poses.shape == golden.poses.shape, f"{what}: {len(poses)} rows, golden has {len(golden.poses)}"
    bad = (
        (np.abs(poses - golden.poses).max(axis=1) > 1e-4)
        | (np.abs(lasers - golden.lasers).max(axis=1) > 1e-3)
        | (flags != golden.flags).any(axis=1)
    )
    if bad.any():
        row = int(np.argmax(bad))
        raise AssertionError(
            f"{what}: differs from the C++ at t={row - 1}: ours pose {poses[row]} lasers {lasers[row]} "
            f"flags {flags[row].astype(int)}; golden {golden.rows[row]}"
        )
