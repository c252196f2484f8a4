from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.cli import BASELINE, BASELINE_COMMAND, build_parser, main, train_config
from textagents.sb3 import HashedBagOfWords, SentenceEmbedder, TextFeaturesWrapper, make_sb3_env
from textagents.sb3.train import TrainConfig, evaluate, latest_checkpoint, train

REPO = Path(__file__).resolve().parents[2]


def test_hashed_bag_of_words_is_stable_and_counts_ngrams():
    bow = HashedBagOfWords(dim=64)
    a, b, c = bow(["go to the red ball", "Go to the RED ball!", "pick up the key"])
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.dtype == np.float32 and a.sum() == pytest.approx(np.log1p(1) * 9, rel=0.3)
    # blake2b buckets, not Python's salted hash(): a fixed value in every process.
    assert np.flatnonzero(HashedBagOfWords(dim=1024)(["door"])[0]).tolist() == [
        int.from_bytes(__import__("hashlib").blake2b(b"door", digest_size=8).digest(), "little") % 1024
    ]


def test_offline_sbert_embeddings_with_cache():
    embedder = SentenceEmbedder()
    vectors = embedder(["go to the red ball", "walk to the red ball", "the stock market fell"])
    assert vectors.shape == (3, embedder.dim) == (3, 384)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert unit[0] @ unit[1] > unit[0] @ unit[2] + 0.2
    again = embedder(["walk to the red ball"])
    assert embedder.hits == 1 and np.allclose(again[0], vectors[1])


def test_wrapper_turns_text_into_features_for_both_obs_modes():
    env = make_sb3_env(CORRIDOR_ID, HashedBagOfWords(dim=32))
    assert isinstance(env.action_space, gym.spaces.Discrete)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"text_features", "position"} and obs["text_features"].shape == (64,)
    assert env.observation_space.contains(obs)
    pixels = make_sb3_env(CORRIDOR_ID, HashedBagOfWords(dim=32), obs_mode="text+pixels")
    assert set(pixels.reset(seed=0)[0]) == {"text_features", "position", "image"}
    with pytest.raises(TypeError, match="Dict observation space"):
        TextFeaturesWrapper(gym.make("CartPole-v1"), HashedBagOfWords())


@pytest.mark.parametrize(("algo", "obs_mode"), [("ppo", "text+pixels"), ("a2c", "text"), ("dqn", "text")])
def test_train_checkpoint_resume_evaluate(tmp_path, algo, obs_mode):
    extra = {"ppo": {"n_steps": 32, "batch_size": 32}, "a2c": {}, "dqn": {"learning_starts": 16}}[algo]
    config = TrainConfig(
        CORRIDOR_ID,
        algo=algo,
        obs_mode=obs_mode,
        total_timesteps=64,
        n_envs=2,
        checkpoint_every=32,
        progress_bar=False,
        algo_kwargs=extra,
    )
    first = train(config, tmp_path / "run")
    assert first["timesteps"] >= 64 and (tmp_path / "run" / "model.pth").is_file()
    assert json.loads((tmp_path / "run" / "model.json").read_text())["num_timesteps"] == first["timesteps"]
    assert latest_checkpoint(tmp_path / "run") is not None
    assert list((tmp_path / "run" / "tensorboard").rglob("events.out.tfevents.*"))
    with pytest.raises(FileExistsError, match="--resume"):
        train(config, tmp_path / "run")
    config.total_timesteps = 128
    resumed = train(config, tmp_path / "run", resume=True)
    assert resumed["resumed_from"] and resumed["timesteps"] >= 128
    result = evaluate(tmp_path / "run", episodes=2)
    assert result["episodes"] == 2 and 0 <= result["success_rate"] <= 1 and result["mean_length"] >= 1


def test_resume_refuses_other_settings(tmp_path):
    config = TrainConfig(CORRIDOR_ID, algo="a2c", total_timesteps=16, n_envs=1, progress_bar=False)
    train(config, tmp_path)
    with pytest.raises(ValueError, match="algo"):
        train(TrainConfig(CORRIDOR_ID, algo="ppo", total_timesteps=32, progress_bar=False), tmp_path, resume=True)


def test_resume_without_a_checkpoint_is_refused_and_the_model_kept(tmp_path, capsys):
    # 16 steps with a checkpoint every 10,000: a finished run with no checkpoint
    config = TrainConfig(CORRIDOR_ID, algo="a2c", total_timesteps=16, n_envs=1, progress_bar=False)
    train(config, tmp_path)
    model = (tmp_path / "model.pth").read_bytes()
    config.total_timesteps = 32
    with pytest.raises(FileNotFoundError, match=r"has no checkpoint .* train into a new directory"):
        train(config, tmp_path, resume=True)
    command = ["train", CORRIDOR_ID, str(tmp_path), "--algo", "a2c", "--timesteps", "32", "--n-envs", "1"]
    assert main([*command, "--resume", "--no-progress"]) == 2
    assert "has no checkpoint" in capsys.readouterr().err
    assert (tmp_path / "model.pth").read_bytes() == model


def test_the_committed_baseline_is_reproduced_by_its_cli_command():
    baseline = REPO / "benchmarks" / "baselines" / BASELINE
    command = BASELINE_COMMAND.removeprefix("textagents ").replace("DIR", str(baseline)).split()
    config = train_config(build_parser().parse_args(command))
    assert asdict(config) == asdict(TrainConfig.from_json(json.loads((baseline / "config.json").read_text())))


def test_unknown_algo_kwarg_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown ppo setting\(s\) \['n_step'\]; valid: learning_rate, n_steps"):
        TrainConfig(CORRIDOR_ID, algo_kwargs={"n_step": 128})


def test_cli_train_and_evaluate(tmp_path, capsys):
    main(["train", CORRIDOR_ID, str(tmp_path), "--algo", "a2c", "--timesteps", "40", "--n-envs", "2", "--no-progress"])
    assert json.loads(capsys.readouterr().out)["timesteps"] >= 40
    main(["evaluate", str(tmp_path), "--episodes", "1", "--stochastic"])
    assert json.loads(capsys.readouterr().out)["episodes"] == 1
