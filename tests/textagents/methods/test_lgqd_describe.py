"""Language-grounded QD's describe stage: the styles' mixture, the prompts' structure, the defensive reading
of answers, the template describer, and the stage with a scripted LLM, recorded then replayed, stopped
and continued."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from textagents.llm import TokenUsage
from textagents.llm.record import RecordingBackend, ReplayMissError
from textagents.methods.core.runner import LLMChoice
from textagents.methods.lgqd.annotate import ANNOTATIONS, run_annotate
from textagents.methods.lgqd.archive_stage import run_archive
from textagents.methods.lgqd.artifacts import Pipeline, read_npz
from textagents.methods.lgqd.dedupe import run_dedupe
from textagents.methods.lgqd.describe import read_annotations, run_describe
from textagents.methods.lgqd.prompts import (
    STYLES,
    SYSTEM,
    describe_messages,
    draw_style,
    read_description,
    simplified_points,
)
from textagents.methods.lgqd.template import template_description

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "lgqd" / "smoke.yaml"
ANNOTATION = [
    {
        "timestep": 0,
        "pos": [20.04, 49.95],
        "semantics": {"to the north  of fridge": 22.0},
        "colors": ["pink", {"right": ["gray", 70]}],
    },
    {"timestep": 40, "pos": [60.26, 101.71], "semantics": {}, "colors": ["yellow", {}]},
    {
        "timestep": 80,
        "pos": [93.51, 114.06],
        "semantics": {"to the north west of statue": 28.0, "on file_cabinet": 3.0},
        "colors": ["orange", {}],
    },
    {"timestep": 80, "pos": [93.51, 114.06], "semantics": {"on file_cabinet": 3.0}, "colors": ["orange", {}]},
]


class Scripted:
    """Answers each conversation with the next scripted answer and keeps what it was asked."""

    model_name = "scripted"

    def __init__(self, answers):
        self.answers, self.asked, self.usage = list(answers), [], TokenUsage()

    def chat(self, messages, **sampling):
        self.asked.append(([dict(m) for m in messages], sampling))
        return self.answers.pop(0)


def test_styles_are_drawn_with_the_papers_weights_and_the_same_for_an_item_every_time():
    drawn = [draw_style((0.8, 0.1, 0.1), 0, item) for item in range(4000)]
    counts = Counter(drawn)
    assert set(counts) == set(STYLES)
    assert 0.77 < counts["request"] / 4000 < 0.83
    assert 0.08 < counts["instructional"] / 4000 < 0.12 and 0.08 < counts["narrative"] / 4000 < 0.12
    assert drawn[:50] == [draw_style((0.8, 0.1, 0.1), 0, item) for item in range(50)]
    assert {draw_style((0.0, 0.0, 1.0), 3, item) for item in range(100)} == {"narrative"}


def test_the_prompt_shows_the_simplified_points_between_the_task_and_the_answer_tag():
    points = simplified_points(ANNOTATION)
    assert points[0] == {"timestep": 0, "pos": [20.0, 50.0], "semantics": ["to the north  of fridge"], "colors": "pink"}
    assert points[1]["semantics"] == [] and points[2]["pos"] == [93.5, 114.1]
    for style, tag in (("request", "[REQ]"), ("instructional", "[DESCR]"), ("narrative", "[DESCR]")):
        system, user = describe_messages(style, ANNOTATION)
        assert system == {"role": "system", "content": SYSTEM}
        task, rest = user["content"].split("\n[TRAJECTORY] ")
        assert rest == f"{points}\n\n{tag}"
        assert "200 by 200" in task and "no numbers" in task
    assert "<DESCRIPTOR>" in describe_messages("request", ANNOTATION)[1]["content"]
    assert "<DESCRIPTOR>" not in describe_messages("narrative", ANNOTATION)[1]["content"]


def test_answers_are_read_defensively():
    bd = (301.6, 45.2)
    assert (
        read_description("  [REQ] 'Go to the <DESCRIPTOR> please.'\n", "request", bd) == "Go to the x=302, y=45 please."
    )
    assert read_description("Sure!\n[DESCR]\nPass the file_cabinet,\tthen\x00stop.", "narrative", bd) == (
        "Pass the file cabinet, then stop."
    )
    assert read_description("   \n ", "narrative", bd) is None
    assert read_description('[DESCR] ""', "narrative", bd) is None
    assert read_description(None, "request", bd) is None
    assert read_description({"text": "x"}, "request", bd) is None
    assert len(read_description("word " * 1000, "request", bd)) <= 1000


def test_the_template_names_start_places_passed_and_end():
    assert template_description(ANNOTATION) == (
        "Start on the pink tiles, north of the fridge, then pass on the yellow tiles, "
        "and stop on the orange tiles, on the file cabinet."
    )
    assert template_description(ANNOTATION[:1] * 3) == "Stay on the pink tiles, north of the fridge."
    maze = [{"timestep": 0, "pos": [1, 2], "semantics": {"to the south east of cabinet": 5.0}, "colors": None}]
    assert template_description(maze) == "Stay south-east of the cabinet."


@pytest.fixture(scope="module")
def annotated(tmp_path_factory):
    """A smoke pipeline up to its annotations, with the LLM describer."""
    config = tmp_path_factory.mktemp("config") / "llm.yaml"
    config.write_text(SMOKE.read_text().replace("describer: template", "describer: llm") + "max_tokens: 24\n")
    out = tmp_path_factory.mktemp("pipeline") / "run"
    run_archive(config, out, progress=False)
    run_dedupe(out)
    run_annotate(out)
    return out


def _record_answers(out: Path, calls: Path, answers: list[str], items: range) -> None:
    """Record ``answers`` for exactly the requests the stage makes for ``items`` (seed 0, smoke settings)."""
    config = Pipeline(out).config()
    annotations = read_annotations(out / "annotate" / ANNOTATIONS)
    recorder = RecordingBackend(Scripted(answers), calls)
    conversations = [describe_messages(draw_style(config.style_weights, 0, i), annotations[i]) for i in items]
    for start in range(0, len(conversations), config.describe_batch):
        batch = conversations[start : start + config.describe_batch]
        recorder.chat_batch(batch, temperature=config.temperature, max_tokens=config.max_tokens)


def test_the_llm_describes_each_item_once_and_a_stopped_stage_continues(annotated, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(annotated, out)
    items = len(read_annotations(out / "annotate" / ANNOTATIONS))
    answers = [f"Trajectory number {i} ends at <DESCRIPTOR>." for i in range(items)]
    answers[1] = "   "  # no description: the template's sentence, flagged
    first_batch = tmp_path / "first.jsonl"
    _record_answers(out, first_batch, answers[:4], range(4))

    with pytest.raises(ReplayMissError):  # the recording holds the first batch only: the stage stops after it
        run_describe(out, LLMChoice(replay=str(first_batch)), progress=False)
    lines = (out / "describe" / "descriptions.jsonl").read_text().splitlines()
    assert [json.loads(line)["item"] for line in lines] == [0, 1, 2, 3]

    everything = tmp_path / "all.jsonl"
    _record_answers(out, everything, answers, range(items))
    summary = run_describe(out, LLMChoice(replay=str(everything)), progress=False)
    records = [json.loads(line) for line in (out / "describe" / "descriptions.jsonl").read_text().splitlines()]
    assert [r["item"] for r in records] == list(range(items))  # nothing described twice
    assert summary["described"] == items and summary["fallbacks"] == 1
    assert records[1]["fallback"] and records[1]["description"] == template_description(
        read_annotations(out / "annotate" / ANNOTATIONS)[1]
    )
    assert records[0]["description"].startswith("Trajectory number 0 ends at x=")
    assert records[0]["style"] == draw_style((0.8, 0.1, 0.1), 0, 0)
    recorded = (out / "llm_calls.jsonl").read_text().splitlines()
    assert len(recorded) == items  # the replayed calls are recorded in the pipeline too (4 + the rest)


def test_a_local_model_describes_through_the_recorded_backend(annotated, tmp_path, tiny_models):
    out = tmp_path / "run"
    shutil.copytree(annotated, out)
    summary = run_describe(out, LLMChoice(model=str(tiny_models.causal)), progress=False)
    items = len(read_annotations(out / "annotate" / ANNOTATIONS))
    assert summary["described"] == items and summary["model"] == str(tiny_models.causal)
    bd = read_npz(out / "annotate" / "rollouts.npz")["bd"]
    records = [json.loads(line) for line in (out / "describe" / "descriptions.jsonl").read_text().splitlines()]
    for record in records:
        expected = read_description(record["answer"], record["style"], bd[record["item"]])
        assert record["description"] == expected or (record["fallback"] and expected is None)
    calls = [json.loads(line) for line in (out / "llm_calls.jsonl").read_text().splitlines()]
    assert len(calls) == items and {(c["request"]["temperature"], c["request"]["max_tokens"]) for c in calls} == {
        (0.2, 24)
    }
