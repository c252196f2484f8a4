"""Judging a deployed trajectory against its description: an LLM's rating, a deterministic rating from the
annotation, and how well the two agree.

**Deterministic judge** (``landmark_order_score``), defined as follows:

1. *Named landmarks*: the layout's objects (underscores read as spaces, "file cabinet"; a trailing plural
   "s" allowed) and tile colours ("grey" read as gray) that the description mentions, as whole words,
   case-insensitively, in the order they appear in the text, the longer name winning where two overlap
   ("file cabinet" is not also "cabinet"), and a landmark repeated right after itself counted once.
2. *Visited landmarks*: for each annotation entry, in timestep order, the objects in its ``semantics``
   (within the env's 30 px of the sampled point) and the colour of its tile (``colors[0]``). The annotation
   samples every 40th step and the last, so a landmark passed between two samples is not seen.
3. *Score*: the largest number of named landmarks that can be matched, keeping the description's order, to
   entries at non-decreasing timesteps where each is visited (several landmarks may share an entry: near
   the fan on the red tile), divided by the number of named landmarks. 1: every landmark visited in the
   named order; 0: none of them visited; in between for some missed or visited out of order. ``None``
   when the description names no landmark (nothing to check). Negations ("avoiding the sofa") are not
   understood: every mention counts as a landmark to visit.

**LLM judge** (``judge_prompt``, ``parse_score``): the original's structure in our words (its text is
GPL-3.0): the map's frame, the annotation's keys, the 3x3 tile layout and a table of the objects (position
and tile), then the description after ``[DESCR]`` and the simplified annotation after ``[DICT]``
(semantics as the list of phrases, the tile's colour only, positions to 0.1, as the original sends them),
questions on what was asked and what was reached, a reasoning step, and a final ``score==X`` line. The
score is the last ``score==`` number of the answer, clamped to [0, 1]; an answer without one is counted as
unparsed (``None``). ``expected_score_judge`` is the same prompt scored instead of answered (G-Eval's
probability-weighted score, Liu et al. 2023): after the prompt comes ``score==``, the LLM scores each of
``SCORE_GRID`` (0.0, 0.1 ... 1.0) as a continuation, and the judgement is the grid's expectation under the
softmax of those scores. It always gives a number, so a small model that never writes the ``score==`` line
still judges; it skips the reasoning parts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats

from textagents.llm.base import LLMBackend, chat_batch
from textenvs.envs.fastsim.layouts import Layout, get_layout

#: Other words a description may use for a tile colour.
COLOUR_ALIASES = {"grey": "gray"}
#: The side of the paper's map in pixels, the frame of annotations and of the judge's prompt.
MAP_PIXELS = 200
#: The LLM judge's sampling: greedy (the original: temperature ~0), room for the reasoning.
SAMPLING = {"max_tokens": 1024, "temperature": 0.0}


# ---------------------------------------------------------------------- deterministic judge
def landmark_names(layout: Layout) -> dict[str, str]:
    """Every phrase that names a landmark of ``layout`` (lower case) -> the landmark: objects by their
    name, tile colours by theirs and their aliases."""
    names = {name.replace("_", " "): name for name, _ in layout.objects}
    colours = {c for row in layout.tiling.colours for c in row} if layout.tiling is not None else set()
    names.update({c: c for c in colours})
    names.update({alias: colour for alias, colour in COLOUR_ALIASES.items() if colour in colours})
    return names


def named_landmarks(description: str, layout: Layout) -> list[str]:
    """The landmarks ``description`` names, in order (step 1 of the module's definition)."""
    names = landmark_names(layout)
    objects = {name for name, _ in layout.objects}
    alternatives = sorted(names, key=len, reverse=True)
    pattern = r"\b(" + "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in alternatives) + r")(s?)\b"
    found: list[str] = []
    for match in re.finditer(pattern, description.lower()):
        landmark = names[re.sub(r"\s+", " ", match.group(1))]
        if match.group(2) and landmark not in objects:
            continue  # "reds" is no colour
        if not found or found[-1] != landmark:
            found.append(landmark)
    return found


def phrase_object(phrase: str) -> str:
    """The object of an annotation phrase: "to the north  of fan" -> "fan", "on bed" -> "bed"."""
    return phrase.rsplit(" of ", 1)[-1] if " of " in phrase else phrase.removeprefix("on ").strip()


def visited_landmarks(annotation: Sequence[Mapping[str, Any]]) -> list[set[str]]:
    """Per annotation entry in timestep order, the landmarks visited there (step 2)."""
    visits = []
    for entry in sorted(annotation, key=lambda e: e["timestep"]):
        here = {phrase_object(p) for p in entry.get("semantics") or {}}
        colours = entry.get("colors")
        if colours:
            here.add(colours[0])
        visits.append(here)
    return visits


