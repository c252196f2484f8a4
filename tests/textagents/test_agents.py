from __future__ import annotations

import gymnasium as gym
import pytest

from tests.textagents.families import FAMILIES, entry_of, short_episode_kwargs
from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.agents import Agent, ExpertAgent, HumanAgent, RandomAgent, play_episode


def test_random_agent_plays_only_admissible_commands_reproducibly():
    env = gym.make(CORRIDOR_ID)
    first = [play_episode(env, RandomAgent(seed=3), seed=s) for s in range(3)]
    again = [play_episode(env, RandomAgent(seed=3), seed=s) for s in range(3)]
    assert [(r.steps, r.episode_return) for r in first] == [(r.steps, r.episode_return) for r in again]
    assert all(r.ended and r.invalid_actions == 0 for r in first)
    assert isinstance(RandomAgent(), Agent)


def test_random_agent_without_admissible_commands_names_the_problem():
    with pytest.raises(ValueError, match="admissible_commands"):
        RandomAgent().act({}, {"success": False})


def test_expert_agent_solves_the_corridor():
    env = gym.make(CORRIDOR_ID)
    record = play_episode(env, ExpertAgent(env), seed=0)
    assert record.success and record.ended
    assert record.agent == "expert" and record.params == {"env": CORRIDOR_ID}


@pytest.mark.parametrize("family", FAMILIES)
def test_expert_agent_plays_every_family(family, data_dir):
    entry = entry_of(family)
    if entry.missing_requirements():
        pytest.skip(f"{entry.id} needs {entry.missing_requirements()}")
    env = gym.make(entry.id, **short_episode_kwargs(family, data_dir))
    record = play_episode(env, ExpertAgent(env), seed=0, max_steps=2_000)
    assert record.ended and record.invalid_actions == 0
    assert record.params == {"env": entry.id}


def test_expert_agent_needs_reset():
    with pytest.raises(RuntimeError, match="before reset"):
        ExpertAgent(gym.make(CORRIDOR_ID)).act({}, {})


def test_human_agent_reads_indices_and_text():
    typed = iter(["1", "go right", "2", "1", "1", "1", "1"])
    shown: list[str] = []
    agent = HumanAgent(read=lambda _: next(typed), write=shown.append)
    env = gym.make(CORRIDOR_ID)
    record = play_episode(env, agent, seed=0)
    assert record.invalid_actions == 0
    assert record.success
    assert "Mission: reach the door" in shown
    assert "  [1] go right" in shown
    assert any(line.startswith("episode over: success=True") for line in shown)


def test_human_agent_help_reads_again_and_quit_stops():
    typed = iter(["help", "?", "1", "quit"])
    shown: list[str] = []
    agent = HumanAgent(read=lambda _: next(typed), write=shown.append)
    env = gym.make(CORRIDOR_ID)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    assert agent.act(obs, info) == "go right"
    assert sum("'quit' (or Ctrl-D) stops" in line for line in shown) == 2
    with pytest.raises(EOFError):
        agent.act(obs, info)


class Recorder(RandomAgent):
    def __init__(self):
        super().__init__(seed=0)
        self.outcomes = []

    def observe(self, reward, terminated, truncated, info):
        self.outcomes.append((reward, terminated, truncated))


def test_play_episode_calls_observe_on_every_step():
    agent = Recorder()
    record = play_episode(gym.make(CORRIDOR_ID), agent, seed=1)
    assert len(agent.outcomes) == record.steps
    assert agent.outcomes[-1][1] or agent.outcomes[-1][2]
