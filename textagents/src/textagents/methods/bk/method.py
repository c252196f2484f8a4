"""``bk``: PPO with reward shaping from an LLM's background knowledge, on BabyAI-Text or ELLM's Crafter:
BK-Code, BK-Goal or BK-Pref (``shaping``; ``none``: PPO alone), each a ``Knowledge`` wired the same way.

Iteration 1 first labels (``Knowledge.label``: the LLM is shown a random policy's steps; what it gave is
saved in the run: ``potential.py``, ``goals.json`` or ``preferences.jsonl``). Then every iteration trains
SB3's PPO with the original's update (``ppo.OriginalPPO``) and network (``policy.OriginalPolicy``; or SB3's
MLP) on ``frames_per_iteration`` frames of the env shaped by the knowledge's potential in ``shaping_form``
(``original``: the term is added to each complete rollout, ``ppo.ShapedRolloutBuffer``); evaluation plays
``eval_episodes`` unshaped episodes, actions by argmax by default (success: return > 0; on Crafter also the
achievements per episode and the Crafter score). Logged: success, return, ``shaped_return`` (the mean
episode return the envs paid PPO: 10·r, plus the shaping in the markovian forms; the ``original`` form's
term is logged as ``shaping/mean``, ``min`` and ``max`` of the last rollout), the labelling's metrics and
the potential's counts (the sandbox's evaluations, requests, failures and cost per evaluation, and its Φ
cache's hits; goals matched; snippets scored). A
checkpoint holds the policy's weights, Adam's moments, torch's and numpy's generator states, the knowledge
(code, goals, the scorer's weights) and the ``original`` form's normaliser; the envs' current episodes are
not kept: a resumed run starts new ones, from seeds of its own (not the first iteration's again), so it
continues the run in distribution, not step for step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

import textenvs  # noqa: F401  (registers the ids)
from textagents.methods.bk.code_potential import CodeKnowledge
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import family_of
from textagents.methods.bk.goal_potential import GoalKnowledge
from textagents.methods.bk.knowledge import Knowledge
from textagents.methods.bk.phi_cache import CachedPotential
from textagents.methods.bk.pref_potential import PrefKnowledge
from textagents.methods.bk.shaping import LaggedShaping, Potential, PotentialShaping, PreActionPotential
from textagents.methods.core.method import Method, RunContext
from textagents.methods.core.optimizer_state import load_optimizer_tensors, optimizer_tensors
from textagents.methods.core.run_dir import Checkpoint

EVAL_SEED_OFFSET = 1_000_000
KNOWLEDGE: dict[str, type[Knowledge]] = {"code": CodeKnowledge, "goal": GoalKnowledge, "pref": PrefKnowledge}


def ppo_env(env_id: str, shape: Callable[[gym.Env], gym.Env] | None = None) -> gym.Env:
    """``env_id`` as PPO sees it: ``shape``d (by a potential's wrapper), in the family's observation, under a
    ``Monitor`` recording each episode's return as the env pays it (not the lagged term). A module-level
    function: a subprocess can build the unshaped one."""
    from stable_baselines3.common.monitor import Monitor

    env = gym.make(env_id, action_mode="discrete")
    return Monitor(family_of(env_id).observation(shape(env) if shape is not None else env))


class BKMethod(Method):
    name = "bk"
    summary = "background-knowledge shaping: PPO with a potential from an LLM (BK-Code sandboxed, BK-Goal, BK-Pref)"
    config_class = BKConfig
    comparison_x = "training frames"

    def __init__(self, config: BKConfig, context: RunContext):
        super().__init__(config, context)
        knowledge = KNOWLEDGE.get(config.shaping)
        if knowledge is CodeKnowledge:
            self.knowledge = CodeKnowledge(config, context.run_dir, context.llm, context.unsafe_local_exec)
        else:
            self.knowledge = knowledge(config, context.run_dir, context.llm) if knowledge is not None else None
        self.family = family_of(config.env_id)
        self.potential: Potential | None = None
        self.model: Any = None
        self.lagged: LaggedShaping | None = None
        self.frames = 0

    # ------------------------------------------------------------------ pieces
    def _shaped_env(self) -> gym.Env:
        return ppo_env(self.config.env_id, self._shape if self.potential is not None else None)

    def _shape(self, env: gym.Env) -> gym.Env:
        """``env`` shaped by the potential in ``shaping_form``."""
        config = self.config
        history = self.knowledge.history if self.knowledge is not None else 0
        if config.shaping_form == "original":
            return PreActionPotential(env, self.potential, reward_scale=config.reward_scale, history=history)
        return PotentialShaping(
            env,
            self.potential,
            gamma=config.gamma,
            reward_scale=config.reward_scale,
            form=config.shaping_form,
            history=history,
        )

    def _policy(self) -> tuple[Any, dict[str, Any]]:
        """The policy class and its keyword arguments for ``policy_network``."""
        if self.config.policy_network == "mlp":
            return "MultiInputPolicy", {}
        from textagents.methods.bk.policy import OriginalPolicy

        return OriginalPolicy, {"features_extractor_kwargs": self.family.network}

    def _build(self, env_seed: int) -> None:
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        from textagents.methods.bk.ppo import (
            OriginalPPO,
            PrefetchPotentials,
            RecordPotentials,
            ShapedRolloutBuffer,
            TimeLimitAsDone,
        )

        config = self.config
        if self.knowledge is not None:
            self.potential = self.knowledge.potential()
        if config.vec_env == "subproc":
            vec_env = SubprocVecEnv([functools.partial(ppo_env, config.env_id)] * config.envs)
        else:
            vec_env = DummyVecEnv([self._shaped_env for _ in range(config.envs)])
        buffer: dict[str, Any] = {}
        if self.potential is not None and config.shaping_form == "original":
            if isinstance(self.potential, CachedPotential) and config.code_batch:
                vec_env = PrefetchPotentials(vec_env, self.potential)
            self.lagged = LaggedShaping(config.envs, config.gamma)
            vec_env = RecordPotentials(vec_env, self.lagged)
            buffer = {"rollout_buffer_class": ShapedRolloutBuffer, "rollout_buffer_kwargs": {"shaping": self.lagged}}
        if config.time_limit_as_done:
            vec_env = TimeLimitAsDone(vec_env)
        policy, policy_kwargs = self._policy()
        self.model = OriginalPPO(
            policy,
            vec_env,
            learning_rate=config.learning_rate,
            n_steps=config.steps_per_env,
            batch_size=config.minibatch_size,
            n_epochs=config.ppo_epochs,
            gamma=config.gamma,
            gae_lambda=config.gae_lambda,
            clip_range=config.clip,
            clip_range_vf=config.value_clip,
            ent_coef=config.ent_coef,
            vf_coef=config.vf_coef,
            max_grad_norm=config.max_grad_norm,
            policy_kwargs=policy_kwargs,
            seed=config.seed,
            device=config.torch_device(),
            **buffer,
        )
        vec_env.seed(env_seed)  # after PPO, which seeds the envs with its own seed

    # ------------------------------------------------------------------ iterations
    def train_iteration(self, iteration: int) -> dict[str, Any]:
        labelled = self.knowledge.label() if iteration == 1 and self.knowledge is not None else {}
        if self.model is None:
            self._build(self.config.seed)
        self.model.learn(total_timesteps=self.config.frames_per_iteration, reset_num_timesteps=False)
        self.frames = int(self.model.num_timesteps)
        recent = list(self.model.ep_info_buffer)
        metrics = {
            **labelled,
            "frames": self.frames,
            "shaped_return": float(np.mean([e["r"] for e in recent])) if recent else float("nan"),
        }
        if self.lagged is not None:
            term = self.lagged.last_term
            metrics.update(
                {"shaping/mean": float(term.mean()), "shaping/min": float(term.min()), "shaping/max": float(term.max())}
            )
        if self.knowledge is not None:
            metrics.update(self.knowledge.metrics())
        return metrics

    def evaluate(self) -> dict[str, Any]:
        env = self.family.observation(gym.make(self.config.env_id, action_mode="discrete"))
        returns, episodes = [], []
        for index in range(self.config.eval_episodes):
            obs, _ = env.reset(seed=EVAL_SEED_OFFSET + index)
            total, done = 0.0, False
            while not done:
                action, _ = self.model.predict(obs, deterministic=self.config.eval_deterministic)
                obs, reward, terminated, truncated, _ = env.step(int(action))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
            episodes.append(env.unwrapped.episode_metrics())
        env.close()
        metrics = {
            "frames": self.frames,
            "success_rate": float(np.mean([r > 0 for r in returns])),
            "return": float(np.mean(returns)),
        }
        if all("num_achievements" in e for e in episodes):
            from textenvs.envs.crafter_text.metrics import crafter_score

            metrics["achievements"] = float(np.mean([e["num_achievements"] for e in episodes]))
            metrics["crafter_score"] = crafter_score(episodes)
        return metrics

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, iteration: int) -> Checkpoint:
        tensors = {f"policy.{k}": v.detach().clone() for k, v in self.model.policy.state_dict().items()}
        tensors.update(optimizer_tensors(self.model.policy.optimizer, prefix="adam."))
        tensors["torch_rng"] = torch.get_rng_state()
        _, keys, position, has_gauss, cached_gauss = np.random.get_state()
        tensors["numpy_rng_keys"] = torch.from_numpy(keys.astype(np.int64))
        state: dict[str, Any] = {
            "frames": self.frames,
            "numpy_rng": [int(position), int(has_gauss), float(cached_gauss)],
        }
        if self.knowledge is not None:
            state["knowledge"] = self.knowledge.state()
            tensors.update({f"knowledge.{k}": v for k, v in self.knowledge.tensors().items()})
        if self.lagged is not None:
            state["lagged_shaping"] = self.lagged.state()
        return Checkpoint(iteration, state, tensors)

    def restore(self, checkpoint: Checkpoint) -> None:
        def part(prefix: str) -> dict[str, Any]:
            return {k[len(prefix) :]: v for k, v in checkpoint.tensors.items() if k.startswith(prefix)}

        if self.knowledge is not None:
            self.knowledge.restore(checkpoint.state["knowledge"], part("knowledge."))
        self._build(env_seed=self.config.seed + checkpoint.iteration * self.config.envs)
        self.model.policy.load_state_dict(part("policy."))
        load_optimizer_tensors(self.model.policy.optimizer, checkpoint.tensors, prefix="adam.")
        if self.lagged is not None and "lagged_shaping" in checkpoint.state:
            self.lagged.load(checkpoint.state["lagged_shaping"])
        if "torch_rng" in checkpoint.tensors:  # checkpoints written before they kept the generators have none
            torch.set_rng_state(checkpoint.tensors["torch_rng"])
            position, has_gauss, cached_gauss = checkpoint.state["numpy_rng"]
            keys = checkpoint.tensors["numpy_rng_keys"].numpy().astype(np.uint32)
            np.random.set_state(("MT19937", keys, position, has_gauss, cached_gauss))
        self.frames = self.model.num_timesteps = int(checkpoint.state["frames"])

    def report_sections(self, metrics: list[dict[str, Any]]) -> list[str]:
        """Iteration 1's record: what the labelling gave (for BK-Pref the labels' agreement with the env's
        progress signal) and the potential's first counts; the last counts are in the report's metrics."""
        train = [r for r in metrics if r.get("kind") == "train"]
        if self.knowledge is None or not train:
            return []
        skip = ("kind", "iteration", "time", "frames", "shaped_return")
        rows = [f"| {k} | {v:.4g} |" for k, v in train[0].items() if k not in skip and isinstance(v, int | float)]
        title = f"## Background knowledge ({self.config.shaping}): labelling, iteration 1"
        return ["\n".join([title, "", "| metric | value |", "|---|---:|", *rows])]

    @staticmethod
    def comparison_curves(metrics: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
        evals = [r for r in metrics if r.get("kind") == "eval"]
        if evals and "achievements" in evals[0]:
            return {"achievements per episode": [(r["frames"], r["achievements"]) for r in evals]}
        return {"success rate": [(r["frames"], r["success_rate"]) for r in evals]}

    def close(self) -> None:
        if self.model is not None:
            self.model.get_env().close()
        if self.knowledge is not None:
            self.knowledge.close()
