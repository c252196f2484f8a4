"""LLM agents play full episodes with tiny models; invalid outputs are counted and never reach the env."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from tests.textagents.families import FAMILIES, entry_of, short_episode_kwargs
from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.agents import (
    GenerationAgent,
    GenericPrompt,
    ScoreError,
    ScoringAgent,
    play_episode,
    prompt_builder_for,
)
from textagents.agents.motion import MotionCommandWrapper, make_for_llm
from textagents.llm import TokenUsage


class ScriptedBackend:
    """Returns the scripted outputs in turn (cycling); scores prefer the longest candidate."""

    model_name = "scripted"

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.calls = 0
        self.usage = TokenUsage()

    def generate(self, prompts, **sampling):
        out = [self.outputs[(self.calls + i) % len(self.outputs)] for i in range(len(prompts))]
        self.calls += len(prompts)
        return out

    def chat(self, messages, **sampling):
        return self.generate([messages[-1]["content"]])[0]

    def score(self, contexts, candidates):
        return [[float(len(c)) for c in options] for options in candidates]


def test_invalid_outputs_are_counted_and_never_reach_the_env():
    outputs = ["I'd rather dance", "", "go rihgt", "wait... no, go right", "rm -rf /", "go right"]
    agent = GenerationAgent(ScriptedBackend(outputs), GenericPrompt(), fallback="wait")
    env = gym.make(CORRIDOR_ID, max_steps=12)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    commands = [agent.act(obs, info) for _ in outputs]
    assert commands == ["wait", "wait", "go right", "go right", "wait", "go right"]
    assert {k: agent.stats[k] for k in ("exact", "contained", "fuzzy", "fallback")} == {
        "exact": 1,
        "contained": 1,
        "fuzzy": 1,
        "fallback": 3,
    }
    assert agent.misses == 4
    record = play_episode(env, agent, seed=1)
    assert record.ended and record.invalid_actions == 0
    assert record.agent_stats == dict(agent.stats)
    assert agent.params["fallback"] == "wait" and agent.params["model"] == "scripted"


def test_multi_step_plans_are_played_before_asking_again():
    plan = "go right\nstep 2: go right\nstep 3: fly\nstep 4: go right"
    backend = ScriptedBackend([plan])
    agent = GenerationAgent(backend, GenericPrompt(), multi_step=True)
    env = gym.make(CORRIDOR_ID)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    assert [agent.act(obs, info) for _ in range(4)] == ["go right"] * 4
    # Steps 1-2 come from one output; "fly" is not admissible: the plan is dropped and the model asked again.
    assert agent.stats["planned"] == 2 and backend.calls == 2
    assert agent.params["sampling"]["stop"] == []  # a plan spans lines: no newline stop


def test_scoring_agent_distribution_greedy_and_sampled():
    backend = ScriptedBackend([])
    greedy = ScoringAgent(backend, GenericPrompt())
    env = gym.make(CORRIDOR_ID)
    obs, info = env.reset(seed=0)
    greedy.reset(obs, info)
    assert greedy.act(obs, info) == "go right"  # the longest candidate scores highest
    probs = greedy.last_distribution
    assert sum(probs.values()) == pytest.approx(1.0) and max(probs, key=probs.get) == "go right"
    draws = []
    for _ in range(2):
        sampled = ScoringAgent(backend, GenericPrompt(), greedy=False, temperature=3.0, seed=5)
        sampled.reset(obs, info)
        draws.append([sampled.act(obs, info) for _ in range(20)])
    assert draws[0] == draws[1] and len(set(draws[0])) > 1
    with pytest.raises(ValueError, match="temperature"):
        ScoringAgent(backend, GenericPrompt(), temperature=0)


class AnswerBackend(ScriptedBackend):
    """Answers every score call with ``answer``."""

    def __init__(self, answer):
        super().__init__([])
        self.answer = answer

    def score(self, contexts, candidates):
        return self.answer


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "expected one list of 3 numbers"),
        ([None], "expected one list of 3 numbers"),
        ([[1.0, 2.0]], "expected one list of 3 numbers"),
        ([["a", "b", "c"]], "expected one list of 3 numbers"),
        ([[float("nan"), 0.0, 1.0]], "non-finite scores {'go left': nan}"),
        ([[None, 0.0, 1.0]], "non-finite scores"),
        ([[float("inf"), 0.0, 1.0]], "non-finite scores"),
        ([[float("-inf")] * 3], "non-finite scores"),
    ],
)
def test_scoring_agent_refuses_scores_that_make_no_policy(answer, message):
    agent = ScoringAgent(AnswerBackend(answer), GenericPrompt(), greedy=False, seed=0)
    env = gym.make(CORRIDOR_ID)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    with pytest.raises(ScoreError, match=re.escape(message)):
        agent.act(obs, info)


def test_scoring_agent_gives_minus_inf_no_chance_and_survives_a_tiny_temperature():
    env = gym.make(CORRIDOR_ID)
    obs, info = env.reset(seed=0)
    for temperature in (1.0, 1e-305):  # 1e6 / 1e-305 overflows to inf
        agent = ScoringAgent(AnswerBackend([[float("-inf"), 1e6, 0.0]]), GenericPrompt(), temperature=temperature)
        agent.reset(obs, info)
        assert agent.act(obs, info) == "go right"
        assert agent.last_distribution == {"go left": 0.0, "go right": 1.0, "wait": 0.0}


def test_motion_commands_need_a_box_action_space():
    with pytest.raises(TypeError, match="Box action space"):
        MotionCommandWrapper(gym.make(CORRIDOR_ID))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("agent_kind", ["generate", "score"])
def test_llm_agents_play_a_full_episode_of_every_family(family, agent_kind, causal_backend, data_dir):
    entry = entry_of(family)
    if entry.missing_requirements():
        pytest.skip(f"{entry.id} needs {entry.missing_requirements()}")
    env = make_for_llm(entry.id, **short_episode_kwargs(family, data_dir))
    builder = prompt_builder_for(env, **({"data_dir": str(data_dir)} if family == "housekeep" else {}))
    if agent_kind == "generate":
        multi_step = family == "housekeep"  # LLM-Personalize's planner writes multi-step plans
        agent = GenerationAgent(
            causal_backend, builder, use_chat=multi_step, multi_step=multi_step, sampling={"max_tokens": 6}, seed=0
        )
    else:
        agent = ScoringAgent(causal_backend, builder, greedy=False, seed=0)
    record = play_episode(env, agent, seed=0, max_steps=400)
    assert record.ended, f"{entry.id}: the episode did not end in {record.steps} steps"
    assert record.invalid_actions == 0
    assert np.isfinite(record.episode_return)
    if agent_kind == "generate":
        counted = sum(agent.stats[k] for k in ("exact", "contained", "fuzzy", "fallback", "planned"))
        assert counted == record.steps
