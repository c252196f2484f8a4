"""The simulator against traces of the original C++ libfastsim, robot by robot and batched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.textenvs.fastsim.golden import GOLDEN_ACTIONS, GOLDEN_CASES, GOLDEN_MAPS, GoldenTrace, assert_matches_golden
from textenvs.envs.fastsim.simulator import COLLISION, RobotBatch, load_world


def run_batch(batch: RobotBatch, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reset, then step with ``actions`` [T, n, 2]; the (poses, lasers, flags) rows, reset row first."""
    batch.reset()
    rows = [(batch.state.copy(), batch.lasers.copy(), batch.flags[:, : COLLISION + 1].copy())]
    for step_actions in actions:
        batch.step(step_actions)
        rows.append((batch.state.copy(), batch.lasers.copy(), batch.flags[:, : COLLISION + 1].copy()))
    return tuple(np.stack(column, axis=1) for column in zip(*rows, strict=True))  # each [n, T + 1, ...]


@pytest.mark.parametrize(("stem", "layout", "actions"), GOLDEN_CASES)
def test_one_robot_reproduces_the_cpp_trace(golden_dir: Path, data_dir: Path, stem: str, layout: str, actions: str):
    golden = GoldenTrace(golden_dir, stem, actions)
    batch = RobotBatch(load_world(layout, data_dir), 1)
    poses, lasers, flags = run_batch(batch, golden.actions[:, None, :])
    assert_matches_golden(f"{stem}/{actions}", poses[0], lasers[0], flags[0], golden)


@pytest.mark.parametrize(("stem", "layout"), GOLDEN_MAPS)
def test_batched_robots_each_reproduce_their_cpp_trace(golden_dir: Path, data_dir: Path, stem: str, layout: str):
    goldens = [GoldenTrace(golden_dir, stem, name) for name in GOLDEN_ACTIONS]
    # every trace twice, interleaved, so a robot's neighbours never leak into its step
    order = [0, 1, 2, 2, 1, 0]
    actions = np.stack([goldens[k].actions for k in order], axis=1)
    batch = RobotBatch(load_world(layout, data_dir), len(order))
    poses, lasers, flags = run_batch(batch, actions)
    for robot, k in enumerate(order):
        assert_matches_golden(
            f"{stem}/{GOLDEN_ACTIONS[k]} robot {robot}", poses[robot], lasers[robot], flags[robot], goldens[k]
        )


def test_the_golden_traces_exercise_collisions_and_both_bumpers(golden_dir: Path):
    """Guards the test above against traces that never touch a wall."""
    flags = np.concatenate([GoldenTrace(golden_dir, stem, a).flags for stem, _, a in GOLDEN_CASES])
    assert flags.any(axis=0).all()


_PURE_PYTHON_RUN = """
import builtins, json, sys
import numpy as np
real_import = builtins.__import__
def no_numba(name, *args, **kwargs):
    if name == "numba" or name.startswith("numba."):
        raise ImportError("numba hidden for this test")
    return real_import(name, *args, **kwargs)
builtins.__import__ = no_numba
from textenvs.envs.fastsim import kernels
from textenvs.envs.fastsim.simulator import RobotBatch, load_world
assert not kernels.HAVE_NUMBA
actions = np.loadtxt(sys.argv[1], ndmin=2)[: int(sys.argv[3])]
batch = RobotBatch(load_world("hardmaze", sys.argv[2]), 1)
batch.reset()
rows = [[*batch.state[0].tolist(), *batch.lasers[0].tolist(), *batch.flags[0, :3].tolist()]]
for a in actions:
    batch.step(a[None])
    rows.append([*batch.state[0].tolist(), *batch.lasers[0].tolist(), *batch.flags[0, :3].tolist()])
print(json.dumps(rows))
"""


def test_pure_python_fallback_without_numba_reproduces_the_cpp_trace(golden_dir: Path, data_dir: Path):
    golden = GoldenTrace(golden_dir, "maze_hard", "curve")
    steps = 240  # past the first collision (t=73) and the first left-bumper press (t=223)
    command = [
        sys.executable,
        "-c",
        _PURE_PYTHON_RUN,
        str(golden_dir / "actions" / "curve.txt"),
        str(data_dir),
        str(steps),
    ]
    result = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = np.array(json.loads(result.stdout.strip().splitlines()[-1]))
    golden.rows = golden.rows[: steps + 1]
    assert golden.flags[:, 0].any() and golden.flags[:, 1].any()
    assert_matches_golden("pure Python maze_hard/curve", rows[:, :3], rows[:, 3:6], rows[:, 6:9], golden)
