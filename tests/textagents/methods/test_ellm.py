"""ELLM's goal suggestion: the prompt for recorded captions, the answer parser, SimpleOracle on hand-built
states, and the intrinsic reward wrapper on scripted steps of Crafter-Text-ELLM."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import textenvs  # noqa: F401
from textagents.methods.ellm.goals import Caption, LLMGoals, SimpleOracle, UniformGoals, suggestion_quality
from textagents.methods.ellm.prompt import PREFIX, goal_prompt, parse_goals
from textagents.methods.ellm.reward import EllmReward, cosine, pays


def _captions(data_dir):
    return [s["ellm"] for s in json.load(gzip.open(data_dir / "crafter_text" / "captions.json.gz"))["samples"]]


def test_the_prompt_for_recorded_captions(data_dir):
    captions = _captions(data_dir)
    plain = next(c for c in captions if not c[1] and not c[2])
    assert goal_prompt(*plain) == PREFIX + _upper_first(plain[0]) + " What do you do?\n"
    held = next(c for c in captions if c[1] and "sleepy" not in c[2])
    assert held[0].startswith("you see cow, grass, and tree.")
    assert goal_prompt(*held) == (
        PREFIX + "You see cow, grass, and tree. You are targeting grass. You have in your inventory plant. "
        "What do you do?\n"
    )  # hungry and thirsty are dropped
    sleepy = next(c for c in captions if "sleepy" in c[2] and c[1])
    assert goal_prompt(*sleepy).endswith(
        _upper_first(sleepy[0]) + " " + _upper(sleepy[1]) + " You feel sleepy. What do you do?\n"
    )
    assert goal_prompt("you see water.", "", "you feel sleepy.").endswith(
        "You see water. You feel sleepy. What do you do?\n"
    )
    assert PREFIX.startswith("Valid actions: sleep, eat, attack, chop, drink, place, make, mine\n")


def _upper(text):
    return text[:1].upper() + text[1:]


def _upper_first(obs):
    text = _upper(obs)
    second = text.find(".") + 2
    return text[:second] + text[second : second + 1].upper() + text[second + 1 :]


GOLDEN = Path(__file__).parent / "golden"


def _golden(name):
    return json.loads((GOLDEN / name).read_text())["cases"]


@pytest.mark.parametrize("case", _golden("ellm_parser.json"), ids=lambda c: repr(c["answer"]))
def test_the_parser_reads_answers_as_the_original(case):
    parsed = parse_goals(case["answer"])
    if case["goals"] is None:
        assert not parsed.valid and parsed.goals == ()
    else:
        assert parsed.valid and sorted(parsed.goals) == case["goals"]


def test_the_lenient_parser_keeps_the_bullets_and_counts_other_lines():
    parsed = parse_goals("- Chop tree.\n- Attack cow\n- chop tree\nI would also rest.\n- place crafting-table", False)
    assert parsed.goals == ("chop tree", "attack cow", "place crafting", "table")  # the original split on "-"
    assert parsed.non_bullet_lines == 1 and not parsed.valid and not parsed.well_formed
    assert parse_goals("- Eat plant\n```\n", strict=False).goals == ("eat plant",)
    assert parse_goals("", strict=False).goals == ()


def _caption(observation, items=None, inventory="", status=""):
    return Caption(observation, inventory, status, {**dict.fromkeys(["wood", "stone", "sapling"], 0), **(items or {})})


def test_simple_oracle_follows_the_prerequisite_table():
    oracle = SimpleOracle()
    assert oracle.suggest(_caption("you see cow, grass, and tree. you are targeting grass.")) == [
        "attack cow",
        "eat cow",
        "chop tree",
        "chop grass",
    ]
    with_wood = oracle.suggest(_caption("you see crafting table, and tree.", {"wood": 1}))
    assert "make wood pickaxe" in with_wood and "make wood sword" in with_wood
    assert "place crafting table" not in with_wood and "make crafting table" in with_wood  # one is in view
    assert "mine stone" not in oracle.suggest(_caption("you see stone."))  # no wood pickaxe
    assert "mine stone" in oracle.suggest(_caption("you see stone.", {"wood_pickaxe": 1}))
    assert "place furnace" not in oracle.suggest(_caption("you see grass.", {"stone": 3}))
    assert "place furnace" in oracle.suggest(_caption("you see grass.", {"stone": 4}))
    assert "sleep" in oracle.suggest(_caption("you see grass.", status="you feel sleepy."))
    assert "sleep" not in oracle.suggest(_caption("you see grass.", status="you feel hungry."))
    # the original's thirst rule reads the inventory sentence, where "thirsty" never is: it never fires
    assert "drink water" not in oracle.suggest(_caption("you see grass.", status="you feel thirsty."))


def test_uniform_goals_and_suggestion_quality():
    names = ("chop tree", "mine stone", "sleep", "move left")
    assert UniformGoals(names).suggest(_caption("you see grass.")) == list(names)  # the original: every name
    goals = UniformGoals(names, count=3, seed=1).suggest(_caption("you see grass."))  # ours, an option
    assert len(set(goals)) == 3 and set(goals) <= set(names)
    quality = suggestion_quality(["chop grass", "fly away", "attack cow"], _caption("you see grass."), {"attack cow"})
    assert quality == pytest.approx({"valid": 2 / 3, "achievable": 1 / 3, "novel": 2 / 3})


class _Backend:
    """Answers ``answer``, or ``answers[seed]`` when given: one answer per sampling seed."""

    model_name = "scripted"

    def __init__(self, answer=None, answers=None):
        from textagents.llm import TokenUsage

        self.answer, self.answers, self.prompts, self.seeds, self.usage = answer, answers, [], [], TokenUsage()

    def generate(self, prompts, **sampling):
        self.prompts += prompts
        self.seeds.append(sampling.get("seed"))
        return [self.answers[sampling["seed"]] if self.answers else self.answer] * len(prompts)


def test_llm_goals_are_cached_per_prompt():
    backend = _Backend("- Chop tree\n- Drink water")
    source = LLMGoals(backend)
    caption = _caption("you see tree, and water. you are targeting tree.")
    assert source.suggest(caption) == ["chop tree", "drink water"] == source.suggest(caption)
    assert len(backend.prompts) == 1 and source.calls == 1 and source.cache_hits == 1 and source.malformed == 0


def test_a_voided_answer_is_not_cached_and_the_llm_is_asked_again():
    backend = _Backend("- Chop tree\nand then sleep")
    source = LLMGoals(backend)
    caption = _caption("you see tree.")
    assert source.suggest(caption) == [] == source.suggest(caption)
    assert len(backend.prompts) == 2 and source.calls == 2 and source.malformed == 2 and not source.cache
    lenient = LLMGoals(_Backend("- Chop tree\nand then sleep"), parsing="lenient")
    assert lenient.suggest(caption) == ["chop tree"] == lenient.suggest(caption) and lenient.calls == 1
    with pytest.raises(ValueError, match="parsing must be one of"):
        LLMGoals(backend, parsing="loose")


def test_a_prompt_asked_again_after_a_voided_answer_draws_a_new_answer():
    """The original's API sampled anew on each call; with a fixed seed the voided answer would come back forever."""
    cut_after_a_newline = "- Sleep\n- Sleep\n"  # an answer cut at the token limit: the empty last line voids it
    backend = _Backend(answers={0: cut_after_a_newline, 1: cut_after_a_newline, 2: "- Sleep\n- Chop tree"})
    source = LLMGoals(backend)
    caption = _caption("you see tree.")
    assert source.suggest(caption) == [] == source.suggest(caption)
    assert source.suggest(caption) == ["sleep", "chop tree"] == source.suggest(caption)
    assert backend.seeds == [0, 1, 2] and source.malformed == 2 and not source.voided
    unseeded = _Backend(cut_after_a_newline)
    LLMGoals(unseeded, sampling={"temperature": 0.1}).suggest(caption)
    assert unseeded.seeds == [None]


