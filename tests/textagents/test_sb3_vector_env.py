"""``SB3VectorEnv``: SB3 on a family's batched vector env, against the ``DummyVecEnv`` of single envs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import DummyVecEnv

import textenvs
from textagents.sb3 import HashedBagOfWords, make_sb3_env
from textagents.sb3.train import TrainConfig, make_vec_env, train
from textagents.sb3.vector_env import SB3VectorEnv

CASES = {
    "Crafter-Text-v0": ({"length": 25, "action_mode": "discrete"}, lambda rng, n: rng.integers(0, 17, n)),
    "Fastsim-Text-HardMaze-v0": ({"max_steps": 12}, lambda rng, n: rng.uniform(-4, 4, (n, 2)).astype(np.float32)),
}


@pytest.mark.parametrize("env_id", list(CASES))
def test_sb3_vector_env_equals_dummy_vec_env(env_id):
    """Three envs over three episodes each: featurized observations, rewards, ends, ``TimeLimit.truncated`` and
    ``terminal_observation`` equal SB3's DummyVecEnv of ``make_sb3_env`` envs seeded the same way."""
    kwargs, draw = CASES[env_id]
    featurizer = HashedBagOfWords(dim=64)
    vector = textenvs.make_vec(env_id, 3, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    fast = SB3VectorEnv(vector, featurizer)
    dummy = DummyVecEnv([lambda: make_sb3_env(env_id, featurizer, **kwargs)] * 3)
    assert fast.observation_space == dummy.observation_space and fast.action_space == dummy.action_space
    fast.seed(7)
    dummy.seed(7)
    got, want = fast.reset(), dummy.reset()
    rng, ends = np.random.default_rng(0), 0
    for t in range(80):
        for key in want:
            assert np.array_equal(got[key], want[key]), f"step {t}: {key}"
        actions = draw(rng, 3)
        got, got_rewards, got_dones, got_infos = fast.step(actions)
        want, want_rewards, want_dones, want_infos = dummy.step(actions)
        assert np.array_equal(got_rewards, want_rewards) and np.array_equal(got_dones, want_dones), f"step {t}"
        for got_info, want_info in zip(got_infos, want_infos, strict=True):
            assert got_info["TimeLimit.truncated"] == want_info["TimeLimit.truncated"], f"step {t}"
            assert ("terminal_observation" in got_info) == ("terminal_observation" in want_info), f"step {t}"
            if "terminal_observation" in want_info:
                ends += 1
                for key, value in want_info["terminal_observation"].items():
                    assert np.array_equal(got_info["terminal_observation"][key], value), f"step {t}: {key}"
                assert got_info["episode_metrics"] == want_info["episode_metrics"], f"step {t}"
    assert ends >= 9


def test_sb3_vector_env_needs_same_step_resets_and_sb3_actions():
    with pytest.raises(
        ValueError, match=r"autoreset_mode=SAME_STEP .* CrafterTextVectorEnv has AutoresetMode\.NEXT_STEP"
    ):
        SB3VectorEnv(textenvs.make_vec("Crafter-Text-v0", 2, action_mode="discrete"), HashedBagOfWords())
    text_actions = textenvs.make_vec("Crafter-Text-v0", 2, autoreset_mode="SameStep")
    with pytest.raises(ValueError, match="action_mode='discrete'"):
        SB3VectorEnv(text_actions, HashedBagOfWords())


def test_training_on_the_batched_env_equals_training_on_dummy_vec_env(tmp_path):
    """PPO for 192 steps on Crafter-Text: the batched env and the DummyVecEnv give the same weights."""
    weights = {}
    for vectorization in ("batched", "dummy"):
        config = TrainConfig(
            "Crafter-Text-v0",
            total_timesteps=192,
            n_envs=3,
            progress_bar=False,
            env_kwargs={"length": 30},
            algo_kwargs={"n_steps": 32, "batch_size": 48, "n_epochs": 2},
            vectorization=vectorization,
        )
        vec_env = make_vec_env(config, HashedBagOfWords())
        assert isinstance(vec_env.unwrapped, SB3VectorEnv if vectorization == "batched" else DummyVecEnv)
        vec_env.close()
        result = train(config, tmp_path / vectorization, threads=1)
        assert result["episodes_in_last_window"] >= 6
        weights[vectorization] = torch.load(tmp_path / vectorization / "model.pth", weights_only=True)
    batched, dummy = weights["batched"]["policy"], weights["dummy"]["policy"]
    assert batched.keys() == dummy.keys()
    assert all(torch.equal(batched[name], dummy[name]) for name in batched)


def test_pixels_train_on_single_envs():
    config = TrainConfig("Crafter-Text-v0", obs_mode="text+pixels", image_size=0, n_envs=2, env_kwargs={"length": 5})
    vec_env = make_vec_env(config, HashedBagOfWords())
    assert isinstance(vec_env.unwrapped, DummyVecEnv) and "image" in vec_env.observation_space.spaces
    vec_env.close()


def test_vectorization_must_be_known():
    with pytest.raises(ValueError, match=r"vectorization='async' is not valid; choose one of \('batched', 'dummy'\)"):
        TrainConfig("Crafter-Text-v0", vectorization="async")
