"""The few-shot LLM agent: k episodes of a textenvs dataset as demonstrations, within a token budget."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tests.textagents.bench_fixtures import episodes_without_timing, write_suite
from tests.textagents.methods.scripted_llm import Scripted
from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.agents import FewShotAgent, GenericPrompt, play_episode
from textagents.agents.few_shot import action_text, estimate_tokens, load_demonstrations
from textagents.bench import load_suite, run_suite
from textagents.bench.suite import SuiteError
from textenvs.trajectories import create_dataset, read_dataset

pytest.importorskip("datasets")

CUT = " not shown to fit the token budget)"


@pytest.fixture
def corridor_demos(tmp_path):
    path = tmp_path / "demos"
    create_dataset(CORRIDOR_ID, path, episodes=3, seed=10)
    return path


def steps_block(episode) -> str:
    """An episode's steps as the demonstrations show them (the corridor's texts are one line each)."""
    texts = episode.observations["text"]
    return "".join(f"Observation: {t}\nAction: {a}\n" for t, a in zip(texts, episode.actions, strict=False))


def few_shot_agent(dataset, k: int, budget: int, answers: int = 20) -> tuple[FewShotAgent, Scripted]:
    backend = Scripted(["go right"] * answers)
    _, demos = load_demonstrations(str(dataset), k)
    agent = FewShotAgent(backend, GenericPrompt(), demos, token_budget=budget, use_chat=True, dataset=str(dataset))
    return agent, backend


def test_prompt_holds_the_first_k_dataset_episodes_and_the_agent_plays(corridor_demos):
    agent, backend = few_shot_agent(corridor_demos, k=2, budget=4096)
    record = play_episode(gym.make(CORRIDOR_ID), agent, seed=0)
    assert record.success and record.invalid_actions == 0
    prompt = backend.asked[0][-1]["content"]
    episodes = read_dataset(corridor_demos).episodes
    assert "Demonstration 1 (goal: reach the door):" in prompt and "Demonstration 2 (goal: reach the door):" in prompt
    assert "Demonstration 3" not in prompt
    first, second = prompt.index(steps_block(episodes[0])), prompt.index(steps_block(episodes[1]))
    assert first < second < prompt.index("Now it is your turn.") < prompt.index("Goal: reach the door")
    assert prompt.count("Outcome: success after") == 2 and CUT not in prompt
    assert record.agent_stats["prompts_cut"] == 0 and record.agent_stats["exact"] == record.steps
    assert agent.params["k"] == 2 and agent.params["prompt"] == "FewShotPrompt(GenericPrompt)"


def test_demonstrations_are_cut_to_the_token_budget_and_the_prompt_says_so(corridor_demos):
    env = gym.make(CORRIDOR_ID)
    uncut_agent, uncut = few_shot_agent(corridor_demos, k=2, budget=4096)
    play_episode(env, uncut_agent, seed=0)
    budget = max(estimate_tokens(asked[-1]["content"]) for asked in uncut.asked) - 10  # a step or two too many
    agent, backend = few_shot_agent(corridor_demos, k=2, budget=budget)
    record = play_episode(env, agent, seed=0)
    prompts = [asked[-1]["content"] for asked in backend.asked]
    assert all(estimate_tokens(p) <= budget for p in prompts)
    assert all(CUT in p and "Demonstration 2" in p and p.count("Outcome: ") == 2 for p in prompts)
    assert record.agent_stats["prompts_cut"] == len(prompts) and record.agent_stats["demonstrations_left_out"] == 0

    obs, info = env.reset(seed=0)
    budget = estimate_tokens(GenericPrompt().build(obs, info).text) + 25  # room for a note, not for a demonstration
    agent, backend = few_shot_agent(corridor_demos, k=2, budget=budget)
    play_episode(env, agent, seed=0)
    prompt = backend.asked[0][-1]["content"]
    assert estimate_tokens(prompt) <= budget and "Demonstration" not in prompt
    assert prompt.startswith("(2 demonstrations not shown to fit the token budget)")
    assert agent.stats["demonstrations_left_out"] == 2 * len(backend.asked)


def test_continuous_actions_are_shown_as_numbers():
    assert action_text(np.array([4.0, -2.5], dtype=np.float32)) == "4 -2.5" and action_text("go left") == "go left"


def test_k_larger_than_the_dataset_is_refused(corridor_demos):
    with pytest.raises(ValueError, match="holds 3 episodes; k=4"):
        load_demonstrations(str(corridor_demos), 4)


SUITE = """\
name: few-shot
seeds: [100]
envs:
  - id: BabyAI-Text-GoToLocal-v0
    kwargs: {max_steps: 3}
agents:
  - {name: shots, kind: llm-few-shot, dataset: demos, k: 2, token_budget: 600, max_tokens: 4}
"""


def test_a_suite_plays_the_few_shot_kind_from_a_dataset_next_to_it(tmp_path, tiny_models):
    create_dataset("BabyAI-Text-GoToLocal-v0", tmp_path / "demos", episodes=2, seed=1000)
    suite = load_suite(write_suite(tmp_path, SUITE), llm_overrides={"model": str(tiny_models.causal)})
    assert suite.agents[0].options.dataset == str((tmp_path / "demos").resolve())
    run_suite(suite, tmp_path / "run", progress=False)
    (record,) = episodes_without_timing(tmp_path / "run").values()
    assert record["kind"] == "llm-few-shot" and record["invalid_actions"] == 0
    assert record["steps"] == 3 or record["success"]
    assert {"prompts_cut", "demonstrations_left_out", "exact"} <= set(record["agent_stats"])


def test_a_suite_refuses_demonstrations_of_another_env(tmp_path, tiny_models):
    create_dataset(CORRIDOR_ID, tmp_path / "demos", episodes=2)
    with pytest.raises(SuiteError, match=f"recorded on {CORRIDOR_ID}, not BabyAI-Text-GoToLocal-v0"):
        load_suite(write_suite(tmp_path, SUITE), llm_overrides={"model": str(tiny_models.causal)})
