"""GLAM's agent (and NPAE, the same without pretrained weights): the LLM policy in a lamorel-style
``Caller``, trained with PPO where the LLM lives.

π(a | prompt) = softmax over the policy module's logits for the six commands after GLAM's prompt
(``scoring.py``: the paper-era rescaled probabilities by default; NPAE: the original's action head); a
value head on the hidden state of the prompt's last token (decoder-only) or the first decoder position
(encoder-decoder). The policy's score calls are not recorded to ``llm_calls.jsonl``: the weights change at
every update, so a recording could not be replayed.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from textagents.llm.lamorel import Caller, LLMSpec
from textagents.llm.transformers_backend import ValueHead
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.episodes import Episodes
from textagents.methods.glam.learner import Learner, episode_stats
from textagents.methods.glam.ppo import PPOSettings, gae
from textagents.methods.glam.scoring import POLICY, ActionHead, CommandScores
from textagents.methods.glam.updater import VALUE, PPOUpdater


def ppo_settings(config: GlamConfig) -> PPOSettings:
    return PPOSettings(
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


def trained_reward(reward: float, scale: float) -> float:
    """What PPO trains on: ``scale``·r when r > 0, else 0 (the original's ``reward_function``, scale 20)."""
    return scale * reward if reward > 0 else 0.0


def forward_batching(forward_batch: int) -> dict[str, int]:
    """``TransformersBackend``'s batching for at most ``forward_batch`` prompts of 256 tokens a forward pass
    (its defaults are 16 and 4096)."""
    return {"batch_size": forward_batch, "max_batch_tokens": 256 * forward_batch}


def llm_spec(config: GlamConfig, model: str) -> LLMSpec:
    """The policy module (the action head for NPAE by default, else ``scoring``) and the value head."""
    if config.agent == "npae" and config.npae_policy == "action_head":
        policy = functools.partial(ActionHead, width=config.value_head_width)
    else:
        policy = functools.partial(CommandScores, scoring=config.scoring)
    raw_logits = config.scoring == "pinned" and policy.func is CommandScores
    special_tokens = config.candidate_special_tokens
    options = {
        "score_mode": "legacy_logits" if raw_logits else "logprob",
        "candidate_special_tokens": config.scoring == "paper" if special_tokens is None else special_tokens,
        "prefix_sharing": config.prefix_sharing,
        "cross_attention": config.cross_attention,
        **forward_batching(config.forward_batch),
    }
    return LLMSpec(
        model=model,
        module_functions={POLICY: policy, VALUE: functools.partial(ValueHead, width=config.value_head_width)},
        lora_r=config.lora_r,
        pretrained=config.agent == "glam",
        load_embedding=config.agent == "npae" and config.npae_load_embedding,
        seed=config.seed,
        device=config.device,
        dtype=config.dtype,
        backend_options=options,
    )


class LLMLearner(Learner):
    def __init__(self, config: GlamConfig, model: str):
        super().__init__(config)
        self.settings = ppo_settings(config)
        updater = PPOUpdater(self.settings, config.micro_batch)
        self.caller = Caller(
            llm_spec(config, model), updater, processes=config.llm_processes, score_cache=config.score_cache
        )
        self.train = Episodes(
            config.env_id, config.envs, config.max_steps, config.seed * 1_000_003, config.prompt_observations
        )
        self.rng = np.random.default_rng(config.seed)

    def policy(self, episodes: Episodes, indices: list[int]) -> tuple[list[np.ndarray], list[float]]:
        """Per env, π's log-probabilities over its commands and the value of its current state."""
        outputs = self.caller.custom_module_fns(
            [POLICY, VALUE], [episodes.context(i) for i in indices], [episodes.candidates(i) for i in indices]
        )
        log_probs = []
        for row in outputs:
            scores = np.asarray(row[POLICY], dtype=np.float64)
            log_probs.append(scores - np.logaddexp.reduce(scores))
        return log_probs, [float(row[VALUE][0]) for row in outputs]

    def choose(self, episodes: Episodes, indices: list[int], rng: np.random.Generator, greedy: bool) -> list[int]:
        log_probs, _ = self.policy(episodes, indices)
        if greedy:
            return [int(np.argmax(d)) for d in log_probs]
        return [int(rng.choice(len(d), p=np.exp(d))) for d in log_probs]

    def train_frames(self, iteration: int) -> dict[str, float]:
        envs, steps = self.config.envs, self.config.frames_per_env
        contexts, candidates, actions, logprobs = [], [], [], []
        values, rewards, dones = np.zeros((steps, envs)), np.zeros((steps, envs)), np.zeros((steps, envs))
        finished: list[tuple[float, bool]] = []
        everyone = list(range(envs))
        for t in range(steps):
            contexts += [self.train.context(i) for i in everyone]
            candidates += [self.train.candidates(i) for i in everyone]
            log_probs, values[t] = self.policy(self.train, everyone)
            for index, distribution in enumerate(log_probs):
                action = int(self.rng.choice(len(distribution), p=np.exp(distribution)))
                actions.append(action)
                logprobs.append(float(distribution[action]))
                episode_return = self.train.returns[index]
                reward, dones[t, index], success = self.train.step(index, action)
                rewards[t, index] = trained_reward(reward, self.config.reward_scale)
                if dones[t, index]:
                    finished.append((episode_return + reward, success))
        _, last_values = self.policy(self.train, everyone)
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
        self.episodes += len(finished)
        losses = {k: float(np.mean([r[k] for r in results if k in r])) for k in results[0]}
        return {"frames": self.frames, "episodes": self.episodes, **episode_stats(finished), **losses}

    def state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        state = {
            "frames": self.frames,
            "episodes": self.episodes,
            "rng": self.rng.bit_generator.state,
            "envs": self.train.state(),
        }
        return state, self.caller.trainable_state()

    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        self.caller.load_trainable_state(tensors)
        self.frames, self.episodes = int(state["frames"]), int(state["episodes"])
        self.rng.bit_generator.state = state["rng"]
        self.train.restore(state["envs"])

    def close(self) -> None:
        self.train.close()
        self.caller.close()
