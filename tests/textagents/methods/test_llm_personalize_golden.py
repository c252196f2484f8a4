"""LLM-Personalize against its original code: the plan parser and the self-training selection give what the
original's own functions give (``golden/llm_personalize_*.json``, made by
``benchmarks/methods/llm_personalize/golden/make_golden.py`` from donggehan/codellmpersonalize @ 47844d2),
and a planning call lists the objects it moved as the original's logs do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textagents.methods.llm_personalize.plan_parser import MISSION_COMPLETE, PROMPT_PREFIX, parse_plan
from textagents.methods.llm_personalize.planner import (
    PlanningCall,
    PlanRules,
    play,
    self_training_pairs,
    self_training_selection,
)
from textenvs.envs.housekeep.env import HousekeepTextEnv

GOLDEN = Path(__file__).resolve().parent / "golden"
VERBS = {"nav": "go to", "look": "look at", "pick": "pick up", "place": "place"}


def _golden(name: str) -> dict:
    return json.loads((GOLDEN / f"llm_personalize_{name}.json").read_text())


def _expected(step: dict) -> tuple[str | None, tuple[str, ...]]:
    """The verb and names of one of the original's steps (``mission complete`` is caught before parsing)."""
    if step["text"] == MISSION_COMPLETE:
        return MISSION_COMPLETE, ()
    parsed = step["parsed"]
    if parsed is None:
        return None, ()
    if parsed["action"] == "place":
        return "place", (parsed["target_obj"], parsed["target"])
    return VERBS[parsed["action"]], (parsed["target"],)


def test_the_default_parser_reads_every_plan_as_the_original():
    plans = _golden("parser")["plans"]
    assert len(plans) >= 38
    for plan in plans:
        parsed = parse_plan(plan["answer"])
        assert [s.text for s in parsed.steps] == [s["text"] for s in plan["steps"]], plan["answer"]
        assert [(s.verb, s.names) for s in parsed.steps] == [_expected(s) for s in plan["steps"]], plan["answer"]


def _call(record: dict) -> PlanningCall:
    """A planning call with a golden record's outcome: its moves, correct set before, and count change."""
    before = frozenset(record["correct_objects"]["start"])
    diff = record["annotation"]["diff_correct_loc"]
    after = before | {f"new {i}" for i in range(diff)} if diff >= 0 else frozenset(sorted(before)[:diff])
    moved = record["outcome"]["objects_moved"]
    messages = [{"role": "system", "content": "system"}, {"role": "user", "content": f"call {record['id']}"}]
    messages[1]["content"] += PROMPT_PREFIX
    call = PlanningCall(messages, "answer", ["go to 'cup 1';"], [("go to cup 1", True)])
    call.correct_before, call.correct_after = before, frozenset(after)
    call.moves = tuple((name, *places) for name, places in moved.items())
    return call


def test_self_training_keeps_the_calls_the_original_keeps():
    golden = _golden("self_training")
    pairs = self_training_pairs(_call(record) for record in golden["records"])
    kept = [int(pair[1]["content"].removeprefix("call ")) for pair in pairs]
    assert sorted(kept) == sorted(golden["kept"])  # the original writes them sorted by key, we as met


def test_the_selection_says_why_the_original_leaves_each_other_call_out():
    golden = _golden("self_training")
    records = golden["records"]
    outcomes = [outcome for outcome, _ in self_training_selection(_call(record) for record in records)]
    for record, outcome in zip(records, outcomes, strict=True):
        diff = record["annotation"]["diff_correct_loc"]
        if record["id"] in golden["kept"]:
            assert outcome == "kept"
        elif diff > 0:
            assert outcome == "duplicate"  # raised the count, but a call with its key came first
        else:
            assert outcome == ("lowered" if diff < 0 else "moved_unchanged"), record["id"]
    assert outcomes.count("kept") == len(golden["kept"]) and outcomes.count("duplicate") == 2


def test_self_training_targets_are_the_raw_steps_as_the_original_writes_them():
    for target in _golden("self_training")["targets"]:
        steps = target["steps"]
        call = PlanningCall(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "Steps: step 1:"}], "", steps
        )
        call.played = [
            (MISSION_COMPLETE if s == MISSION_COMPLETE else f"command {i}", True) for i, s in enumerate(steps)
        ]
        call.correct_after = frozenset({"cup 1"})
        if steps == [MISSION_COMPLETE]:
            assert self_training_pairs([call]) == []  # the original logs mission complete as skipped
            continue
        ((_, user, assistant),) = self_training_pairs([call])
        assert user["content"] == "Steps: " and assistant["content"] == target["assistant"]


class _PutBackFirst:
    """Sweeps the rooms, then picks an object up and puts it back before tidying another one."""

    model_name = "put-back-first"

    def __init__(self, env):
        from textagents.llm import TokenUsage

        self.env, self.usage, self.calls = env, TokenUsage(), 0
        self.expected: tuple = ()

    def chat(self, messages, **sampling):
        from textenvs.envs.housekeep.expert import format_plan, next_misplaced

        world = self.env.unwrapped.world
        self.calls += 1
        if self.calls == 1:
            return format_plan([f"go to {room.name}" for room in world.rooms])
        if self.calls > 2:
            return MISSION_COMPLETE
        robot = world.robots[0]
        tidied, target = next_misplaced(world, robot)
        other = next(o for o in robot.known_objects if o != tidied)
        name, where = world.object_names[other], world.receptacles[world.location[other]].name
        tidy, start = world.object_names[tidied], world.receptacles[world.location[tidied]].name
        goal = world.receptacles[target].name
        self.expected = ((name, where, where), (tidy, start, goal))
        steps = [f"go to {name}", f"look at {name}", f"pick up {name}", f"look at {where}", f"place {name} on {where}"]
        steps += [f"go to {tidy}", f"look at {tidy}", f"pick up {tidy}", f"go to {goal}", f"look at {goal}"]
        return format_plan([*steps, f"place {tidy} on {goal}"])


@pytest.mark.parametrize("episode", [0, 7])
def test_a_call_lists_its_moves_in_order_with_an_object_put_back(episode):
    env = HousekeepTextEnv(scenes=["Rs_int"], episode_source="llm_personalize")
    backend = _PutBackFirst(env)
    (run,) = play(lambda: env, backend, [("Rs_int", episode)], rules=PlanRules(max_steps=11))
    call = run.calls[1]
    assert all(ok for _, ok in call.played) and len(call.played) == 11
    assert call.moves == backend.expected and call.raised_correct_count
    assert call.dedup_key == (backend.expected[0], call.correct_before)  # keyed on the first object moved


def test_the_plan_score_counts_the_change_in_correct_objects_as_the_originals_reward():
    # REWARD_WEIGHTS of annotate_gpt3_pair.ipynb: discovered objects + receptacles + 10 x (end - start count)
    call = PlanningCall([], "", [], discovered=3, correct_before=frozenset({"cup 1"}))
    call.correct_after = frozenset({"pan 1"})  # one became correct, one stopped being so
    assert call.score == 3
    call.correct_after = frozenset({"cup 1", "pan 1"})
    assert call.score == 13