def landmark_order_score(
    description: str, annotation: Sequence[Mapping[str, Any]], layout: Layout | None = None
) -> float | None:
    """The deterministic judge's score in [0, 1] (step 3), or None when the description names no landmark.
    ``layout``: the household apartment by default."""
    named = named_landmarks(description, layout or get_layout("household"))
    if not named:
        return None
    visits = visited_landmarks(annotation)
    # best[j]: most of the landmarks so far matched in order to entries up to j
    best = [0] * (len(visits) + 1)
    for landmark in named:
        row = [0] * (len(visits) + 1)
        for j, here in enumerate(visits, start=1):
            row[j] = max(row[j - 1], best[j] + (landmark in here))
        best = row
    return best[-1] / len(named)


# ---------------------------------------------------------------------- LLM judge
SYSTEM = "You evaluate how well a robot's trajectory follows an instruction."

_FRAME = (
    f"Picture a square room of {MAP_PIXELS} by {MAP_PIXELS} seen from above. Coordinates start at its "
    "bottom-left corner: x grows towards the east (right) and y towards the north (up).\n"
    "A robot's trajectory through the room is summarised by points sampled along it. Each point is a "
    "dictionary with these keys:\n"
    "- 'timestep': the step of the trajectory at which the point was sampled (steps are counted from 0);\n"
    "- 'pos': the point's (x, y) position in the frame above;\n"
    "- 'semantics': the objects the point is close to, each with the robot's side of it (e.g. 'to the south "
    "east of bed');\n"
    "- 'colors': the colour of the floor tile under the point.\n\n"
)
_TASK = (
    "\nAfter [DESCR] you get a description in natural language that was given to the robot as an instruction; "
    "after [DICT], the points of the trajectory the robot then followed. Judge how well it followed the "
    "description, in three parts.\n\n"
    "A) Answer these questions:\n"
    "  1. Which places did the description ask the robot to reach?\n"
    "  2. Which places did the robot reach?\n"
    "  3. Where was the robot expected to end up?\n"
    "  4. Did it end up there, and if so at which point of the list?\n"
    "  5. How far is its last point from where it was expected to end up?\n"
    "  6. Which objects and tile colours was it asked to visit, reach, pass or come across?\n"
    "  7. Which objects and tile colours did it actually visit, reach, pass or come across? How many of them "
    "were not asked for, and how many that were asked for did it miss?\n"
    "  (The table above links the objects to their positions and tile colours.)\n"
    "B) Explain how you would turn these answers into one number in [0, 1] rating how well the robot's "
    "behaviour matches the description.\n"
    "C) Give that number. Always settle on a number, however hard the case.\n\n"
    "Write the number on the last line, exactly as score==<number> (for example score==0.7).\n\n"
)


def tile_layout(layout: Layout) -> str:
    """The tiles' colours as rows of a table, the northern row first."""
    if layout.tiling is None:
        return ""
    width = max(len(c) for row in layout.tiling.colours for c in row)
    rows = ["   " + " | ".join(c.ljust(width) for c in row).rstrip() for row in layout.tiling.colours]
    count = sum(len(row) for row in layout.tiling.colours)
    size = layout.tiling.size
    return (
        f"The floor is divided into {count} tiles of about {size} by {size}, laid out as follows (north at the top):\n"
        + ("\n".join(rows) + "\n\n")
    )


