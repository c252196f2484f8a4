"""ELLM's Housekeep variant: the yes/no prompt, the answer parser, the cached judge, the placement reward
wrapper on scripted steps of Housekeep-Text, and the judgement metrics on hand-made pairs."""

from __future__ import annotations

import numpy as np
import pytest

from textagents.llm import TokenUsage
from textagents.methods.ellm.housekeep import PlacementReward
from textagents.methods.ellm.judgements import Pair, judgement_metrics, sample_pairs, scene_pairs
from textagents.methods.ellm.placement import PREFIX, PlacementJudge, parse_yes_no, placement_prompt
from textenvs.envs.housekeep.annotations import Annotations
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.scenes import Receptacle, Scene


def test_the_prompt_for_a_pair():
    prompt = placement_prompt("tennis ball", "bedroom chair")
    assert prompt == PREFIX + "Does a tennis ball belong in/on the bedroom chair:"
    lines = prompt.split("\n")
    assert len(lines) == 5  # instruction, three worked questions, the question: the original's structure
    assert [line.rsplit(":", 1)[1] for line in lines[1:4]] == [" No.", " Yes.", " Yes."]
    assert prompt.endswith(":")  # the answer is the next word, " Yes" or " No"


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("Yes.", True),
        (" yes, it belongs there", True),
        ('"YES"', True),
        (" No.", False),
        ("no\nYes", False),
        ("", None),
        ("Maybe.", None),
        ("I think yes", None),
        ("yesterday", None),
        ("Nope", None),
    ],
)
def test_the_parser_reads_the_first_word_only(answer, said):
    assert parse_yes_no(answer) is said


class _Scripted:
    """Says yes (by score and by text) to the pairs in ``yes``, no to the others; ``text`` overrides the
    generated answer of every prompt."""

    model_name = "scripted"

    def __init__(self, yes, text=None):
        self.yes, self.text, self.prompts, self.usage = set(yes), text, [], TokenUsage()

    def _says_yes(self, prompt):
        return any(prompt.endswith(f"Does a {o} belong in/on the {r}:") for o, r in self.yes)

    def score(self, contexts, candidates):
        assert all(list(c) == [" Yes", " No"] for c in candidates)
        self.prompts += contexts
        return [[-0.1, -3.0] if self._says_yes(c) else [-3.0, -0.1] for c in contexts]

    def generate(self, prompts, **sampling):
        self.prompts += prompts
        return [self.text if self.text is not None else " Yes." if self._says_yes(p) else " No." for p in prompts]


def test_the_judge_scores_yes_against_no_and_caches_per_pair():
    backend = _Scripted({("cup", "kitchen cabinet")})
    judge = PlacementJudge(backend)
    first = judge.judge([("cup", "kitchen cabinet"), ("cup", "bedroom bed"), ("cup", "kitchen cabinet")])
    assert [j.yes for j in first] == [True, False, True]
    assert first[0].p_yes == pytest.approx(1 / (1 + np.exp(-2.9)))
    assert judge.says_yes("cup", "kitchen cabinet") and not judge.says_yes("cup", "bedroom bed")
    assert len(backend.prompts) == 2 and judge.calls == 2 and judge.cache_hits == 3
    strict = PlacementJudge(backend, threshold=0.99)  # P(yes) = 0.948: not enough
    assert not strict.says_yes("cup", "kitchen cabinet")


def test_generated_answers_that_say_neither_are_counted_and_mean_no():
    assert PlacementJudge(_Scripted({("cup", "sink")}), method="generate").says_yes("cup", "sink")
    judge = PlacementJudge(_Scripted({("cup", "sink")}, text=" Perhaps"), method="generate")
    (answer,) = judge.judge([("cup", "sink")])
    assert not answer.yes and not answer.parsed and answer.answer == " Perhaps" and judge.unparseable == 1
    with pytest.raises(ValueError, match="method"):
        PlacementJudge(_Scripted(()), method="vote")