_SEEN: dict[str, int] = {}


def _exact_embed(texts):
    """Orthogonal vectors per distinct text: similarity 1 for the same words, 0 otherwise."""
    return np.stack([np.eye(64)[_SEEN.setdefault(t, len(_SEEN))] for t in texts])


def test_a_matching_action_pays_once_per_episode_and_others_pay_nothing():
    env = EllmReward(gym.make("Crafter-Text-ELLM-v0"), SimpleOracle(), _exact_embed, threshold=0.99)
    _, info = env.reset(seed=0)
    assert "chop grass" in info["goals"]
    _, reward, *_, info = env.step("chop grass")  # targeting grass: succeeds and was suggested
    assert reward == pytest.approx(1.0) and info["intrinsic_reward"] == pytest.approx(1.0)
    assert "chop grass" in info["achieved_goals"] and "chop grass" not in info["goals"]
    assert "chop grass" in info["suggested_goals"]  # still suggested: novelty is the wrapper's filter
    _, reward, *_, info = env.step("chop grass")
    assert reward == 0.0  # achieved: no longer a goal
    _, reward, *_, info = env.step("attack zombie")  # no zombie: the action fails
    assert reward == 0.0 and not info["action_success"]
    env.reset(seed=0)
    _, reward, *_ = env.step("chop grass")
    assert reward == pytest.approx(1.0)  # a new episode: achievable again


