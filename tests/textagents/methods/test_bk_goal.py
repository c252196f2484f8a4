"""BK-Goal: the goal parser on hand-written answers, the labelling conversation with a scripted LLM, the
original's rule against golden numbers made by the original's own arithmetic
(``benchmarks/methods/bk/golden/make_golden.py``), both rules on hand-built captions (with
all-MiniLM-L6-v2 at the calibrated thresholds), the library of rounds and the per-mission cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.textagents.methods.scripted_llm import ContextLimited, Scripted
from textagents.llm.base import ContextOverflowError
from textagents.llm.record import RecordingBackend, ReplayBackend
from textagents.methods.bk.config import GOAL_THRESHOLDS, SAMPLING, BKConfig
from textagents.methods.bk.environments import ENVIRONMENTS
from textagents.methods.bk.goal_potential import (
    NEAREST,
    GoalKnowledge,
    GoalPotential,
    NearestGoalsPotential,
    transition_caption,
    unit_rows,
)
from textagents.methods.bk.goal_prompt import (
    HISTORY_ROUNDS,
    SYSTEM,
    USER,
    describe_steps,
    parse_goals,
    propose_goals,
)
from textagents.methods.bk.samples import Step

ANSWER = """Here are the refined goals:

- Go to the **red ball**.
* find the red ball
1. Explore the room
2) go to the red ball
- ...
- Avoid walls; they block you.
The list above is short, as you asked.
"""


def test_list_items_are_goals_and_everything_else_is_ignored():
    assert parse_goals(ANSWER).goals == (
        "go to the red ball",
        "find the red ball",
        "explore the room",
        "avoid walls; they block you",
    )
    assert parse_goals("I think the agent should go to the red ball.").goals == ()
    assert parse_goals("- " + "x" * 200 + "\n- 42\n- turn left").goals == ("turn left",)
    assert len(parse_goals("\n".join(f"- goal {i}" for i in range(50))).goals) == 20


STEPS = [
    Step("go to the red ball", None, "You see a wall 2 steps forward", 0.0, 9),
    Step("go to the red ball", "turn left", "You see a red ball 3 steps forward", 0.0, 4),
    Step("go to the red ball", "go forward", "You see a red ball 2 steps forward", 0.0, 3),
]


def test_each_round_shows_new_observations_and_keeps_the_conversation():
    backend = Scripted(
        ["- go to the red ball\n- find the red ball", "no list at all", "- Face the red ball\n- find the red ball"]
    )
    proposal = propose_goals(backend, "babyai_text", "go to the red ball", STEPS, rounds=3, per_round=1)
    assert proposal.goals == ["go to the red ball", "find the red ball", "face the red ball"]
    assert proposal.unparsed == 1 and len(proposal.answers) == 3
    first, last = backend.asked[0], backend.asked[2]
    assert first[:2] == [
        {"role": "system", "content": SYSTEM},
        {"role": "system", "content": ENVIRONMENTS["babyai_text"]},
    ]
    assert first[2]["content"] == USER.format(observations=describe_steps("go to the red ball", STEPS[:1]))
    assert "The agent's mission: go to the red ball." in first[2]["content"]
    assert 'Observation 1, after the action "go forward":\nYou see a red ball 2 steps forward' in last[-1]["content"]
    assert [m["role"] for m in last] == ["system", "system", "user", "assistant", "user", "assistant", "user"]


@pytest.fixture(scope="module")
def embed():
    from textagents.sb3.features import SentenceEmbedder

    return SentenceEmbedder()


def test_phi_counts_the_goals_one_sentence_of_the_caption_matches(embed):
    goals = {"go to the red ball": ["go to the red ball", "pick up the blue key", "open the yellow door"]}
    potential = GoalPotential(goals.__getitem__, embed, GOAL_THRESHOLDS["count"])
    two = {"mission": "go to the red ball", "text": "You see a red ball 2 steps forward\nYou carry a blue key"}
    assert potential(two, {}) == 2.0
    assert potential({"mission": "go to the red ball", "text": "You see a wall 3 steps left"}, {}) == 0.0
    assert potential({"mission": "go to the red ball", "text": ""}, {}) == 0.0
    assert potential.calls == 3 and potential.matches == 2
    # the paper's 0.85 (for bert-small) would count neither
    assert GoalPotential(goals.__getitem__, embed, 0.85)(two, {}) == 0.0


def test_goal_embeddings_are_computed_once_per_goal_list():
    asked: list[list[str]] = []

    def embed(texts):
        asked.append(list(texts))
        return np.array([[1.0, 0.0] if "red" in t else [0.0, 1.0] for t in texts], dtype=np.float32)

    potential = GoalPotential(lambda mission: ["reach red", "reach blue"], embed, 0.9)
    obs = {"mission": "m", "text": "a red thing\na blue thing"}
    assert potential(obs, {}) == 2.0 and potential(obs, {}) == 2.0
    assert asked.count(["reach red", "reach blue"]) == 1


def test_goals_are_asked_once_per_mission_kept_in_the_run_and_restored(tmp_path):
    # labelling seed 0's samples show the mission "go to the red ball" (42's: "go to a red ball")
    config = BKConfig(shaping="goal", goal_rounds=1, goal_samples=2, goal_rule="count", labelling_seed=0)
    backend = Scripted(["- go to the red ball", "- pick up the key"])
    knowledge = GoalKnowledge(config, tmp_path, lambda: backend)
    metrics = knowledge.label()
    assert metrics["goal/missions"] == 1 and metrics["goal/goals_per_mission"] == 1.0
    assert knowledge.goals_for("go to the red ball") == ["go to the red ball"]
    assert knowledge.goals_for("pick up a key") == ["pick up the key"]  # a new mission: asked on first sight
    assert knowledge.goals_for("pick up a key") == ["pick up the key"] and len(backend.asked) == 2
    saved = json.loads((tmp_path / "goals.json").read_text())
    assert saved["pick up a key"]["answers"] == ["- pick up the key"]

    restored = GoalKnowledge(config, tmp_path, lambda: pytest.fail("a restored run asks no LLM"))
    restored.restore(json.loads(json.dumps(knowledge.state())), {})
    assert restored.goals_for("go to the red ball") == ["go to the red ball"]
    assert restored.goals_for("pick up a key") == ["pick up the key"]


def test_the_conversation_keeps_only_the_last_rounds():
    backend = Scripted([f"- goal {i}" for i in range(HISTORY_ROUNDS + 3)])
    propose_goals(backend, "babyai_text", "go to the red ball", STEPS, rounds=HISTORY_ROUNDS + 3, per_round=1)
    assert [len(asked) for asked in backend.asked][-2:] == [2 + 2 * HISTORY_ROUNDS + 1] * 2
    assert backend.asked[-1][3] == {"role": "assistant", "content": "- goal 2"}


GOLDEN = json.loads((Path(__file__).parent / "golden" / "bk_goal.json").read_text())
COMMANDS = ["turn left", "turn right", "go forward"]


def _golden_call(index: int) -> tuple[dict, dict]:
    before = {"mission": "m", "text": f"before {index}"}
    return {"mission": "m", "text": f"now {index}"}, {"history": ((None, before),), "action": 2}


def test_the_original_rule_matches_the_originals_rewards_on_golden_embeddings():
    vectors = {f"context {i}": v for i, v in enumerate(GOLDEN["key_embeddings"])}
    vectors.update({f"goal {j}": v for j, v in enumerate(GOLDEN["goals_embeddings"])})
    for index, (query, caption) in enumerate(zip(GOLDEN["query"], GOLDEN["caption"], strict=True)):
        history = [Step("m", None, f"before {index}", 0.0, None)]
        vectors[describe_steps("m", history)] = query
        vectors[transition_caption(f"before {index}", "go forward", f"now {index}")] = caption
    library = [(f"context {i}", [f"goal {j}" for j in goals]) for i, goals in enumerate(GOLDEN["goal_library"])]
    potential = NearestGoalsPotential(
        lambda mission: library, lambda texts: np.array([vectors[t] for t in texts]), GOLDEN["threshold"], COMMANDS
    )
    phi = [potential(*_golden_call(index)) for index in range(len(GOLDEN["rewards"]))]
    assert phi == pytest.approx(GOLDEN["rewards"], rel=1e-6, abs=1e-9)
    assert potential.calls == 6 and potential.rewarded == sum(r > 0 for r in GOLDEN["rewards"])


def _cosine(embed, a: str, b: str) -> float:
    u, v = embed([a, b])
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


def test_the_original_rule_pays_the_similarity_of_the_last_transition_to_the_nearest_rounds_goals(embed):
    mission = "go to the red ball"
    near_ball = describe_steps(mission, [Step(mission, "go forward", "You see a red ball 2 steps forward", 0, 1)])
    near_key = describe_steps(mission, [Step(mission, "turn left", "You see a blue key 1 step left", 0, 5)])
    library = [(near_ball, ["go to the red ball"]), (near_key, ["pick up the blue key"])]

    def potential(threshold):
        return NearestGoalsPotential(lambda m: library, embed, threshold, COMMANDS)

    before = {"mission": mission, "text": "You see a red ball 2 steps forward"}
    now = {"mission": mission, "text": "You see a red ball 1 step forward"}
    moved = {"history": ((None, before),), "action": 2}
    caption = transition_caption(before["text"], "go forward", now["text"])
    best = max(_cosine(embed, caption, goal) for goal in ("go to the red ball", "pick up the blue key"))
    phi = potential(GOAL_THRESHOLDS["original"])(now, moved)
    assert phi == pytest.approx(best, rel=1e-5) and phi > GOAL_THRESHOLDS["original"]
    walls = {"mission": mission, "text": "You see a wall 3 steps left"}
    assert potential(GOAL_THRESHOLDS["original"])(walls, {"history": ((None, walls),), "action": 0}) == 0.0
    assert potential(0.85)(now, moved) == 0.0  # the paper's 0.85 (for bert-small) pays nothing here


def test_the_library_holds_each_round_with_what_it_showed_and_a_new_missions_rounds_come_last(tmp_path):
    config = BKConfig(shaping="goal", goal_rounds=2, goal_samples=2)
    backend = Scripted(["- go to the red ball", "no goals", "- pick up the key", "- open the door"])
    knowledge = GoalKnowledge(config, tmp_path, lambda: backend)
    knowledge.label()
    steps = knowledge.steps
    mission = steps[0].mission
    assert knowledge.library(mission) == [
        (describe_steps(mission, steps[:2]), ("go to the red ball",)),
        (describe_steps(mission, steps[2:4]), ()),
    ]
    rounds = knowledge.library("pick up a key")
    assert rounds[2:] == [
        (describe_steps("pick up a key", steps[:2]), ("pick up the key",)),
        (describe_steps("pick up a key", steps[2:4]), ("open the door",)),
    ]
    assert knowledge.history == 2 and GoalKnowledge(BKConfig(goal_rule="count"), tmp_path, lambda: backend).history == 0


@pytest.mark.parametrize("rounds", [1, 3, 4])
def test_the_history_is_embedded_only_when_the_library_has_more_rounds_than_the_nearest_taken(rounds):
    rng, vectors, asked = np.random.default_rng(0), {}, []

    def embed(texts):
        asked.extend(texts)
        return np.array([vectors.setdefault(t, rng.normal(size=8)) for t in texts])

    library = [(f"context {i}", [f"goal {i}"]) for i in range(rounds)]
    potential = NearestGoalsPotential(lambda mission: library, embed, -1.0, COMMANDS)
    now, info = _golden_call(0)
    phi = potential(now, info)
    history = describe_steps("m", [Step("m", None, "before 0", 0.0, None)])
    caption = transition_caption("before 0", "go forward", "now 0")
    assert (history in asked) == (rounds > 3)
    if rounds <= 3:  # every round's goals are among the nearest's: Φ is the best cosine over all of them
        cosines = unit_rows(embed([f"goal {i}" for i in range(rounds)])) @ unit_rows(embed([caption]))[0]
        assert phi == pytest.approx(float(cosines.max()), rel=1e-6)


def _original_rule(embed, library, history: str, caption: str, threshold: float) -> float:
    """The original's rule as written (``models/reward_provider.py:72-98``): the history and the caption embedded,
    the 3 rounds whose contexts are nearest the history, the best similarity of their goals, if above the
    threshold."""
    query, last = unit_rows(embed([history, caption]))
    contexts = unit_rows(embed([context for context, _ in library]))
    nearest = np.argsort(contexts @ query)[-NEAREST:]
    goals = [goal for i in nearest for goal in library[i][1]]
    best = float((unit_rows(embed(goals)) @ last).max()) if goals else 0.0
    return best if best > threshold else 0.0


@pytest.mark.parametrize("threshold", [-1.0, 0.3, 0.6, 2.0])
def test_the_history_is_embedded_only_when_a_rounds_goals_pass_and_phi_is_the_original_rules(threshold):
    rng, vectors, asked = np.random.default_rng(1), {}, []

    def embed(texts):
        asked.extend(texts)
        return np.array([vectors.setdefault(t, rng.normal(size=4)) for t in texts])

    library = [(f"context {i}", [f"goal {i}.{j}" for j in range(i % 3)]) for i in range(6)]  # rounds 0, 3: no goal
    potential = NearestGoalsPotential(lambda mission: library, embed, threshold, COMMANDS)
    for index in range(40):
        now, info = _golden_call(index)
        asked.clear()
        phi = potential(now, info)
        history = describe_steps("m", [Step("m", None, f"before {index}", 0.0, None)])
        caption = transition_caption(f"before {index}", "go forward", f"now {index}")
        passing = max(
            float((unit_rows(embed(goals)) @ unit_rows(embed([caption]))[0]).max()) for _, goals in library if goals
        )
        assert (history in asked) == (passing > threshold)
        assert phi == pytest.approx(_original_rule(embed, library, history, caption, threshold), rel=1e-6, abs=1e-12)


def test_a_round_that_does_not_fit_the_context_is_asked_without_the_oldest_rounds():
    """A small model's answer can run to the context's end (Qwen2.5-Coder-0.5B's did): the next round is asked
    without it instead of failing the run."""
    looping = "- go to the red ball\n" + "- go to a wall\n" * 300
    backend = ContextLimited([looping, "- pick up the key", "- open the door"], context_chars=len(looping) + 1500)
    proposal = propose_goals(backend, "babyai_text", "go to the red ball", STEPS, rounds=3, per_round=1)
    assert proposal.answers[1:] == ["- pick up the key", "- open the door"] and proposal.trimmed == 2
    assert [len(asked) for asked in backend.asked] == [3, 3, 5]  # rounds 2 and 3 without round 1
    assert proposal.goals == ["go to the red ball", "go to a wall", "pick up the key", "open the door"]


def test_a_trimmed_labelling_replays_from_its_recording(tmp_path):
    """The model's refusals are recorded, so a replay asks the same shorter conversations (not a miss)."""
    looping = "- go to the red ball\n" + "- go to a wall\n" * 300
    calls = tmp_path / "calls.jsonl"
    live = ContextLimited([looping, "- pick up the key", "- open the door"], context_chars=len(looping) + 1500)
    recorded = propose_goals(
        RecordingBackend(live, calls), "babyai_text", "go to the red ball", STEPS, rounds=3, per_round=1
    )
    refusals = [line for line in calls.read_text().splitlines() if '"refused": "context_overflow"' in line]
    assert len(refusals) == live.refused == 2
    replayed = propose_goals(ReplayBackend(calls), "babyai_text", "go to the red ball", STEPS, rounds=3, per_round=1)
    assert replayed == recorded and replayed.trimmed == 2
    with pytest.raises(ContextOverflowError, match="recorded"):
        ReplayBackend(calls).chat(json.loads(refusals[0])["request"]["messages"], **SAMPLING)
