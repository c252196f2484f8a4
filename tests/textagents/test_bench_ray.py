"""The Ray backend, on a local ``ray.init`` of 2 CPUs, plays the same episodes as the local backend."""

from __future__ import annotations

import pytest

from tests.textagents.bench_fixtures import copy_timings, episodes_without_timing, report_files, write_suite
from textagents.bench import load_suite, run_suite, write_report

ray = pytest.importorskip("ray")


def test_ray_backend_gives_the_local_backends_episodes_and_leaderboard(tmp_path, data_dir):
    suite = load_suite(write_suite(tmp_path))
    run_suite(suite, tmp_path / "local", workers=2, progress=False)
    run_suite(suite, tmp_path / "ray", workers=2, backend="ray", progress=False)
    assert not ray.is_initialized(), "the runner shuts down the Ray it started"
    assert episodes_without_timing(tmp_path / "ray") == episodes_without_timing(tmp_path / "local")
    copy_timings(tmp_path / "local", tmp_path / "ray")  # wall times differ between runs; everything else must not
    for run in ("local", "ray"):
        write_report(tmp_path / run, plots=False)
    assert report_files(tmp_path / "ray") == report_files(tmp_path / "local")
