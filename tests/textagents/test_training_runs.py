"""Training runs: an algorithm that cannot learn an env's action space (DQN on fastsim's wheel speeds) is refused
with the algorithms that can, before anything is written; the files of runs and checkpoints are 0644."""

from __future__ import annotations

import pytest

from textagents.cli import main
from textagents.sb3.train import TrainConfig, train

FASTSIM = "Fastsim-Text-HardMaze-v0"


def test_dqn_on_a_continuous_action_space_names_the_algorithms_that_fit(tmp_path, data_dir):
    config = TrainConfig(FASTSIM, algo="dqn", total_timesteps=8, n_envs=1, progress_bar=False)
    with pytest.raises(ValueError, match=f"dqn needs a Discrete action space, but {FASTSIM}'s is Box") as caught:
        train(config, tmp_path / "run")
    assert str(caught.value).endswith("algorithms that can train on it: ppo, a2c")
    assert not (tmp_path / "run").exists()


def test_the_cli_says_it_in_one_line(tmp_path, data_dir, capsys):
    command = ["train", FASTSIM, str(tmp_path / "run"), "--algo", "dqn", "--timesteps", "8", "--no-progress"]
    assert main(command) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: dqn needs a Discrete action space") and error.count("\n") == 1


def test_a_runs_files_are_readable_by_the_team(tmp_path):
    from tests.textenvs.corridor_env import CORRIDOR_ID

    train(TrainConfig(CORRIDOR_ID, algo="a2c", total_timesteps=8, n_envs=1, progress_bar=False), tmp_path)
    for name in ("config.json", "model.pth", "model.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name


def test_a_methods_checkpoint_is_readable_by_the_team(tmp_path):
    import torch

    from textagents.methods.core.run_dir import Checkpoint, RunDir

    saved = RunDir(tmp_path).save_checkpoint(Checkpoint(1, {"step": 1}, {"weights": torch.zeros(3)}), keep=1)
    assert sorted(p.name for p in saved.iterdir()) and all(p.stat().st_mode & 0o777 == 0o644 for p in saved.iterdir())
