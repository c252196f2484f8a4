"""The offline control describer: one deterministic instruction built from an annotation (where the robot
starts, the places it passes, where it stops), in the annotation's own terms; no LLM."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

STYLE = "template"


def place(point: dict[str, Any]) -> str:
    """Where a point is: its tile colour and its nearest object (e.g. "on the orange tiles, north-west of
    the statue")."""
    parts = []
    if point["colors"]:
        parts.append(f"on the {point['colors'][0]} tiles")
    if point["semantics"]:
        nearest = min(point["semantics"], key=point["semantics"].get)
        parts.append(object_side(nearest))
    return ", ".join(parts) or "away from every object"


def object_side(phrase: str) -> str:
    """The annotation's phrase in plain words: "to the north  of fridge" -> "north of the fridge",
    "to the south east of cabinet" -> "south-east of the cabinet", "on bathtub" -> "on the bathtub"."""
    phrase = phrase.replace("file_cabinet", "file cabinet")
    if phrase.startswith("on "):
        return f"on the {phrase[3:]}"
    sides, name = phrase.removeprefix("to the ").split(" of ", 1)
    return f"{'-'.join(sides.split())} of the {name}"


def template_description(annotation: Sequence[dict[str, Any]]) -> str:
    """ "Start <place>, then pass <place>, ..., and stop <place>." with consecutive repeats merged; "Stay
    <place>." when the robot never leaves its first place."""
    places: list[str] = []
    for point in annotation:
        here = place(point)
        if not places or places[-1] != here:
            places.append(here)
    if not places:
        return "Stay where you start."
    if len(places) == 1:
        return f"Stay {places[0]}."
    passes = "".join(f", then pass {p}" for p in places[1:-1])
    return f"Start {places[0]}{passes}, and stop {places[-1]}."
