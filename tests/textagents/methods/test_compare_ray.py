"""``method compare --backend ray`` on a local Ray of 2 CPUs: the local backend's runs and report, finished runs
skipped, a failed run named while the others finish; and its options checked before any run starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textagents.cli import main
from textagents.methods.core import compare_ray
from textagents.ray_session import LOCAL_RAY_OBJECT_STORE

ray = pytest.importorskip("ray")

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "example" / "smoke.yaml"
GOOD_ENV = "BabyAI-Text-GoToRedBallNoDists-v0"


def _compare(out: Path, *options: str) -> int:
    return main(["method", "compare", "example", str(SMOKE), "--out", str(out), "--no-progress", *options])


def _metrics(run_dir: Path) -> list[dict]:
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "time"} for r in lines]


def _runs(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.is_dir() and p.name != "configs")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, object_store_memory=LOCAL_RAY_OBJECT_STORE, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_gives_the_local_runs_and_report_and_skips_finished_runs(tmp_path, local_ray):
    grid = ["--vary", "learning_rate=0.5,0.25", "--seeds", "0", "1"]
    assert _compare(tmp_path / "local", *grid) == 0
    assert _compare(tmp_path / "ray", *grid, "--backend", "ray") == 0
    assert ray.is_initialized(), "a Ray the command did not start is left running"
    names = _runs(tmp_path / "local")
    assert len(names) == 4 and _runs(tmp_path / "ray") == names
    for name in names:
        assert _metrics(tmp_path / "ray" / name) == _metrics(tmp_path / "local" / name)
    report = (tmp_path / "ray" / "comparison.md").read_text()
    assert report == (tmp_path / "local" / "comparison.md").read_text()

    written = {name: (tmp_path / "ray" / name / "metrics.jsonl").read_bytes() for name in names}
    assert _compare(tmp_path / "ray", *grid, "--backend", "ray") == 0
    assert {name: (tmp_path / "ray" / name / "metrics.jsonl").read_bytes() for name in names} == written


def test_a_failed_run_is_named_and_the_others_finish(tmp_path, local_ray, capsys):
    out = tmp_path / "cmp"
    # the env id is checked when the run builds its env: only that run fails
    assert _compare(out, "--vary", f"env_id={GOOD_ENV},NoSuchEnv-v0", "--backend", "ray") == 1
    error = capsys.readouterr().err
    assert "1 of 2 runs failed: env_id=NoSuchEnv-v0_seed0 (" in error and len(error.splitlines()) == 1
    assert (out / f"env_id={GOOD_ENV}_seed0" / "report.md").is_file()
    assert f"| {GOOD_ENV} |" in (out / "comparison.md").read_text()
    assert "NoSuchEnv" not in (out / "comparison.md").read_text()


def test_progress_is_one_line_per_finished_run(tmp_path, local_ray, capsys):
    command = ["method", "compare", "example", str(SMOKE), "--out", str(tmp_path / "cmp"), "--set", "iterations=1"]
    assert main([*command, "--vary", "learning_rate=0.5,0.25", "--backend", "ray"]) == 0
    lines = [line.partition("] ") for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert [count for count, _, _ in lines] == ["[1/2", "[2/2"]
    assert sorted(what for _, _, what in lines) == [
        "learning_rate=0.25_seed0 finished",
        "learning_rate=0.5_seed0 finished",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--backend", "slurm"], None),
        (["--backend", "ray", "--device", "cuda"], "learning_rate=0.5_seed0: device 'cuda' needs a GPU"),
        (["--backend", "ray", "--set", "device=cuda:1", "--gpus-per-run", "1"], "numbered from cuda:0"),
        (["--backend", "ray", "--cpus-per-run", "0"], "--cpus-per-run must be a whole number >= 1, got 0"),
        (["--backend", "ray", "--gpus-per-run", "1.5"], "--gpus-per-run must be 0, a fraction of 1"),
    ],
)
def test_bad_ray_options_are_one_line_and_exit_2_before_any_run(tmp_path, capsys, options, message):
    out = tmp_path / "cmp"
    if message is None:  # argparse's usage error
        with pytest.raises(SystemExit) as exit_:
            _compare(out, "--vary", "learning_rate=0.5", *options)
        assert exit_.value.code == 2
        assert "argument --backend: invalid choice: 'slurm'" in capsys.readouterr().err
        return
    assert _compare(out, "--vary", "learning_rate=0.5", *options) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.splitlines()) == 1
    assert not (out / "learning_rate=0.5_seed0").exists()


def test_a_task_trains_on_its_cpus_threads_and_sees_no_gpu_without_one(tmp_path, monkeypatch):
    import os

    import torch

    from textagents.methods.core import runner

    seen = []
    monkeypatch.setattr(runner, "run_method", lambda *a, **k: seen.append(torch.get_num_threads()) or {})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    options = {"llm": None, "unsafe_local_exec": False}
    assert compare_ray.run_task("example", SMOKE, tmp_path / "run", 2, True, options) is None
    assert seen == [2] and os.environ["CUDA_VISIBLE_DEVICES"] == ""

    def failing(*args, **kwargs):
        raise RuntimeError("out of luck\nsecond line")

    monkeypatch.setattr(runner, "run_method", failing)
    assert compare_ray.run_task("example", SMOKE, tmp_path / "run", 1, False, options) == "RuntimeError: out of luck"
