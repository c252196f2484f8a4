"""Trained models are data: a run directory's files never run code when a run is loaded, played or planned
(SB3's ``model.zip`` is a cloudpickle archive and is never read; weights load with ``weights_only=True``)."""

from __future__ import annotations

import base64
import json
import os
import pickle
import zipfile
from pathlib import Path

import pytest
import torch

from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.bench import load_suite
from textagents.cli import main
from textagents.sb3.agent import TrainedRun
from textagents.sb3.model_files import ModelFileError, load_model_state
from textagents.sb3.train import TrainConfig, build_model, latest_checkpoint, train


class Payload:
    """Unpickling this creates the folder ``marker``: proof that a file ran code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def write_sb3_zip_with_payload(path: Path, marker: Path) -> None:
    """A ``model.zip`` as SB3 writes it, one of whose saved attributes is a cloudpickle."""
    blob = base64.b64encode(pickle.dumps(Payload(marker))).decode()
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps({"policy_kwargs": {":type:": "<class 'dict'>", ":serialized:": blob}}))


def suite_with_sb3_first(directory: Path, run: Path) -> Path:
    """The sb3 agent first, so that the suite's pre-flight builds the corridor env as that agent plays it."""
    path = directory / "suite.yaml"
    path.write_text(
        f"envs: [{{id: {CORRIDOR_ID}, seeds: [0, 1]}}]\n"
        f"agents:\n  - {{name: ppo, kind: sb3, run: {run}}}\n  - {{name: random, kind: random}}\n"
    )
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("run")
    train(TrainConfig(CORRIDOR_ID, algo="a2c", total_timesteps=16, n_envs=1, progress_bar=False), run)
    return run


def copy_run(trained: Path, target: Path) -> Path:
    target.mkdir()
    for name in ("config.json", "model.pth", "model.json"):
        (target / name).write_bytes((trained / name).read_bytes())
    return target


def test_a_model_zip_is_never_unpickled_by_a_suite(tmp_path, capsys):
    run = tmp_path / "old_run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"env_id": CORRIDOR_ID, "algo": "ppo"}))
    marker = tmp_path / "code_ran"
    write_sb3_zip_with_payload(run / "model.zip", marker)
    suite = suite_with_sb3_first(tmp_path, run)
    try:
        assert [a.name for a in load_suite(suite).agents] == ["random"]
        assert main(["bench", "run", str(suite), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    finally:
        assert not marker.exists(), "loading the suite unpickled model.zip"
    assert "model.pth or model.json" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match=r"model\.pth, model\.json missing"):
        TrainedRun.load(run)


def test_the_dry_run_reads_no_weights(trained, tmp_path, capsys):
    run = copy_run(trained, tmp_path / "run")
    (run / "model.pth").write_bytes(b"not read by a dry run")
    suite = suite_with_sb3_first(tmp_path, run)
    assert main(["bench", "run", str(suite), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["ppo\tTestCorridor-v0\t0", "ppo\tTestCorridor-v0\t1"]
    with pytest.raises(ModelFileError, match="not a weights file"):
        TrainedRun.load(run).model  # noqa: B018  (playing it loads it)


def test_weights_that_hold_code_are_refused(trained, tmp_path):
    run = copy_run(trained, tmp_path / "run")
    marker = tmp_path / "code_ran"
    torch.save({"policy": Payload(marker)}, run / "model.pth")
    with pytest.raises(ModelFileError, match="not a weights file"):
        TrainedRun.load(run).model  # noqa: B018
    assert not marker.exists()


def test_weights_of_another_model_are_refused_naming_the_mismatch(trained, tmp_path):
    run = copy_run(trained, tmp_path / "run")
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "algo": "dqn"}))
    with pytest.raises(ModelFileError, match="does not fit the model"):
        TrainedRun.load(run).model  # noqa: B018


def test_saved_weights_and_counters_load_back_exactly(trained):
    run = TrainedRun.load(trained)
    saved = torch.load(trained / "model.pth", weights_only=True)
    loaded = run.model.get_parameters()["policy"]
    assert saved["policy"].keys() == loaded.keys()
    assert all(torch.equal(saved["policy"][k], loaded[k]) for k in loaded)
    assert run.model.num_timesteps == json.loads((trained / "model.json").read_text())["num_timesteps"] >= 16


def test_a_checkpoint_resumes_its_counters(tmp_path):
    config = TrainConfig(
        CORRIDOR_ID,
        algo="dqn",
        total_timesteps=32,
        n_envs=2,
        checkpoint_every=16,
        progress_bar=False,
        algo_kwargs={"learning_starts": 8, "buffer_size": 64},
    )
    train(config, tmp_path)
    checkpoint = latest_checkpoint(tmp_path)
    assert checkpoint is not None and checkpoint.name == "model_32_steps"
    env = TrainedRun(tmp_path, config).make_env()
    model = build_model(config, env)
    load_model_state(model, checkpoint)
    saved = json.loads(checkpoint.with_name("model_32_steps.json").read_text())
    assert set(saved) == {"num_timesteps", "_n_updates", "_episode_num", "_n_calls"}
    assert {name: getattr(model, name) for name in saved} == saved and saved["_n_calls"] > 0
