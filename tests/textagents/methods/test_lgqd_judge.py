"""Language-grounded QD's judges: the deterministic landmark-order score on hand-made annotations, the LLM
judge's prompt and score parsing on hand-written answers through a scripted backend, and their agreement."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import textenvs  # noqa: F401  (registers the ids)
from textagents.llm.accounting import TokenUsage
from textagents.methods.lgqd.judge import (
    SCORE_GRID,
    SYSTEM,
    expected_score_judge,
    judge_agreement,
    judge_prompt,
    landmark_order_score,
    llm_judge,
    named_landmarks,
    parse_score,
    phrase_object,
    visited_landmarks,
)
from textenvs.envs.fastsim.layouts import get_layout

HOUSEHOLD = get_layout("household")


def point(t: int, colour: str | None, *phrases: str) -> dict:
    """An annotation entry as the env writes it (distances and the tile's neighbours are not used here)."""
    colours = [colour, {"up": ["yellow", 129]}] if colour else None
    return {"timestep": t, "pos": [20.55, 49.47], "semantics": {p: 12.5 for p in phrases}, "colors": colours}


#: pink tile by the fridge, then the bathtub on yellow, then the fan on the red tile, then on red again
TRAJECTORY = [
    point(0, "pink", "to the north  of fridge"),
    point(40, "yellow", "to the south east of bathtub"),
    point(80, "red", "on fan"),
    point(120, "red"),
]


def test_named_landmarks_are_objects_and_colours_in_the_texts_order():
    text = "Leave the Pink tiles, pass the file  cabinet, the cabinet, the cabinet again, two beds, a grey floor"
    assert named_landmarks(text, HOUSEHOLD) == ["pink", "file_cabinet", "cabinet", "bed", "gray"]
    assert named_landmarks("the bedroom of a fantastic vegetable; reds", HOUSEHOLD) == []


def test_annotation_phrases_name_their_object():
    assert phrase_object("to the north  of fan") == "fan"
    assert phrase_object("to the south east of file_cabinet") == "file_cabinet"
    assert phrase_object("on bed") == "bed"
    assert visited_landmarks(list(reversed(TRAJECTORY)))[:2] == [{"pink", "fridge"}, {"yellow", "bathtub"}]


def test_landmarks_in_the_visited_order_score_one():
    description = "Start on the pink tiles near the fridge, drive past the bathtub and stop on the fan."
    assert landmark_order_score(description, TRAJECTORY) == 1.0
    assert landmark_order_score("Go to the fan on the red tile.", TRAJECTORY) == 1.0  # one entry, two landmarks


def test_landmarks_in_the_wrong_order_score_less():
    assert landmark_order_score("Go to the fan, then to the bathtub.", TRAJECTORY) == 0.5
    reversed_route = "From the fan go past the bathtub to the fridge."
    assert landmark_order_score(reversed_route, TRAJECTORY) == pytest.approx(1 / 3)
    assert landmark_order_score("Pass the bathtub, visit the sofa, end at the fan.", TRAJECTORY) == pytest.approx(2 / 3)


def test_landmarks_never_visited_score_zero_and_no_landmark_none():
    assert landmark_order_score("Visit the sofa and then the bed on the white tile.", TRAJECTORY) == 0.0
    assert landmark_order_score("Wander around a little.", TRAJECTORY) is None
    assert landmark_order_score("Go to the fan.", []) == 0.0


def test_the_experts_route_in_the_env_is_judged_from_the_envs_annotation(data_dir):
    env = gym.make("Fastsim-Text-Household-v0", max_steps=200, data_dir=data_dir)
    obs, info = env.reset(seed=0)
    expert = env.unwrapped.expert()
    while "trajectory_annotation" not in info:  # the planner drives from the fridge's corner to the cabinet
        obs, _, _, _, info = env.step(expert.act(obs, info))
    annotation = info["trajectory_annotation"]
    assert landmark_order_score("From the fridge cross the yellow tiles to the cabinet.", annotation) == 1.0
    assert landmark_order_score("Go to the cabinet, then back to the fridge.", annotation) == 0.5
    assert landmark_order_score("Drive to the bed.", annotation) == 0.0


@pytest.mark.parametrize(
    ("answer", "raw", "score"),
    [
        ("A) It reached the fan.\nB) ...\nC) score==0.8", 0.8, 0.8),
        ("The final answer:\nscore == 0.75", 0.75, 0.75),
        ("**score==1**", 1.0, 1.0),
        ("`score==<0.6>`", 0.6, 0.6),
        ("Score==.5", 0.5, 0.5),
        ("score==1.3 since it did more than asked", 1.3, 1.0),
        ("score==-0.2", -0.2, 0.0),
        ("First thought score==0.2, on reflection:\nscore==0.9", 0.9, 0.9),
        ("I cannot rate this trajectory.", None, None),
        ("score: 0.7", None, None),
        ("score==", None, None),
    ],
)
def test_the_score_is_the_last_score_line_clamped(answer, raw, score):
    judgement = parse_score(answer)
    assert judgement.raw == raw and judgement.score == score and judgement.answer == answer


class Scripted:
    model_name = "scripted"

    def __init__(self, answers):
        self.answers, self.asked, self.sampling, self.usage = list(answers), [], [], TokenUsage()

    def chat(self, messages, **sampling):
        self.asked.append([dict(m) for m in messages])
        self.sampling.append(sampling)
        return self.answers.pop(0)


def test_the_llm_judge_sends_description_and_simplified_annotation_and_parses_answers():
    backend = Scripted(["It went to the fan.\nscore==0.9", "No score, sorry."])
    cases = [("Stop on the fan.", TRAJECTORY), ("Go to the sofa.", TRAJECTORY[:1])]
    judgements = llm_judge(backend, cases)
    assert [j.score for j in judgements] == [0.9, None]
    assert backend.sampling[0]["temperature"] == 0.0
    system, user = backend.asked[0]
    assert system == {"role": "system", "content": SYSTEM} and user["role"] == "user"
    prompt = user["content"]
    descr, points = prompt.rsplit("[DESCR] ", 1)[1].split("\n[DICT] ", 1)
    assert descr == "Stop on the fan."
    shown = json.loads(points.split("\n", 1)[0])
    assert shown[2] == {"timestep": 80, "pos": [20.6, 49.5], "semantics": ["on fan"], "colors": "red"}
    assert shown[3]["semantics"] == []
    assert prompt.rstrip().endswith("score==<number>.")
    assert "- fan, (60, 140), red" in prompt  # the fan at map pixel (60, 60), y flipped, on the red tile
    assert "pink   | gray   | white" in prompt


class GridScorer:
    """Scores the expected-score judge's grid: log-weights given per case, the contexts kept."""

    model_name = "grid-scorer"

    def __init__(self, rows):
        self.rows, self.contexts, self.candidates, self.usage = list(rows), [], [], TokenUsage()

    def score(self, contexts, candidates):
        self.contexts += contexts
        self.candidates += candidates
        return [self.rows.pop(0) for _ in contexts]


def test_the_expected_score_judge_weighs_the_grid_by_the_llms_probabilities():
    peaked = [0.0] * 11
    peaked[7] = 50.0  # all the mass on "0.7"
    two = [-1e9] * 11
    two[2], two[8] = np.log(3.0), 0.0  # "0.2" three times as likely as "0.8": 0.75 * 0.2 + 0.25 * 0.8
    scorer = GridScorer([peaked, two])
    cases = [("Stop on the fan.", TRAJECTORY), ("Go to the sofa.", TRAJECTORY[:1])]
    judgements = expected_score_judge(scorer, cases)
    assert judgements[0].score == pytest.approx(0.7) and judgements[1].score == pytest.approx(0.35)
    assert scorer.candidates[0] == list(SCORE_GRID) and len({len(g) for g in SCORE_GRID}) == 1
    assert scorer.contexts[0].startswith(SYSTEM) and scorer.contexts[0].endswith("\nscore==")
    assert judge_prompt(*cases[1]) in scorer.contexts[1]
    assert "0.2: 0.750" in judgements[1].answer


def test_the_prompt_follows_the_layout_it_is_given():
    assert "file cabinet" in judge_prompt("x", TRAJECTORY) and "file_cabinet" not in judge_prompt("x", [])
    maze = judge_prompt("Reach the goal.", [point(0, None)], get_layout("hardmaze"))
    assert "tiles of about" not in maze and '"colors": null' in maze


def test_agreement_counts_only_cases_both_judges_scored():
    llm = [1.0, 0.2, None, 0.8, 0.0, 0.4]
    deterministic = [1.0, 0.0, 0.5, 0.5, None, 0.6]
    result = judge_agreement(llm, deterministic)
    pairs_llm, pairs_det = [1.0, 0.2, 0.8, 0.4], [1.0, 0.0, 0.5, 0.6]
    assert result["pairs"] == 4 and result["llm_unparsed"] == 1 and result["deterministic_undefined"] == 1
    assert result["accuracy_at_threshold"] == 0.75  # 0.4 vs 0.6 falls on two sides of 0.5
    assert result["mean_absolute_difference"] == pytest.approx((0 + 0.2 + 0.3 + 0.2) / 4)
    assert result["pearson"] == pytest.approx(np.corrcoef(pairs_llm, pairs_det)[0, 1])
    assert result["spearman"] == pytest.approx(stats.spearmanr(pairs_llm, pairs_det).statistic)
    assert result["spearman"] == pytest.approx(0.8)


def test_agreement_without_variation_has_no_correlation():
    result = judge_agreement([0.5, 0.5], [0.0, 1.0])
    assert result["pearson"] is None and result["spearman"] is None and result["accuracy_at_threshold"] == 0.5
    assert judge_agreement([None], [1.0])["pairs"] == 0
    with pytest.raises(ValueError, match="2 LLM scores but 1"):
        judge_agreement([0.1, 0.2], [0.3])
