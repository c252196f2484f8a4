"""GLAM's symbolic PPO baseline: Stable-Baselines3's PPO on minigrid's encoding of the agent's 7x7 view
(object, colour, state per cell) and the goal as a bag of words, on the same levels and frame budget."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.episodes import Episodes
from textagents.methods.glam.learner import Learner
from textagents.sb3.wrappers import SymbolicObservation, symbolic_observation


class SymbolicPPOLearner(Learner):
    def __init__(self, config: GlamConfig):
        from stable_baselines3 import PPO
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.vec_env import DummyVecEnv

        super().__init__(config)
        kwargs = {"max_steps": config.max_steps} if config.max_steps is not None else {}

        def make(rank: int):
            def build() -> gym.Env:
                # Monitor records each episode's return for the training metrics (SB3's ep_info_buffer)
                return Monitor(SymbolicObservation(gym.make(config.env_id, action_mode="discrete", **kwargs)))

            return build

        self.vec_env = DummyVecEnv([make(rank) for rank in range(config.envs)])
        self.vec_env.seed(config.seed * 1_000_003)
        self.model = PPO(
            "MultiInputPolicy",
            self.vec_env,
            n_steps=config.frames_per_env,
            batch_size=config.minibatch_size,
            n_epochs=config.ppo_epochs,
            gamma=config.gamma,
            gae_lambda=config.gae_lambda,
            clip_range=config.clip,
            ent_coef=config.entropy_coef,
            vf_coef=config.value_coef,
            max_grad_norm=config.max_grad_norm,
            learning_rate=config.baseline_learning_rate,
            seed=config.seed,
            device=config.torch_device(),
        )
        self.finished: list[tuple[float, bool]] = []

    def train_frames(self, iteration: int) -> dict[str, float]:
        frames = self.config.envs * self.config.frames_per_env
        self.model.learn(total_timesteps=frames, reset_num_timesteps=False)
        self.frames = int(self.model.num_timesteps)
        recent = list(self.model.ep_info_buffer)
        logged = self.model.logger.name_to_value
        return {
            "frames": self.frames,
            "return": float(np.mean([e["r"] for e in recent])) if recent else float("nan"),
            "success_rate": float(np.mean([e["r"] > 0 for e in recent])) if recent else float("nan"),
            "loss": float(logged.get("train/loss", float("nan"))),
            "entropy": -float(logged.get("train/entropy_loss", float("nan"))),
        }

    def choose(self, episodes: Episodes, indices: list[int], rng: np.random.Generator, greedy: bool) -> list[int]:
        observations = [symbolic_observation(episodes.envs[i].unwrapped.view, episodes.missions[i]) for i in indices]
        batch = {key: np.stack([o[key] for o in observations]) for key in ("grid", "mission")}
        with torch.no_grad():
            tensors, _ = self.model.policy.obs_to_tensor(batch)
            probs = self.model.policy.get_distribution(tensors).distribution.probs.cpu().numpy().astype(np.float64)
        if greedy:
            return [int(np.argmax(p)) for p in probs]
        return [int(rng.choice(len(p), p=p / p.sum())) for p in probs]

    def state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        # The envs' current episodes and the rollout buffer are not kept: a resumed run starts new episodes.
        tensors = {f"policy.{k}": v.detach().clone() for k, v in self.model.policy.state_dict().items()}
        return {"frames": self.frames}, tensors

    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        self.model.policy.load_state_dict({k[len("policy.") :]: v for k, v in tensors.items()})
        self.frames = self.model.num_timesteps = int(state["frames"])

    def close(self) -> None:
        self.vec_env.close()
