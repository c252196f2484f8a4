"""LLM-Personalize's plan parser on the paper's recorded plans (its fine-tuning pairs) and on edge cases, and
the paper's selection of imitation-learning demonstrations."""

from __future__ import annotations

import json

import pytest

from textagents.methods.llm_personalize.demonstrations import demonstrate, select_demonstrations
from textagents.methods.llm_personalize.plan_parser import MISSION_COMPLETE, parse_plan, split_steps
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.prompts import planner_prompt


def _recorded_plans(data_dir):
    for name in ("il_pairs_pomaria_2_train.jsonl", "st_iter1_pairs_pomaria_2_train.jsonl"):
        for line in (data_dir / "llm_personalize" / name).read_text().splitlines():
            yield json.loads(line)["messages"][2]["content"]


def test_every_recorded_plan_parses_into_known_steps(data_dir):
    plans = list(_recorded_plans(data_dir))
    assert len(plans) > 100
    verbs = set()
    for answer in plans:
        parsed = parse_plan(answer)
        assert parsed.unparseable == 0 and parsed.dropped == 0, answer
        numbered = answer.count("step ") + 1
        assert len(parsed.steps) == numbered, answer
        verbs |= {step.verb for step in parsed.steps}
    assert verbs == {"go to", "look at", "pick up", "place", MISSION_COMPLETE}


def test_an_object_plan_reads_back_as_the_commands_it_names():
    answer = (
        "go to tennis ball 1\nstep 2: look at tennis ball 1\nstep 3: pick up tennis ball 1\n"
        "step 4: go to bedroom 0 shelf 9\nstep 5: look at bedroom 0 shelf 9\n"
        "step 6: place tennis ball 1 on bedroom 0 shelf 9"
    )
    assert [s.command for s in parse_plan(answer).steps] == [
        "go to tennis ball 1",
        "look at tennis ball 1",
        "pick up tennis ball 1",
        "go to bedroom 0 shelf 9",
        "look at bedroom 0 shelf 9",
        "place tennis ball 1 on bedroom 0 shelf 9",
    ]


def test_the_originals_splitting_rules():
    # lower-cased, " :" joined, "step3:" markers, trailing "." and "," stripped, empty pieces dropped
    assert split_steps("Go to Bathroom 0.\n\nstep 2 : go to bedroom 0,step3: Mission complete.") == [
        "go to bathroom 0",
        "go to bedroom 0",
        "mission complete",
    ]


def test_unparseable_steps_are_counted_and_long_plans_cut_at_ten():
    parsed = parse_plan("go to kitchen 0\nstep 2: dance with the cat\nstep 3: I think I am done")
    assert [s.verb for s in parsed.steps] == ["go to", None, None] and parsed.unparseable == 2
    long = parse_plan("\n".join(f"step {i}: go to room {i}" for i in range(2, 16)), max_steps=10)
    assert len(long.steps) == 10 and long.dropped == 4  # 14 steps
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        parse_plan("go to x", max_steps=0)


def test_a_demonstration_gives_one_pair_per_planning_call_with_the_papers_prompt():
    env = HousekeepTextEnv(scenes=["Pomaria_2_int"], episode_source="llm_personalize")
    pairs = demonstrate(env, "Pomaria_2_int", 30)
    assert pairs is not None and pairs[-1][2]["content"] == MISSION_COMPLETE
    first = pairs[0]
    assert first[0]["content"] == "You are a one-handed household robot."
    assert first[1]["content"] == planner_prompt(
        "You are holding nothing.\n"
        + first[1]["content"].split("You are holding nothing.\n")[1].split(". \nGive me")[0]
    )
    assert all(parse_plan(p[2]["content"]).unparseable == 0 for p in pairs)


def test_the_papers_selection_of_demonstrations():
    chosen = select_demonstrations(scenes=["Pomaria_2_int"], train=3, validation=1)
    episodes = chosen.episodes["Pomaria_2_int"]
    assert len(episodes) == 4 and min(episodes) >= 25 and all(i % 25 >= 5 for i in episodes)
    assert episodes == sorted(episodes) and not chosen.rejected["Pomaria_2_int"]
    assert len(chosen.train["Pomaria_2_int"]) > 3 * 2 and len(chosen.validation["Pomaria_2_int"]) >= 2
