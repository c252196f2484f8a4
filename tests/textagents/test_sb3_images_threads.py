"""Training speed settings: pixels downscaled for a small CNN, saved runs keep their CNN, torch threads set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.callbacks import BaseCallback
from torch import nn

from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.cli import build_parser, train_config
from textagents.sb3.agent import TrainedRun
from textagents.sb3.features import make_featurizer
from textagents.sb3.model_files import save_model
from textagents.sb3.threads import TRAIN_THREADS
from textagents.sb3.train import IMAGE_SIZE, TrainConfig, build_model, make_vec_env, train
from textagents.sb3.wrappers import ResizeImage

BABYAI = "BabyAI-Text-GoToRedBallGrey-v0"  # text+pixels: 224 x 224 views (7 cells of 32 px)


def convolutions(extractor) -> list[tuple[int, int, int, int]]:
    """(in channels, out channels, kernel, stride) of the image CNN's convolutions."""
    layers = [m for m in extractor.image if isinstance(m, nn.Conv2d)]
    return [(c.in_channels, c.out_channels, c.kernel_size[0], c.stride[0]) for c in layers]


def pixel_model(config: TrainConfig):
    vec_env = make_vec_env(config, make_featurizer(config.features))
    model = build_model(config, vec_env, device="cpu")
    vec_env.close()
    return model


def test_pixels_are_downscaled_to_64_for_the_small_cnn():
    model = pixel_model(TrainConfig(BABYAI, obs_mode="text+pixels", n_envs=1, progress_bar=False))
    assert model.observation_space["image"].shape == (3, 64, 64)
    extractor = model.policy.features_extractor
    assert convolutions(extractor) == [(3, 16, 5, 2), (16, 32, 3, 2), (32, 32, 3, 2)]
    assert extractor.image[-2].in_features == 32 * 8 * 8 and extractor.image[-2].out_features == 128
    obs, _ = model.policy.obs_to_tensor(model.observation_space.sample())
    assert model.policy.extract_features(obs, extractor).shape == (1, extractor.features_dim)


def test_a_run_saved_before_image_size_keeps_its_full_resolution_cnn(tmp_path):
    """A config.json without image_size (every run before it) rebuilds the first CNN over 224 px views,
    and that run's weights load into it."""
    config = TrainConfig(BABYAI, obs_mode="text+pixels", n_envs=1, progress_bar=False, image_size=0)
    saved = {k: v for k, v in asdict(config).items() if k != "image_size"}
    (tmp_path / "config.json").write_text(json.dumps(saved))
    save_model(pixel_model(config), tmp_path / "model")
    run = TrainedRun.load(tmp_path)
    assert run.config.image_size == 0
    assert run.model.observation_space["image"].shape == (3, 224, 224)
    assert convolutions(run.model.policy.features_extractor) == [(3, 16, 3, 1), (16, 32, 3, 2)]
    env = run.make_env()
    obs, _ = env.reset(seed=0)
    assert obs["image"].shape == (224, 224, 3)
    assert run.model.predict(obs, deterministic=True)[0] in range(6)


def test_resize_image_averages_areas_and_keeps_the_aspect():
    resized = ResizeImage(gym.make(BABYAI, obs_mode="text+pixels"), 64)
    obs, _ = resized.reset(seed=0)
    assert obs["image"].shape == (64, 64, 3) and resized.observation_space.contains(obs)
    image = np.zeros((224, 224, 3), np.uint8)
    image[:112] = 200  # the top half
    small = resized.observation({**obs, "image": image})["image"]
    assert (small[:32] == 200).all() and (small[32:] == 0).all()
    assert ResizeImage(resized.env, 500).shape == (224, 224, 3)  # never enlarged
    corridor = gym.make(CORRIDOR_ID, obs_mode="text+pixels")
    height, width, _ = corridor.observation_space["image"].shape
    scale = 4 / max(height, width)
    assert ResizeImage(corridor, 4).shape == (max(1, round(height * scale)), max(1, round(width * scale)), 3)
    with pytest.raises(ValueError, match="size=0 is not valid"):
        ResizeImage(corridor, 0)


def test_text_runs_have_no_image_size_and_the_cli_defaults_are_the_constants():
    assert TrainConfig(CORRIDOR_ID).image_size == 0
    with pytest.raises(ValueError, match="image_size=-1 is not valid"):
        TrainConfig(CORRIDOR_ID, obs_mode="text+pixels", image_size=-1)
    args = build_parser().parse_args(["train", BABYAI, "run", "--obs-mode", "text+pixels"])
    assert train_config(args).image_size == IMAGE_SIZE and args.threads == TRAIN_THREADS
    args = build_parser().parse_args(["train", BABYAI, "run", "--obs-mode", "text+pixels", "--image-size", "0"])
    assert train_config(args).image_size == 0


class ThreadProbe(BaseCallback):
    """Records torch's thread count and the tokenizers' setting while the model learns."""

    def _on_step(self) -> bool:
        self.seen = (torch.get_num_threads(), os.environ.get("TOKENIZERS_PARALLELISM"))
        return True


def test_training_runs_one_torch_thread_and_no_tokenizer_pool_then_restores_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")  # restored after the test
    monkeypatch.delenv("TOKENIZERS_PARALLELISM")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        probe = ThreadProbe()
        config = TrainConfig(CORRIDOR_ID, algo="a2c", total_timesteps=16, n_envs=1, progress_bar=False)
        train(config, tmp_path, callbacks=[probe])
        assert probe.seen == (1, "false")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads=0 is not valid"):
        train(config, tmp_path / "other", threads=0)


def test_torch_imported_within_the_block_gets_the_thread_count_and_is_restored_after(tmp_path):
    """``training_threads`` does not import torch: a block that imports it gets the count as the import ends,
    and torch's own count afterwards; a block that never imports it leaves no import hook behind."""

    def python(code: str) -> list[str]:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    (default,) = python("import torch; print(torch.get_num_threads())")
    threads = int(default) + 1
    code = (
        "import sys\n"
        "from textagents.sb3.threads import training_threads\n"
        "with training_threads(None):\n"
        "    pass\n"
        f"with training_threads({threads}):\n"
        "    assert 'torch' not in sys.modules\n"
        "    from torch import nn\n"
        "    import torch\n"
        "    inside = torch.get_num_threads()\n"
        "hooks = [f for f in sys.meta_path if type(f).__name__ == '_AfterImport']\n"
        "print(inside, torch.get_num_threads(), len(hooks))\n"
    )
    assert python(code) == [str(threads), default, "0"]
