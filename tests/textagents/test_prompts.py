from __future__ import annotations

import json

import gymnasium as gym
import pytest

from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.agents.prompts import GenericPrompt, GlamPrompt, LLMPersonalizePrompt, prompt_builder_for

BABYAI_COMMANDS = ["turn left", "turn right", "go forward", "pick up", "drop", "toggle"]


def test_glam_prompt_is_glams_template_exactly():
    builder = GlamPrompt()
    obs = {"mission": "go to the red ball", "text": ""}
    steps = [["You see a wall 2 steps forward"], ["You see a red ball 1 step left", "You carry a key"], ["A"], ["B"]]
    builder.reset(obs, {})
    prompts = []
    for descriptions, action in zip(steps, ["go forward", "turn left", "toggle", "drop"], strict=True):
        prompts.append(builder.build(obs, {"admissible_commands": BABYAI_COMMANDS, "descriptions": descriptions}).text)
        builder.record(action)
    assert prompts[0] == (
        "Possible action of the agent: turn left, turn right, go forward, pick up, drop, toggle"
        " \n Goal of the agent: go to the red ball"
        " \n Observation 0: You see a wall 2 steps forward, \n Action 0: "
    )
    # Three observations and the two actions between them: the oldest ones slide out.
    assert prompts[3] == (
        "Possible action of the agent: turn left, turn right, go forward, pick up, drop, toggle"
        " \n Goal of the agent: go to the red ball"
        " \n Observation 0: You see a red ball 1 step left, You carry a key, \n Action 0: turn left"
        " \n Observation 1: A, \n Action 1: toggle"
        " \n Observation 2: B, \n Action 2: "
    )


def test_generic_prompt_keeps_a_short_history():
    builder = GenericPrompt(history=1)
    env = gym.make(CORRIDOR_ID)
    obs, info = env.reset(seed=0)
    builder.reset(obs, info)
    builder.build(obs, info)
    builder.record("go right")
    obs, *_, info = env.step("go right")
    text = builder.build(obs, info).text
    assert text.startswith("Goal: reach the door\nPossible actions: go left, go right, wait\nObservation: ")
    assert text.count("Observation:") == 2
    assert text.endswith(f"Action: go right\nObservation: {obs['text']}\nAction:")
    assert isinstance(prompt_builder_for(env), GenericPrompt)


def _recorded_prompts(data_dir, name):
    with open(data_dir / "llm_personalize" / name) as f:
        return [json.loads(line)["messages"] for line in f]


@pytest.mark.parametrize(
    ("name", "answer_prefix"),
    [("il_pairs_pomaria_2_train.jsonl", "\nstep 1: "), ("st_iter1_pairs_pomaria_2_train.jsonl", "")],
)
def test_llm_personalize_prompt_matches_every_recorded_prompt(data_dir, name, answer_prefix):
    builder = LLMPersonalizePrompt(answer_prefix=answer_prefix, data_dir=str(data_dir))
    head = "There are objects misplaced on wrong receptacles and potentially in the wrong room. \n"
    recorded = _recorded_prompts(data_dir, name)
    assert len(recorded) > 40
    for system, user, _answer in recorded:
        # The recorded context (what the Housekeep env's text is) sits between the head and ". \nGive me".
        assert user["content"].startswith(head)
        context = user["content"][len(head) : user["content"].rindex(". \nGive me the next steps")]
        prompt = builder.build({"text": context, "mission": ""}, {})
        assert prompt.system == system["content"]
        assert prompt.user == user["content"]
