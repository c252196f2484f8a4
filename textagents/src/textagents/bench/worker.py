"""Playing one episode of a suite: what every worker runs, locally or on a Ray cluster.

The result depends only on the task (agent config, env config, seed), never on which worker played it or
what it played before: envs are reset with the episode's seed and agents are built fresh for it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import gymnasium as gym

from textagents.agents.episode import play_episode
from textagents.bench.agents import AGENT_KINDS
from textagents.bench.costs import LLMMeter
from textagents.bench.suite import EpisodeTask
from textenvs.viewer.trajectory import Step, Trajectory, text_of

#: Envs kept per worker process, least recently used closed first.
ENV_CACHE_SIZE = 4
_envs: OrderedDict[tuple[str, str, str, str], gym.Env] = OrderedDict()


def _env_for(task: EpisodeTask) -> gym.Env:
    kind = AGENT_KINDS[task.agent.kind]
    # by id and kwargs, not by name: two suites played in one process may give one name to different envs
    key = (task.agent.kind, repr(task.agent.options), task.env.id, repr(task.env.kwargs))
    if key in _envs:
        _envs.move_to_end(key)
        return _envs[key]
    env = kind.make_env(task.env.id, task.env.kwargs, task.agent.options)
    _envs[key] = env
    if len(_envs) > ENV_CACHE_SIZE:
        _envs.popitem(last=False)[1].close()
    return env


class _Recorder:
    """Passes the protocol through to ``agent``, keeping the last info and, if asked, every step."""

    def __init__(self, agent: Any, keep_steps: bool):
        self.agent = agent
        self.uid = agent.uid
        self.keep_steps = keep_steps
        self.steps: list[Step] = []
        self.last_info: dict[str, Any] = {}
        self._observe = getattr(agent, "observe", None)

    @property
    def params(self) -> dict[str, Any]:
        return self.agent.params

    @property
    def stats(self) -> dict[str, int]:
        return dict(getattr(self.agent, "stats", {}))

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.last_info = info
        self.agent.reset(obs, info)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        action = self.agent.act(obs, info)
        if self.keep_steps:
            self.steps.append(Step(observation=text_of(obs), action=action))
        return action

    def observe(self, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> None:
        self.last_info = info
        if self.keep_steps:
            step = self.steps[-1]
            step.reward, step.feedback = reward, info.get("feedback", "")
            step.invalid_action, step.success = bool(info.get("invalid_action")), bool(info.get("success"))
        if self._observe is not None:
            self._observe(reward, terminated, truncated, info)


def play_task(task: EpisodeTask, keep_trajectory: bool = False) -> dict[str, Any]:
    """Play the task's episode and return its record (with ``trajectory`` when ``keep_trajectory``)."""
    start = time.perf_counter()
    try:
        env = _env_for(task)
        agent = AGENT_KINDS[task.agent.kind].build(env, task.agent.options, task.seed)
        recorder = _Recorder(agent, keep_trajectory)
        meter = LLMMeter(agent)
        playing = time.perf_counter()
        episode = play_episode(env, recorder, seed=task.seed, max_steps=task.max_steps)
        play_seconds = time.perf_counter() - playing
    except Exception as error:
        agent, env, seed = task.key
        raise RuntimeError(
            f"agent {agent!r} on {env!r} with seed {seed} failed: {type(error).__name__}: {error}"
        ) from error
    record = {
        "agent": task.agent.name,
        "env": task.env.name,
        "seed": task.seed,
        "kind": task.agent.kind,
        "env_id": task.env.id,
        "return": episode.episode_return,
        "steps": episode.steps,
        "success": episode.success,
        "progression": float(recorder.last_info.get("progression", float(episode.success))),
        "ended": episode.ended,
        "invalid_actions": episode.invalid_actions,
        "metrics": episode.metrics,
        "agent_stats": episode.agent_stats,
        **meter.spent(),
        "play_seconds": play_seconds,
        "seconds": time.perf_counter() - start,
    }
    if keep_trajectory:
        spec = env.unwrapped.spec
        record["trajectory"] = Trajectory(
            env_id=task.env.id,
            seed=task.seed,
            steps=recorder.steps,
            env_kwargs=dict(spec.kwargs) if spec is not None else dict(task.env.kwargs),  # as the env was made
            agent=task.agent.name,
            kind=task.agent.kind,
        ).to_json()
    return record