@pytest.mark.parametrize("case", _golden("ellm_threshold.json"), ids=lambda c: f"{c['score']}>{c['threshold']}")
def test_the_threshold_test_is_the_originals(case):
    assert pays(case["score"], case["threshold"]) is case["rewarded"]


def test_a_similarity_equal_to_the_threshold_pays_nothing():
    vectors = {"cut grass": np.array([1.0, 0.0]), "chop grass": np.array([0.9, np.sqrt(0.19)])}
    at = float(cosine(vectors["chop grass"], vectors["cut grass"][None])[0])
    for threshold, paid in ((at, False), (np.nextafter(at, 0), True)):
        embed = lambda texts: np.stack([vectors[t] for t in texts])  # noqa: E731
        env = EllmReward(gym.make("Crafter-Text-ELLM-v0"), LLMGoals(_Backend("- Cut grass")), embed, threshold)
        env.reset(seed=0)
        _, reward, *_ = env.step("chop grass")
        assert (reward > 0) is paid


def test_without_the_success_check_an_attempt_pays():
    names = ("attack zombie", "chop grass")
    for check, paid in ((True, 0.0), (False, 1.0)):
        env = EllmReward(gym.make("Crafter-Text-ELLM-v0"), UniformGoals(names), _exact_embed, 0.99, False, False, check)
        env.reset(seed=0)
        _, reward, *_, info = env.step("attack zombie")  # no zombie: the action fails
        assert not info["action_success"] and reward == pytest.approx(paid)


def test_paraphrased_goals_pay_with_the_real_embedder():
    from textagents.sb3.features import SentenceEmbedder

    embed = SentenceEmbedder()
    source = _Backend("- Attack the cow\n- Chop the grass")
    env = EllmReward(gym.make("Crafter-Text-ELLM-v0"), LLMGoals(source), embed, goal_observation=True)
    obs, info = env.reset(seed=0)
    assert info["goals"] == ["attack the cow", "chop the grass"] and obs["goals"].shape == (embed.dim,)
    np.testing.assert_allclose(obs["goals"], embed(["Your goal is: attack the cow chop the grass."])[0])
    _, reward, *_, info = env.step("chop grass")
    assert 0.85 <= reward < 1.0  # "chop the grass" is the same goal for all-MiniLM-L6-v2
    assert info["achieved_goals"] == ["chop the grass"] and info["goals"] == ["attack the cow"]