class _Play:
    """Scripted commands on Housekeep-Text: every room visited, then object 0 moved between receptacles."""

    def __init__(self, env):
        self.env = env
        world = env.unwrapped.world
        self.name = world.object_names[0]
        self.obj = world.categories[0].replace("_", " ")
        self.start = world.receptacles[world.location[0]]
        correct = [world.receptacles[i] for i in world.correct[0]]
        self.good = next(r for r in correct if r.kind_label != self.start.kind_label)
        used = {self.start.kind_label, self.good.kind_label}
        self.other = next(
            r
            for i, r in enumerate(world.receptacles)
            if i not in world.correct[0] and r.kind_label not in used and r.room is not None
        )
        for room in world.rooms:
            self.step(f"go to {room.name}")

    def step(self, command):
        _, reward, terminated, truncated, info = self.env.step(command)
        assert not terminated and not truncated
        return reward, info

    def pick(self):
        for command in (f"go to {self.name}", f"look at {self.name}"):
            self.step(command)
        return self.step(f"pick up {self.name}")

    def place(self, receptacle):
        self.step(f"go to {receptacle.name}")
        self.step(f"look at {receptacle.name}")
        return self.step(f"place {self.name} on {receptacle.name}")


def _env(data_dir, judge, **kwargs):
    env = HousekeepTextEnv(scenes=["Pomaria_2_int"], max_steps=100_000, max_commands=1_000, data_dir=str(data_dir))
    return PlacementReward(env, judge, bonus=1.0, **kwargs)


def test_a_place_where_the_llm_said_yes_pays_once_per_episode(data_dir):
    backend = _Scripted(())
    judge = PlacementJudge(backend)
    env = _env(data_dir, judge)
    _, info = env.reset(seed=0)
    assert info["achieved_goals"] == []
    play = _Play(env)
    backend.yes = {(play.obj, play.good.kind_label), (play.obj, play.start.kind_label)}
    reward, info = play.pick()
    assert info["env_reward"] == pytest.approx(2.49) and reward == 0.0  # the env's pick reward (+2.5, -0.01 slack)
    reward, info = play.place(play.good)
    assert reward == 1.0 and info["intrinsic_reward"] == 1.0
    placed = {"object": play.obj, "receptacle": play.good.kind_label, "llm_yes": True, "correct": True}
    assert info["placement"] == placed
    assert info["achieved_goals"] == [f"{play.obj} in {play.good.kind_label}"]
    play.pick()
    reward, info = play.place(play.good)
    assert reward == 0.0 and info["placement"]["llm_yes"]  # the same pair again: paid once per episode
    play.pick()
    reward, info = play.place(play.other)
    assert reward == 0.0 and info["placement"]["llm_yes"] is False and info["placement"]["correct"] is False
    play.pick()
    reward, info = play.step(f"place {play.name} on {play.start.name}")  # not gone to nor looked at: fails
    assert not info["action_succeeded"] and reward == 0.0 and "placement" not in info
    reward, info = play.place(play.start)
    assert reward == 1.0 and len(info["achieved_goals"]) == 2  # another yes-pair for the same object
    assert judge.calls == 3 and judge.cache_hits == 1 and len(backend.prompts) == 3
    env.reset(seed=0)
    play = _Play(env)
    play.pick()
    assert play.place(play.good)[0] == 1.0  # a new episode pays again, from the cache
    assert len(backend.prompts) == 3


def test_object_novelty_and_the_kept_env_reward(data_dir):
    backend = _Scripted(())
    env = _env(data_dir, PlacementJudge(backend), novelty="object", keep_env_reward=True)
    env.reset(seed=0)
    play = _Play(env)
    backend.yes = {(play.obj, play.good.kind_label), (play.obj, play.start.kind_label)}
    reward, info = play.pick()
    assert reward == info["env_reward"] == pytest.approx(2.49)
    reward, info = play.place(play.good)
    assert info["intrinsic_reward"] == 1.0 and info["env_reward"] != 0.0
    assert reward == pytest.approx(1.0 + info["env_reward"])
    play.pick()
    _, info = play.place(play.start)
    assert info["placement"]["llm_yes"] and info["intrinsic_reward"] == 0.0  # the original: once per object
    with pytest.raises(ValueError, match="novelty"):
        _env(data_dir, PlacementJudge(backend), novelty="receptacle")


