"""LLM-Personalize's answer logs: a stage stopped in the middle and played again with its log gives what the
uninterrupted stage gave, asking the model only what it had not answered, whatever the backend's batching."""

from __future__ import annotations

import json
import re
import zlib

import pytest

from textagents.llm import TokenUsage
from textagents.methods.llm_personalize.answer_log import AnswerLog
from textagents.methods.llm_personalize.planner import PlanRules, play
from textenvs.envs.housekeep.env import HousekeepTextEnv

JOBS = [("Rs_int", 0), ("Merom_1_int", 5), ("Pomaria_2_int", 30)]
RULES = PlanRules(command_budget=14)


def _make_env():
    return HousekeepTextEnv(scenes=["Rs_int", "Merom_1_int", "Pomaria_2_int"], episode_source="llm_personalize")


class Stopped(Exception):
    """The machine was taken back."""


class _Explorer:
    """Answers go to a room the prompt lists as unexplored: which one depends on the prompt, the seed and,
    as a batched model's samples do, on the batch (its size and the conversation's place in it). ``stop_after``
    calls, it stops the run."""

    model_name = "explorer"

    def __init__(self, stop_after: int | None = None):
        self.usage, self.stop_after, self.calls, self.asked = TokenUsage(), stop_after, 0, 0

    def _answer(self, messages, seed, batch, place):
        rooms = re.findall(r"In ([a-z ]+ \d+), no receptacles found yet", messages[1]["content"]) or ["x 1"]
        pick = zlib.crc32(f"{messages[1]['content']}|{seed}|{batch}|{place}".encode()) % len(rooms)
        return f"step 1: go to {rooms[pick]}\nstep 2: pick up ghost 1\nstep 3: go to {rooms[-1]}"

    def _call(self, size):
        if self.stop_after is not None and self.calls == self.stop_after:
            raise Stopped
        self.calls += 1
        self.asked += size


class _BatchedExplorer(_Explorer):
    def chat_batch(self, conversations, seed=None, **sampling):
        self._call(len(conversations))
        return [self._answer(m, seed, len(conversations), i) for i, m in enumerate(conversations)]


class _OneAtATimeExplorer(_Explorer):
    def chat(self, messages, seed=None, **sampling):
        self._call(1)
        return self._answer(messages, seed, 1, 0)


class _Scorer(_Explorer):
    def score(self, contexts, candidates):
        self._call(len(contexts))
        return [
            [float(zlib.crc32(f"{c}|{o}".encode()) % 1000) for o in options]
            for c, options in zip(contexts, candidates, strict=True)
        ]


def _played(rollouts):
    return [([(c.messages, c.answer, c.played) for c in r.calls], r.metrics) for r in rollouts]


@pytest.mark.parametrize(
    ("backend", "variant"),
    [
        (_BatchedExplorer, "planner"),
        (_OneAtATimeExplorer, "planner"),
        (_OneAtATimeExplorer, "sayplan"),
        (_Scorer, "saycan"),
    ],
)
def test_a_stage_stopped_halfway_and_played_again_gives_the_uninterrupted_stage(tmp_path, backend, variant):
    rules = PlanRules(command_budget=6) if variant == "saycan" else RULES
    whole_backend = backend()
    whole = play(_make_env, whole_backend, JOBS, variant=variant, rules=rules, seed=3)
    assert whole_backend.calls >= 4

    log_path, header = tmp_path / "answers.jsonl", {"jobs": JOBS, "variant": variant}
    stop_after = whole_backend.calls // 2
    with pytest.raises(Stopped):
        play(
            _make_env, backend(stop_after), JOBS, variant=variant, rules=rules, seed=3, log=AnswerLog(log_path, header)
        )
    resumed_backend = backend()
    resumed = play(
        _make_env, resumed_backend, JOBS, variant=variant, rules=rules, seed=3, log=AnswerLog(log_path, header)
    )

    assert _played(resumed) == _played(whole)
    assert resumed_backend.calls == whole_backend.calls - stop_after  # what was answered is not asked again
    assert resumed_backend.asked < whole_backend.asked
    again = backend()
    replayed = play(_make_env, again, JOBS, variant=variant, rules=rules, seed=3, log=AnswerLog(log_path, header))
    assert _played(replayed) == _played(whole) and again.calls == 0  # a finished stage: all from the log


def test_another_stages_log_is_kept_and_an_answer_replays_only_to_the_same_question(tmp_path):
    path = tmp_path / "answers.jsonl"
    log = AnswerLog(path, {"jobs": [["Rs_int", 0]]})
    log.put(0, {0: ("asked", "step 1: go to kitchen 0"), 1: ("other", "")})
    log = AnswerLog(path, {"jobs": [["Rs_int", 0]]})
    assert len(log) == 2
    assert log.get(0, 0, "asked") == "step 1: go to kitchen 0" and log.get(0, 1, "other") == ""
    assert log.get(0, 0, "something else") is None and log.get(1, 0, "asked") is None

    other = AnswerLog(path, {"jobs": [["Rs_int", 1]]})  # another stage's header: a log of its own, beside
    assert len(other) == 0 and other.path.parent == path.parent and other.path != path
    other.put(0, {0: ("asked", "step 1: go to bedroom 0")})
    assert len(AnswerLog(path, {"jobs": [["Rs_int", 0]]})) == 2  # the first kept
    assert AnswerLog(path, {"jobs": [["Rs_int", 1]]}).get(0, 0, "asked") == "step 1: go to bedroom 0"
    assert json.loads(other.path.read_text().splitlines()[0]) == {"header": {"jobs": [["Rs_int", 1]]}}


def test_a_line_cut_by_a_kill_is_dropped_and_the_next_answer_is_kept_on_its_own_line(tmp_path):
    path = tmp_path / "answers.jsonl"
    AnswerLog(path, {"stage": 1}).put(0, {0: ("a", "first")})
    with path.open("a") as cut:
        cut.write('{"round": 0, "episode": 1, "asked": "b", "ans')
    log = AnswerLog(path, {"stage": 1})
    assert len(log) == 1
    log.put(0, {1: ("b", "second")})
    log = AnswerLog(path, {"stage": 1})
    assert (log.get(0, 0, "a"), log.get(0, 1, "b")) == ("first", "second")
