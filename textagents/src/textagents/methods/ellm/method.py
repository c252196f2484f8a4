"""``ellm``: DQN pretraining on ELLM's Crafter with the intrinsic reward of LLM-suggested goals (Du et al.
2023), and the paper's baselines as goal sources (none, uniform, SimpleOracle).

Each iteration plays ``frames_per_iteration`` frames (one env), learning as it goes; evaluation plays
``eval_episodes`` episodes and counts achievements (per episode, per achievement, Crafter's score).
Logged: intrinsic return, achievements per training episode, LLM calls, cache hits, malformed answers and
the suggestions' quality (valid / achievable / novel). A checkpoint holds the networks, Adam and the
counters; the replay buffer is not kept (a resumed run refills it, so it is not bit-exact).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textagents.methods.core.allocator import keep_freed_memory
from textagents.methods.core.method import Method, RunContext
from textagents.methods.core.optimizer_state import optimizer_tensors
from textagents.methods.core.run_dir import Checkpoint
from textagents.methods.ellm.config import EllmConfig
from textagents.methods.ellm.dqn import DQNAgent, DQNSettings, reinitialise_as_original
from textagents.methods.ellm.goals import (
    Caption,
    GoalSource,
    LLMGoals,
    NoGoals,
    SimpleOracle,
    UniformGoals,
    suggestion_quality,
)
from textagents.methods.ellm.joint import JointEmbedder
from textagents.methods.ellm.prompt import SAMPLING
from textagents.methods.ellm.reward import EllmReward, goal_string
from textenvs.envs.crafter_text.metrics import crafter_score, success_rates

EVAL_SEED_OFFSET = 1_000_000


class EllmMethod(Method):
    name = "ellm"
    summary = "ELLM: DQN pretraining on Crafter rewarded for reaching LLM-suggested goals"
    config_class = EllmConfig
    comparison_x = "training frames"

    def __init__(self, config: EllmConfig, context: RunContext):
        super().__init__(config, context)
        from textagents.sb3.features import SentenceEmbedder

        keep_freed_memory()  # each update's tensors reuse the last one's pages (allocator.py)

        self.embed = SentenceEmbedder()  # the reward's, pretrained
        self.dqn_embed: SentenceEmbedder | None = None  # pixels only
        if config.text_inputs and config.dqn_encoder_init == "pretrained":
            self.dqn_embed = self.embed
        elif config.text_inputs:  # a copy, with its own cache
            self.dqn_embed = SentenceEmbedder()
            reinitialise_as_original(self.dqn_embed.model, seed=config.seed)
        self.joint = JointEmbedder(self.dqn_embed) if config.joint_goal_input else None
        self._source: GoalSource | None = None  # built on first use: an LLM source records into the run
        self._train_env: EllmReward | None = None
        self.obs: dict[str, Any] | None = None
        probe = self._make_env(action_mode="discrete")
        actions = int(probe.action_space.n)
        probe.close()
        text_size = self.embed.dim * config.text_inputs
        settings = DQNSettings(
            learning_rate=config.learning_rate,
            gamma=config.gamma,
            n_steps=config.n_steps,
            batch_size=config.batch_size,
            buffer_size=config.buffer_size,
            learning_starts=config.learning_starts,
            train_every=config.train_every,
            target_update_every=config.target_update_every,
            epsilon_end=config.epsilon_end,
            epsilon_frames=config.epsilon_frames,
            adam_eps=config.adam_eps,
            max_grad_norm=config.max_grad_norm,
            target_network=config.target_network,
            replay_sampling=config.replay_sampling,
            clip_reward=config.clip_reward,
            cuda_graphs=config.cuda_graphs,
            replay_on_device=config.replay_on_device,
        )
        self.agent = DQNAgent(
            text_size,
            actions,
            settings,
            config.seed,
            config.frame_shape,
            config.hidden,
            config.head_layers,
            config.torch_device(),
        )
        self.frames: deque[np.ndarray] = deque(maxlen=config.frame_stack)
        self.episodes = 0

    @property
    def source(self) -> GoalSource:
        if self._source is None:
            self._source = self._make_source()
        return self._source

    @property
    def env(self) -> EllmReward:
        if self._train_env is None:
            self._train_env = self._env(keep_env_reward=self.config.adds_env_reward)
        return self._train_env

    def _make_source(self) -> GoalSource:
        if self.config.goal_source == "llm":
            sampling = {**SAMPLING, "max_tokens": self.config.llm_max_tokens}
            return LLMGoals(
                self.context.llm(),
                parsing=self.config.answer_parsing,
                prompt_source=self.config.prompt_source,
                sampling=sampling,
            )
        if self.config.goal_source == "oracle":
            return SimpleOracle()
        if self.config.goal_source == "uniform":
            probe = self._make_env()
            names = probe.unwrapped.vocabulary.commands
            probe.close()
            return UniformGoals(names, self.config.uniform_goals, seed=self.config.seed)
        return NoGoals()

    def _make_env(self, **kwargs: Any) -> gym.Env:
        """``env_id`` in the configured action space."""
        return gym.make(self.config.env_id, hard=self.config.hard_actions, **kwargs)

    def _env(self, keep_env_reward: bool) -> EllmReward:
        env = self._make_env(obs_mode="text+pixels", action_mode="discrete", image_size=self.config.frame_size)
        return EllmReward(
            env,
            self.source,
            self.embed,
            threshold=self.config.threshold,
            keep_env_reward=keep_env_reward,
            check_action_success=self.config.checks_action_success,
        )

    def _text(self, obs: dict[str, Any], info: dict[str, Any]) -> np.ndarray:
        """The network's text input, by the DQN's sentence encoder: the caption's embedding
        (``language_state``), then the goal string's (``goal_conditioned``), or with both the joint embedding
        of the two (``goal_encoding: joint``); empty for pixels only."""
        if self.joint is not None:
            return self.joint(Caption.of(info), info["goals"])
        texts = [obs["text"]] if self.config.language_state else []
        if self.config.goal_conditioned:
            texts.append(goal_string(info["goals"]))
        if self.dqn_embed is None or not texts:
            return np.zeros(0, np.float32)
        return self.dqn_embed(texts).reshape(-1).astype(np.float32)

    def _frame(self, image: np.ndarray) -> np.ndarray:
        """The original's greyscale: the channels' mean, truncated to uint8 (crafter_env.py:94-102)."""
        return image.mean(-1, keepdims=True).astype(np.uint8) if self.config.greyscale else image

    def _stacked(self, image: np.ndarray, frames: deque[np.ndarray], first: bool = False) -> np.ndarray:
        """The last ``frame_stack`` frames along the channels; an episode's first frame fills the stack, as
        the original's replay repeats it (replay_buffer.py:196-198)."""
        frame = self._frame(image)
        for _ in range(frames.maxlen if first else 1):
            frames.append(frame)
        return np.concatenate(frames, axis=-1)

    def _start_episode(self) -> None:
        self.obs, info = self.env.reset(seed=self.config.seed * 100_003 + self.episodes)
        self.stacked = self._stacked(self.obs["image"], self.frames, first=True)
        self.text = self._text(self.obs, info)
        self.info, self.intrinsic = info, 0.0

    # ------------------------------------------------------------------ training
    def train_iteration(self, iteration: int) -> dict[str, Any]:
        if self.obs is None:
            self._start_episode()
        finished, intrinsic, quality = [], [], []
        for _ in range(self.config.frames_per_iteration):
            frame, text = self.stacked, self.text
            if self.info["suggested_goals"]:
                achieved = set(self.info["achieved_goals"])
                quality.append(suggestion_quality(self.info["suggested_goals"], Caption.of(self.info), achieved))
            action = self.agent.act(frame, text)
            obs, reward, terminated, truncated, info = self.env.step(action)
            terminal = self.config.stored_terminal(terminated, truncated)
            self.stacked, self.text = self._stacked(obs["image"], self.frames), self._text(obs, info)
            self.agent.observe(frame, text, action, reward, self.stacked, self.text, terminal, truncated)
            self.obs, self.info = obs, info
            self.intrinsic += info["intrinsic_reward"]
            if terminated or truncated:
                finished.append(sum(v > 0 for v in info["achievements"].values()))
                intrinsic.append(self.intrinsic)
                self.episodes += 1
                self._start_episode()
        metrics: dict[str, Any] = {
            "frames": self.agent.frames,
            "episodes": self.episodes,
            "epsilon": self.agent.epsilon(),
            "loss": float(np.mean(self.agent.losses[-100:])) if self.agent.losses else float("nan"),
        }
        if finished:
            metrics.update(achievements=float(np.mean(finished)), intrinsic_return=float(np.mean(intrinsic)))
        for key in ("valid", "achievable", "novel"):
            if quality:
                metrics[f"suggestions/{key}"] = float(np.mean([q[key] for q in quality]))
        if isinstance(self.source, LLMGoals):
            usage = self.context.llm().usage
            metrics.update(
                llm_calls=self.source.calls,
                cache_hits=self.source.cache_hits,
                malformed=self.source.malformed,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
            )
        return metrics

    def evaluate(self) -> dict[str, Any]:
        env = self._env(keep_env_reward=True)
        episodes = []
        for index in range(self.config.eval_episodes):
            obs, info = env.reset(seed=EVAL_SEED_OFFSET + index)
            frames: deque[np.ndarray] = deque(maxlen=self.config.frame_stack)
            stacked, done = self._stacked(obs["image"], frames, first=True), False
            while not done:
                action = self.agent.act(stacked, self._text(obs, info), epsilon=self.config.eval_epsilon)
                obs, _, terminated, truncated, info = env.step(action)
                stacked = self._stacked(obs["image"], frames)
                done = terminated or truncated
            episodes.append(info["achievements"])
        env.close()
        rates = success_rates(episodes)
        return {
            "frames": self.agent.frames,
            "achievements": float(np.mean([sum(v > 0 for v in e.values()) for e in episodes])),
            "score": crafter_score(episodes),
            **{f"success/{name}": rate for name, rate in rates.items()},
        }

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, iteration: int) -> Checkpoint:
        state = {"frames": self.agent.frames, "episodes": self.episodes, "rng": self.agent.rng.bit_generator.state}
        tensors = {**self.agent.tensors(), **optimizer_tensors(self.agent.optimizer, prefix="adam.")}
        return Checkpoint(iteration, state, tensors)

    def restore(self, checkpoint: Checkpoint) -> None:
        self.agent.load_tensors(checkpoint.tensors)
        self.agent.load_optimizer(checkpoint.tensors, prefix="adam.")
        self.agent.frames = int(checkpoint.state["frames"])
        self.agent.rng.bit_generator.state = checkpoint.state["rng"]
        self.episodes = int(checkpoint.state["episodes"])

    @staticmethod
    def comparison_curves(metrics: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
        """Achievements per evaluation episode and Crafter's score against frames."""
        evals = [r for r in metrics if r.get("kind") == "eval"]
        return {
            "achievements per episode": [(r["frames"], r["achievements"]) for r in evals],
            "Crafter score": [(r["frames"], r["score"]) for r in evals],
        }

    def close(self) -> None:
        if self._train_env is not None:
            self._train_env.close()
