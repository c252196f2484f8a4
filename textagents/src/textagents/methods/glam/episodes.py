"""The envs a GLAM learner plays: ``count`` copies of one BabyAI-Text level, each with GLAM's prompt
history, every episode's seed and commands kept so that the current episodes can be rebuilt exactly by
replaying them (the envs are deterministic); and the lockstep evaluation every learner shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textagents.agents.prompts import GlamPrompt

EVAL_SEED_OFFSET = 1_000_000_000  # evaluation seeds never meet training seeds

#: Chooses a command index for each of the given envs: (episodes, env indices, rng, greedy) -> indices.
Chooser = Callable[["Episodes", list[int], np.random.Generator, bool], list[int]]


def level_name(env_id: str) -> str:
    """``BabyAI-Text-MixedTestLocal-v0`` -> ``MixedTestLocal``."""
    return env_id.removeprefix("BabyAI-Text-").removesuffix("-v0")


class Episodes:
    """``count`` envs of one id, each with GLAM's prompt over its last ``prompt_observations`` observations
    (the paper: 3); every episode's seed and commands are kept so that the current episodes can be rebuilt
    by replaying them."""

    def __init__(self, env_id: str, count: int, max_steps: int | None, first_seed: int, prompt_observations: int = 3):
        kwargs = {"max_steps": max_steps} if max_steps is not None else {}
        self.envs = [gym.make(env_id, **kwargs) for _ in range(count)]
        self.prompts = [GlamPrompt(prompt_observations) for _ in range(count)]
        self.next_seed = first_seed
        self.seeds = [0] * count
        self.commands: list[list[str]] = [[] for _ in range(count)]
        self.infos: list[dict[str, Any]] = [{}] * count
        self.current: list[str] = [""] * count  # GLAM's prompt for each env's current observation
        self.missions: list[str] = [""] * count
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
        self.missions[index] = str(obs["mission"])
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


def evaluate_policy(
    choose: Chooser,
    env_id: str,
    episodes: int,
    envs: int,
    max_steps: int | None,
    seed: int,
    greedy: bool,
    prompt_observations: int = 3,
) -> dict[str, float]:
    """``episodes`` episodes of ``env_id`` on evaluation seeds, ``envs`` at a time; success = return > 0."""
    count = min(envs, episodes)
    rng = np.random.default_rng([seed, EVAL_SEED_OFFSET])
    playing = Episodes(env_id, count, max_steps, EVAL_SEED_OFFSET, prompt_observations)
    started, outcomes, lengths, steps = count, [], [], [0] * count
    active = list(range(count))
    while active:
        still = []
        for index, action in zip(active, choose(playing, active, rng, greedy), strict=True):
            steps[index] += 1
            _, done, success = playing.step(index, action)
            if not done:
                still.append(index)
                continue
            outcomes.append(success)
            lengths.append(steps[index])
            steps[index] = 0
            if started < episodes:
                started += 1
                still.append(index)
        active = still
    playing.close()
    return {"success_rate": float(np.mean(outcomes)), "episode_length": float(np.mean(lengths))}