def test_judgement_metrics_on_a_hand_made_set():
    truth = [True, True, True, False, False, False, False, False]
    yes = [True, True, False, True, False, False, False, False]
    metrics = judgement_metrics(truth, yes, positive_rate=0.1)
    assert (metrics["true_positive"], metrics["false_positive"]) == (2, 1)
    assert (metrics["false_negative"], metrics["true_negative"]) == (1, 4)
    assert metrics["precision"] == pytest.approx(2 / 3) and metrics["recall"] == pytest.approx(2 / 3)
    assert metrics["accuracy"] == pytest.approx(6 / 8) and metrics["f1"] == pytest.approx(2 / 3)
    assert metrics["yes_rate"] == pytest.approx(3 / 8)
    # recall 2/3 and false-positive rate 1/5 where 10% of pairs are correct
    assert metrics["precision_at_positive_rate"] == pytest.approx(0.1 * 2 / 3 / (0.1 * 2 / 3 + 0.9 / 5))
    never = judgement_metrics(truth, [False] * 8)
    assert never["precision"] is None and never["recall"] == 0.0 and never["f1"] is None
    with pytest.raises(ValueError):
        judgement_metrics(truth, yes[:3])


def _receptacle(room, category, pairs, label):
    return Receptacle(f"{room}-{category}", f"{room} {category}", room, category, (0.0, 0.0), pairs, -1, label)


def test_scene_pairs_take_their_truth_from_the_annotations():
    ranks = np.zeros((2, 2, 10), dtype=np.int64)  # pairs x objects x annotators
    ranks[0, 0, :7] = 1  # soap: bathroom|bottom_cabinet, 7 of 10
    ranks[1, 0, :5] = 2  # soap: bedroom|bed, 5 of 10: not enough
    ranks[1, 1, :6] = 1  # pillow: bedroom|bed, 6 of 10
    annotations = Annotations(("bathroom|bottom_cabinet", "bedroom|bed"), ("soap", "pillow"), ranks)
    one = Scene(
        "one",
        (),
        (
            _receptacle("bathroom_0", "bottom_cabinet", (0,), "bathroom bottom cabinet"),
            _receptacle("bedroom_0", "bed", (1,), "bedroom bed"),
            _receptacle(None, "window", (), "window"),  # outside every room: never asked about
        ),
    )
    # the same name, but a cabinet the annotations do not cover in this scene
    two = Scene("two", (), (_receptacle("bathroom_0", "bottom_cabinet_no_top", (), "bathroom bottom cabinet"),))
    found = scene_pairs([one, two], annotations, ["soap", "pillow"])
    assert found.pairs == (
        Pair("pillow", "bathroom bottom cabinet", False),
        Pair("pillow", "bedroom bed", True),
        Pair("soap", "bathroom bottom cabinet", True),
        Pair("soap", "bedroom bed", False),
    )
    assert found.ambiguous == 1 and found.positive_rate == 0.5


def test_samples_are_balanced_and_grow_by_keeping_what_they_had():
    pairs = [Pair(f"o{i}", "r", i < 3) for i in range(13)]
    small = sample_pairs(pairs, 4, seed=1)
    assert sum(p.correct for p in small) == 2 and len(set(small)) == 4
    large = sample_pairs(pairs, 8, seed=1)
    assert set(small) <= set(large) and sum(p.correct for p in large) == 3  # only 3 correct pairs exist
    assert len(sample_pairs(pairs, 50, seed=1)) == 13
    assert sum(p.correct for p in sample_pairs(pairs, 13, seed=1, balanced=False)) == 3
