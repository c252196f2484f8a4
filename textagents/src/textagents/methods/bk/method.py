"""``bk``: PPO with reward shaping from an LLM's background knowledge (BK-Code so far), on BabyAI-Text.

Iteration 1 first labels: a random policy's observations are the samples the LLM's potential function is
tried on (``code_potential.write_potential``); the kept code is saved in the run (``potential.py``) and
runs in the sandbox for the whole training. Then every iteration trains SB3's PPO on
``frames_per_iteration`` frames of the shaped env; evaluation plays ``eval_episodes`` unshaped episodes.
Logged: success, return, the sandbox's calls, failures and cost per call. A checkpoint holds the policy's
weights and the code; the envs' current episodes are not kept (a resumed run starts new ones).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textagents.methods.bk.code_potential import write_potential
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.sandbox import SandboxedPotential
from textagents.methods.bk.shaping import PotentialShaping
from textagents.methods.core.method import Method, RunContext
from textagents.methods.core.run_dir import Checkpoint
from textagents.sb3.wrappers import SymbolicObservation

EVAL_SEED_OFFSET = 1_000_000


class BKMethod(Method):
    name = "bk"
    summary = "background-knowledge shaping: PPO with a potential written by an LLM (BK-Code), sandboxed"
    config_class = BKConfig
    comparison_x = "training frames"

    def __init__(self, config: BKConfig, context: RunContext):
        super().__init__(config, context)
        self.code: str | None = None
        self.potential: SandboxedPotential | None = None
        self.model: Any = None
        self.frames = 0

    # ------------------------------------------------------------------ pieces
    def _samples(self) -> list[str]:
        env = gym.make(self.config.env_id, action_mode="discrete")
        rng = np.random.default_rng(self.config.seed)
        obs, _ = env.reset(seed=self.config.seed)
        samples = []
        while len(samples) < self.config.code_samples:
            obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            if rng.random() < 0.2:
                samples.append(str(obs["text"]))
            if terminated or truncated:
                obs, _ = env.reset(seed=int(rng.integers(1 << 30)))
        env.close()
        return samples

    def _label(self) -> dict[str, Any]:
        if self.config.shaping == "none":
            return {}
        labelling = write_potential(self.context.llm(), "babyai_text", self._samples(), rounds=self.config.code_rounds)
        self.code = labelling.code
        if self.code is not None:
            (self.context.run_dir / "potential.py").write_text(self.code)
        return {
            "code_rounds_without_error": sum(r["error"] is None for r in labelling.rounds),
            "code_kept": float(self.code is not None),
        }

    def _shaped_env(self) -> gym.Env:
        env = gym.make(self.config.env_id, action_mode="discrete")
        if self.potential is not None:
            env = PotentialShaping(
                env,
                self.potential,
                gamma=self.config.gamma,
                reward_scale=self.config.reward_scale,
                terminal=self.config.terminal,
            )
        from stable_baselines3.common.monitor import Monitor

        return Monitor(SymbolicObservation(env))  # Monitor: each episode's (shaped) return for the metrics

    def _build(self) -> None:
        from stable_baselines3 import PPO
        from stable_baselines3.common.vec_env import DummyVecEnv

        if self.code is not None:
            self.potential = SandboxedPotential(self.code)
        vec_env = DummyVecEnv([self._shaped_env for _ in range(self.config.envs)])
        vec_env.seed(self.config.seed)
        self.model = PPO(
            "MultiInputPolicy",
            vec_env,
            learning_rate=self.config.learning_rate,
            n_steps=self.config.steps_per_env,
            batch_size=self.config.minibatch_size,
            n_epochs=self.config.ppo_epochs,
            gamma=self.config.gamma,
            clip_range=self.config.clip,
            seed=self.config.seed,
            device="cpu",
        )

    # ------------------------------------------------------------------ iterations
    def train_iteration(self, iteration: int) -> dict[str, Any]:
        labelled = self._label() if iteration == 1 else {}
        if self.model is None:
            self._build()
        self.model.learn(total_timesteps=self.config.frames_per_iteration, reset_num_timesteps=False)
        self.frames = int(self.model.num_timesteps)
        recent = list(self.model.ep_info_buffer)
        metrics = {
            **labelled,
            "frames": self.frames,
            "shaped_return": float(np.mean([e["r"] for e in recent])) if recent else float("nan"),
        }
        if self.potential is not None:
            metrics.update({f"sandbox/{k}": v for k, v in self.potential.stats.as_dict().items()})
        return metrics

    def evaluate(self) -> dict[str, Any]:
        env = SymbolicObservation(gym.make(self.config.env_id, action_mode="discrete"))
        returns = []
        for index in range(self.config.eval_episodes):
            obs, _ = env.reset(seed=EVAL_SEED_OFFSET + index)
            total, done = 0.0, False
            while not done:
                action, _ = self.model.predict(obs, deterministic=False)
                obs, reward, terminated, truncated, _ = env.step(int(action))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        env.close()
        return {
            "frames": self.frames,
            "success_rate": float(np.mean([r > 0 for r in returns])),
            "return": float(np.mean(returns)),
        }

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, iteration: int) -> Checkpoint:
        tensors = {f"policy.{k}": v.detach().clone() for k, v in self.model.policy.state_dict().items()}
        return Checkpoint(iteration, {"frames": self.frames, "code": self.code}, tensors)

    def restore(self, checkpoint: Checkpoint) -> None:
        self.code = checkpoint.state["code"]
        self._build()
        self.model.policy.load_state_dict({k[len("policy.") :]: v for k, v in checkpoint.tensors.items()})
        self.frames = self.model.num_timesteps = int(checkpoint.state["frames"])

    @staticmethod
    def comparison_curves(metrics: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
        evals = [r for r in metrics if r.get("kind") == "eval"]
        return {"success rate": [(r["frames"], r["success_rate"]) for r in evals]}

    def close(self) -> None:
        if self.model is not None:
            self.model.get_env().close()
        if self.potential is not None:
            self.potential.close()
