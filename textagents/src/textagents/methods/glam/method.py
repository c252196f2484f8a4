"""``glam``: an LLM policy on BabyAI-Text fine-tuned online with PPO (Carta et al. 2023).

π(a | prompt) = softmax over the LLM's scores (summed log-probs) of the six commands after GLAM's prompt;
a value head on the hidden state of the prompt's last token (decoder-only) or the first decoder position
(encoder-decoder). The LLM lives in a lamorel-style ``Caller`` (``llm_processes`` worker processes, or
this one); each iteration collects ``envs`` x ``frames_per_env`` frames and runs PPO where the LLM lives.
``agent: npae`` is the same architecture with fresh random weights (GLAM's NPAE baseline).

Iteration 1 first evaluates the untrained policy (``zero_shot/...``). A checkpoint holds the trainable
weights, the value head, Adam's moments and, per env, the seed and commands of its current episode, which
a resumed run replays (the envs are deterministic) so that it continues exactly.

The policy's score calls are not recorded to ``llm_calls.jsonl``: the weights change every update, so a
recording could not be replayed.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
import torch

import textenvs  # noqa: F401  (registers the ids)
from textagents.agents.prompts import GlamPrompt
from textagents.llm.lamorel import Caller, LLMSpec
from textagents.llm.transformers_backend import ValueHead
from textagents.methods.core.method import Method, RunContext
from textagents.methods.core.run_dir import Checkpoint
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.ppo import PPOSettings, gae
from textagents.methods.glam.report import glam_sections
from textagents.methods.glam.updater import VALUE, PPOUpdater

EVAL_SEED_OFFSET = 1_000_000_000  # evaluation seeds never meet training seeds


def level_name(env_id: str) -> str:
    """``BabyAI-Text-MixedTestLocal-v0`` -> ``MixedTestLocal``."""
    return env_id.removeprefix("BabyAI-Text-").removesuffix("-v0")


class _Episodes:
    """``count`` envs of one id, each with GLAM's prompt history; every episode's seed and commands are
    kept so that the current episodes can be rebuilt by replaying them."""

    def __init__(self, env_id: str, count: int, max_steps: int | None, first_seed: int):
        kwargs = {"max_steps": max_steps} if max_steps is not None else {}
        self.envs = [gym.make(env_id, **kwargs) for _ in range(count)]
        self.prompts = [GlamPrompt() for _ in range(count)]
        self.next_seed = first_seed
        self.seeds = [0] * count
        self.commands: list[list[str]] = [[] for _ in range(count)]
        self.infos: list[dict[str, Any]] = [{}] * count
        self.current: list[str] = [""] * count  # GLAM's prompt for each env's current observation
        self.returns = [0.0] * count
        for index in range(count):
            self.reset(index)

    def reset(self, index: int, seed: int | None = None) -> None:
        if seed is None:
            seed, self.next_seed = self.next_seed, self.next_seed + 1
        self.seeds[index], self.commands[index], self.returns[index] = seed, [], 0.0
        obs, info = self.envs[index].reset(seed=seed)
        self.prompts[index].reset(obs, info)
        self._observe(index, obs, info)

    def _observe(self, index: int, obs: Any, info: dict[str, Any]) -> None:
        self.infos[index] = info
        self.current[index] = self.prompts[index].build(obs, info).text

    def candidates(self, index: int) -> list[str]:
        return [" " + command for command in self.infos[index]["admissible_commands"]]

    def context(self, index: int) -> str:
        return self.current[index].rstrip()  # "Action i:" then " command": the space is the command's

    def step(self, index: int, action: int) -> tuple[float, bool, bool]:
        """Play command ``action``; returns (reward, episode ended, succeeded). An ended episode is followed
        by a new one at once."""
        command = self.infos[index]["admissible_commands"][action]
        self.prompts[index].record(command)
        self.commands[index].append(command)
        obs, reward, terminated, truncated, info = self.envs[index].step(command)
        self.returns[index] += float(reward)
        if terminated or truncated:
            success = self.returns[index] > 0
            self.reset(index)
            return float(reward), True, success
        self._observe(index, obs, info)
        return float(reward), False, False

    def state(self) -> dict[str, Any]:
        return {"next_seed": self.next_seed, "seeds": self.seeds, "commands": self.commands}

    def restore(self, state: dict[str, Any]) -> None:
        for index, (seed, commands) in enumerate(zip(state["seeds"], state["commands"], strict=True)):
            self.reset(index, seed)
            for command in commands:
                self.step(index, self.infos[index]["admissible_commands"].index(command))
        self.next_seed = int(state["next_seed"])

    def close(self) -> None:
        for env in self.envs:
            env.close()


class GlamMethod(Method):
    name = "glam"
    summary = "GLAM: an LLM policy on BabyAI-Text fine-tuned online with PPO (lamorel-style caller)"
    config_class = GlamConfig

    def __init__(self, config: GlamConfig, context: RunContext):
        super().__init__(config, context)
        if config.model is None:
            raise RuntimeError("GLAM fine-tunes a local transformers model: set `model:` or pass --model")
        if config.base_url is not None:
            raise RuntimeError("GLAM fine-tunes the model in this machine's processes: --base-url is not supported")
        self.settings = PPOSettings(
            gamma=config.gamma,
            gae_lambda=config.gae_lambda,
            clip=config.clip,
            entropy_coef=config.entropy_coef,
            value_coef=config.value_coef,
            max_grad_norm=config.max_grad_norm,
            epochs=config.ppo_epochs,
            minibatch_size=config.minibatch_size,
            learning_rate=config.learning_rate,
        )
        spec = LLMSpec(
            model=config.model,
            module_functions={VALUE: functools.partial(ValueHead, width=config.value_head_width)},
            lora_r=config.lora_r,
            pretrained=config.agent == "glam",
            seed=config.seed,
        )
        self.caller = Caller(spec, PPOUpdater(self.settings, config.micro_batch), processes=config.llm_processes)
        self.train = _Episodes(config.env_id, config.envs, config.max_steps, first_seed=config.seed * 1_000_003)
        self.rng = np.random.default_rng(config.seed)
        self.frames = 0
        self.episodes = 0

    # ------------------------------------------------------------------ acting
    def _policy(self, episodes: _Episodes, indices: list[int]) -> tuple[list[np.ndarray], list[float]]:
        """Per env, π's log-probabilities over its commands and the value of its current state."""
        outputs = self.caller.custom_module_fns(
            [VALUE], [episodes.context(i) for i in indices], [episodes.candidates(i) for i in indices]
        )
        log_probs = []
        for row in outputs:
            scores = np.asarray(row["__score"], dtype=np.float64)
            log_probs.append(scores - np.logaddexp.reduce(scores))
        return log_probs, [float(row[VALUE][0]) for row in outputs]

    def train_iteration(self, iteration: int) -> dict[str, Any]:
        zero_shot = {f"zero_shot/{k}": v for k, v in self.evaluate().items()} if iteration == 1 else {}
        envs, steps = self.config.envs, self.config.frames_per_env
        contexts, candidates, actions, logprobs = [], [], [], []
        values, rewards, dones = np.zeros((steps, envs)), np.zeros((steps, envs)), np.zeros((steps, envs))
        finished, successes, returns = 0, 0, []
        everyone = list(range(envs))
        for t in range(steps):
            contexts += [self.train.context(i) for i in everyone]
            candidates += [self.train.candidates(i) for i in everyone]
            log_probs, values[t] = self._policy(self.train, everyone)
            for index, distribution in enumerate(log_probs):
                action = int(self.rng.choice(len(distribution), p=np.exp(distribution)))
                actions.append(action)
                logprobs.append(float(distribution[action]))
                episode_return = self.train.returns[index]
                rewards[t, index], dones[t, index], success = self.train.step(index, action)
                if dones[t, index]:
                    finished, successes = finished + 1, successes + int(success)
                    returns.append(episode_return + rewards[t, index])
        _, last_values = self._policy(self.train, everyone)
        advantages, targets = gae(
            torch.as_tensor(rewards),
            torch.as_tensor(values),
            torch.as_tensor(dones),
            torch.as_tensor(last_values, dtype=torch.float64),
            self.settings.gamma,
            self.settings.gae_lambda,
        )
        results = self.caller.update(
            contexts,
            candidates,
            actions=actions,
            logprobs=logprobs,
            values=values.reshape(-1).tolist(),
            advantages=advantages.reshape(-1).tolist(),
            returns=targets.reshape(-1).tolist(),
            minibatches=max(1, round(len(contexts) / self.settings.minibatch_size)),
            seed=self.config.seed * 7919 + iteration,
        )
        self.frames += steps * envs
        self.episodes += finished
        losses = {k: float(np.mean([r[k] for r in results if k in r])) for k in results[0]}
        return {
            **zero_shot,
            "frames": self.frames,
            "episodes": self.episodes,
            "success_rate": successes / finished if finished else float("nan"),
            "return": float(np.mean(returns)) if returns else float("nan"),
            **losses,
        }

    def evaluate(self) -> dict[str, Any]:
        """``eval_episodes`` on the training level and on each test level; success = return > 0."""
        result = {"frames": self.frames}
        for env_id in (self.config.env_id, *self.config.test_env_ids):
            label = (
                "train_level"
                if env_id == self.config.env_id
                else env_id.removeprefix("BabyAI-Text-").removesuffix("-v0")
            )
            result.update({f"{label}/{k}": v for k, v in self._evaluate_on(env_id).items()})
        return result

    def _evaluate_on(self, env_id: str) -> dict[str, float]:
        count = min(self.config.envs, self.config.eval_episodes)
        rng = np.random.default_rng([self.config.seed, EVAL_SEED_OFFSET])
        episodes = _Episodes(env_id, count, self.config.max_steps, first_seed=EVAL_SEED_OFFSET)
        started, outcomes, lengths, steps = count, [], [], [0] * count
        active = list(range(count))
        while active:
            log_probs, _ = self._policy(episodes, active)
            still = []
            for index, distribution in zip(active, log_probs, strict=True):
                greedy = self.config.eval_greedy
                action = (
                    int(np.argmax(distribution))
                    if greedy
                    else int(rng.choice(len(distribution), p=np.exp(distribution)))
                )
                steps[index] += 1
                _, done, success = episodes.step(index, action)
                if done:
                    outcomes.append(success)
                    lengths.append(steps[index])
                    steps[index] = 0
                    if started < self.config.eval_episodes:
                        started += 1
                        still.append(index)
                else:
                    still.append(index)
            active = still
        episodes.close()
        return {"success_rate": float(np.mean(outcomes)), "episode_length": float(np.mean(lengths))}

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, iteration: int) -> Checkpoint:
        state = {
            "frames": self.frames,
            "episodes": self.episodes,
            "rng": self.rng.bit_generator.state,
            "envs": self.train.state(),
        }
        return Checkpoint(iteration, state, self.caller.trainable_state())

    def restore(self, checkpoint: Checkpoint) -> None:
        self.caller.load_trainable_state(checkpoint.tensors)
        self.frames = int(checkpoint.state["frames"])
        self.episodes = int(checkpoint.state["episodes"])
        self.rng.bit_generator.state = checkpoint.state["rng"]
        self.train.restore(checkpoint.state["envs"])

    def report_sections(self, metrics: list[dict[str, Any]]) -> list[str]:
        return glam_sections(metrics, self.config, self.context.run_dir)

    def close(self) -> None:
        self.train.close()
        self.caller.close()
