"""Resuming a damaged run folder: unreadable metrics lines are named (file and line) and damaged checkpoints
are skipped for the newest intact one, never silently; a folder with no intact checkpoint is a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textagents.methods.core.run_dir import Checkpoint, RunDir, RunDirError, RunDirWarning
from textagents.methods.core.runner import evaluate_run, run_method

REPO = Path(__file__).resolve().parents[3]
SMOKE = REPO / "benchmarks" / "methods" / "example" / "smoke.yaml"  # metrics: train 1, 2, eval 2, train 3, 4, eval 4


def _metrics(run_dir: Path) -> list[dict]:
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "time"} for r in lines]


def _finished_run(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    run_method("example", SMOKE, out, progress=False)
    return out


def _replace_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = text
    path.write_text("".join(lines))


def test_a_corrupt_metrics_line_before_the_checkpoint_is_named_with_its_line_on_resume(tmp_path):
    out = _finished_run(tmp_path)
    before = _metrics(out)
    _replace_line(out / "metrics.jsonl", 2, '{"kind": "train", "iter\x00\x00\n')
    with pytest.warns(
        RunDirWarning,
        match=r"metrics\.jsonl:2 does not parse and is dropped: the record logged after train iteration 1 is lost \(",
    ):
        run_method("example", SMOKE, out, resume=True, progress=False)
    assert _metrics(out) == [before[0], *before[2:]]


def test_a_torn_last_metrics_line_is_dropped_with_a_warning_and_the_run_resumes(tmp_path):
    out = _finished_run(tmp_path)
    reference = _metrics(out)
    # as killed while writing iteration 4's train line: before its checkpoint, after iteration 3's
    lines = (out / "metrics.jsonl").read_text().splitlines(keepends=True)
    (out / "metrics.jsonl").write_text("".join(lines[:4]) + lines[4][:25])
    RunDir(out).checkpoints()[-1].rename(out / "checkpoints" / ".killed")
    with pytest.warns(
        RunDirWarning, match=r"metrics\.jsonl:5, the last line, is cut short .* if it was of iteration 3 or before"
    ):
        run_method("example", SMOKE, out, resume=True, progress=False)
    assert _metrics(out) == reference


def test_a_corrupt_newest_state_json_falls_back_to_the_previous_checkpoint_and_says_which(tmp_path):
    out = _finished_run(tmp_path)
    reference = _metrics(out)
    (out / "checkpoints" / "iter_000004" / "state.json").write_text('{"iteration": 4, "sta')
    with pytest.warns(RunDirWarning, match=r"iter_000004/state\.json is not a checkpoint's state.*iteration 3"):
        run_method("example", SMOKE, out, resume=True, progress=False)
    assert _metrics(out) == reference  # iteration 4 trained again, to the same numbers
    assert RunDir(out).load_checkpoint().iteration == 4  # and its checkpoint written again, intact


def test_a_run_with_no_intact_checkpoint_is_a_one_line_error_naming_the_folder_and_files(tmp_path):
    out = _finished_run(tmp_path)
    for folder in RunDir(out).checkpoints():
        (folder / "state.json").write_bytes(b"\x00" * 16)
    with pytest.raises(RunDirError) as raised:
        run_method("example", SMOKE, out, resume=True, progress=False)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{out} has no intact checkpoint")
    assert "iter_000003/state.json" in message and "iter_000004/state.json" in message
    with pytest.raises(RunDirError, match=r"iter_000003/state\.json is not a checkpoint's state"):
        evaluate_run("example", out, checkpoint=3)  # a checkpoint asked for by number is never swapped


def _tensor_run(tmp_path: Path) -> RunDir:
    import torch

    run = RunDir(tmp_path)
    for iteration in (1, 2):
        run.save_checkpoint(Checkpoint(iteration, {"step": iteration}, {"w": torch.full((64,), iteration)}), keep=2)
    return run


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (_truncate, r"iter_000002/tensors\.safetensors does not load \(.*\)"),
        (Path.unlink, r"iter_000002/tensors\.safetensors is missing \(state\.json names 1 tensors\)"),
    ],
)
def test_a_damaged_tensors_file_falls_back_to_the_previous_checkpoint(tmp_path, damage, match):
    run = _tensor_run(tmp_path)
    damage(run.checkpoints()[-1] / "tensors.safetensors")
    with pytest.warns(RunDirWarning, match=match + r"; skipped, using iteration 1"):
        checkpoint = run.load_checkpoint()
    assert checkpoint.iteration == 1 and checkpoint.state == {"step": 1} and checkpoint.tensors["w"][0] == 1


def test_replacing_and_pruning_checkpoints_never_leaves_a_partial_one_under_a_checkpoint_name(tmp_path, monkeypatch):
    import shutil

    run = _tensor_run(tmp_path)
    removed: list[str] = []
    monkeypatch.setattr(shutil, "rmtree", lambda path, **_: removed.append(Path(path).name))  # as killed before it
    run.save_checkpoint(Checkpoint(2, {"step": 2}, {}), keep=2)  # replaces iteration 2
    run.save_checkpoint(Checkpoint(3, {"step": 3}, {}), keep=2)  # prunes iteration 1
    assert [p.name for p in run.checkpoints()] == ["iter_000002", "iter_000003"]
    assert all(not name.startswith("iter_") for name in removed)  # moved out of the way first
