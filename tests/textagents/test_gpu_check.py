"""benchmarks/gpu/check.py's parts run here on the CPU at tiny sizes (the GPU machine runs them at paper sizes)."""

from __future__ import annotations

import pytest

from tests.scripts import load_script


@pytest.fixture(scope="module")
def check():
    return load_script("benchmarks/gpu/check.py", "gpu_check")


@pytest.mark.parametrize(
    ("part", "rate"), [("ellm", "frames_per_s"), ("ellm_replay_on_device", "frames_per_s"), ("lgqd", "samples_per_s")]
)
def test_a_part_runs_and_reports_its_rate(check, part, rate):
    result = check.run_part(part, "cpu", budget_s=0.1, quick=True, max_steps=1)
    assert result["ok"], result.get("error")
    assert result[rate] > 0 and "peak_gpu_mib" not in result


def test_the_glam_part_splits_its_iterations_into_scoring_and_updating(check):
    result = check.run_part("glam", "cpu", budget_s=0.1, quick=True, max_steps=1)
    assert result["ok"], result.get("error")
    assert result["iterations"] == 1 and result["frames_per_s"] > 0
    score, update, whole = (result[f"{p}_s_per_iteration"] for p in ("score", "update", "iteration"))
    assert score > 0 and update > 0 and score + update <= whole <= result["seconds"]
    assert "alloc_retries" not in result  # CUDA's allocator counts only there


def test_the_bk_part_steps_the_envs_it_is_given(check):
    result = check.bk("cpu", budget_s=0.1, quick=True, max_steps=1, envs=3)
    assert result["iterations"] == 1 and result["frames"] == 3 * 16
    for named in ("bk_subproc_32", "bk_subproc_64"):
        assert named in check.NAMED_ONLY and named not in check.DEFAULT_PARTS


def test_a_failing_part_is_recorded_and_the_report_written(check, tmp_path, monkeypatch):
    def broken(*args):
        raise RuntimeError("out of memory")

    monkeypatch.setitem(check.PARTS, "ellm", broken)
    result = check.run_part("ellm", "cpu", budget_s=0.1, quick=True, max_steps=1)
    assert not result["ok"] and result["error"] == "RuntimeError: out of memory"
    check.write_json_atomic(tmp_path / "gpu_check.json", {"parts": {"ellm": result}})
    assert (tmp_path / "gpu_check.json").is_file() and not list(tmp_path.glob(".*.tmp"))