def object_table(layout: Layout) -> str:
    """Each object with its position in the judge's frame (y up) and the colour of the tile it stands on
    ("" for a layout without objects)."""
    if not layout.objects:
        return ""
    lines = []
    for name, (x, y) in layout.objects:
        tile = ""
        if layout.tiling is not None:
            colours, margin, size = layout.tiling.colours, layout.tiling.margin, layout.tiling.size
            row = min(max((y - margin) // size, 0), len(colours) - 1)
            column = min(max((x - margin) // size, 0), len(colours[0]) - 1)
            tile = f", {colours[row][column]}"
        lines.append(f"- {name.replace('_', ' ')}, ({x}, {MAP_PIXELS - y}){tile}")
    return "The objects in the room, their (x, y) positions and the tile they stand on:\n" + "\n".join(lines) + "\n"


def simplified_annotation(annotation: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The annotation as the original shows it to the judge: the phrases of ``semantics`` without their
    distances, only the tile's colour, positions rounded to 0.1."""
    return [
        {
            "timestep": entry["timestep"],
            "pos": [round(float(v), 1) for v in entry["pos"]],
            "semantics": list(entry.get("semantics") or {}),
            "colors": entry["colors"][0] if entry.get("colors") else None,
        }
        for entry in annotation
    ]


def judge_prompt(description: str, annotation: Sequence[Mapping[str, Any]], layout: Layout | None = None) -> str:
    """The user message asking for a rating of ``annotation`` against ``description``."""
    layout = layout or get_layout("household")
    points = json.dumps(simplified_annotation(annotation))
    return (
        _FRAME
        + tile_layout(layout)
        + object_table(layout)
        + _TASK
        + f"[DESCR] {description}\n[DICT] {points}\n\n"
        + "Remember: the last line must be score==<number>."
    )


_SCORE = re.compile(r"score\s*==\s*<?\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))", re.IGNORECASE)


@dataclass(frozen=True)
class LLMJudgement:
    """The judge's ``answer``, the number it wrote (``raw``; None: no ``score==`` number) and ``score``
    (``raw`` clamped to [0, 1])."""

    answer: str
    raw: float | None

    @property
    def score(self) -> float | None:
        return None if self.raw is None else min(max(self.raw, 0.0), 1.0)


def parse_score(answer: str) -> LLMJudgement:
    """The last ``score==<number>`` of ``answer`` (spaces, markdown and angle brackets around it allowed)."""
    matches = _SCORE.findall(answer)
    raw = float(matches[-1]) if matches else None
    return LLMJudgement(answer, raw if raw is not None and math.isfinite(raw) else None)


def llm_judge(
    backend: LLMBackend,
    cases: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    layout: Layout | None = None,
    **sampling: Any,
) -> list[LLMJudgement]:
    """The LLM's judgement of each ``(description, annotation)`` case (one conversation each, batched when
    the backend can); ``sampling`` overrides ``SAMPLING``."""
    conversations = [
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": judge_prompt(d, a, layout)}]
        for d, a in cases
    ]
    return [parse_score(answer) for answer in chat_batch(backend, conversations, **{**SAMPLING, **sampling})]


#: The scores the expected-score judge weighs: the same number of characters each, so that no score is
#: favoured for being shorter.
SCORE_GRID = tuple(f"{tenths / 10:.1f}" for tenths in range(11))
JUDGE_SCORINGS = ("generate", "expected")


def expected_score_judge(
    backend: LLMBackend, cases: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], layout: Layout | None = None
) -> list[LLMJudgement]:
    """The expected score of each case (module docstring); the judgement's answer lists the grid's
    probabilities."""
    contexts = [f"{SYSTEM}\n\n{judge_prompt(d, a, layout)}\nscore==" for d, a in cases]
    judgements = []
    for scores in backend.score(contexts, [list(SCORE_GRID)] * len(contexts)):
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        probabilities = [w / total for w in weights]
        expected = sum(p * float(g) for p, g in zip(probabilities, SCORE_GRID, strict=True))
        answer = "expected over " + ", ".join(f"{g}: {p:.3f}" for g, p in zip(SCORE_GRID, probabilities, strict=True))
        judgements.append(LLMJudgement(answer, expected))
    return judgements


# ---------------------------------------------------------------------- agreement
def judge_agreement(
    llm: Sequence[float | None], deterministic: Sequence[float | None], threshold: float = 0.5
) -> dict[str, Any]:
    """How the two judges agree over the cases both scored: ``pairs``, Pearson's and Spearman's
    correlations (None with fewer than two pairs or a constant side), ``accuracy_at_threshold`` (both at or
    above ``threshold``, or both below) and ``mean_absolute_difference``; and the cases left out,
    ``llm_unparsed`` and ``deterministic_undefined``."""
    if len(llm) != len(deterministic):
        raise ValueError(f"{len(llm)} LLM scores but {len(deterministic)} deterministic ones")
    pairs = [(a, b) for a, b in zip(llm, deterministic, strict=True) if a is not None and b is not None]
    result: dict[str, Any] = {
        "pairs": len(pairs),
        "llm_unparsed": sum(a is None for a in llm),
        "deterministic_undefined": sum(b is None for b in deterministic),
        "pearson": None,
        "spearman": None,
        "accuracy_at_threshold": None,
        "mean_absolute_difference": None,
    }
    if not pairs:
        return result
    first, second = zip(*pairs, strict=True)
    result["accuracy_at_threshold"] = sum((a >= threshold) == (b >= threshold) for a, b in pairs) / len(pairs)
    result["mean_absolute_difference"] = sum(abs(a - b) for a, b in pairs) / len(pairs)
    if len(pairs) >= 2 and len(set(first)) > 1 and len(set(second)) > 1:
        result["pearson"] = float(stats.pearsonr(first, second).statistic)
        result["spearman"] = float(stats.spearmanr(first, second).statistic)
    return result
