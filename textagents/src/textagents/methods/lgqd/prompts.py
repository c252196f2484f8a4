"""The describing LLM's prompts: the paper's three styles (a request for a policy, instructions, a
narrative), in the project's own words with the original's structure — the frame and the point format
explained, the style's task and rules, the points after ``[TRAJECTORY]``, the answer after ``[REQ]`` or
``[DESCR]`` — and the defensive reading of the answer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from textagents.llm.base import Message

#: The styles, in the order of ``LGQDConfig.style_weights`` (the paper's 0.8 / 0.1 / 0.1).
STYLES = ("request", "instructional", "narrative")
SYSTEM = "You are a helpful assistant."
#: Where the model is asked to write in ``<DESCRIPTOR>``'s place: the final position (x, y).
DESCRIPTOR_TAG = "<DESCRIPTOR>"
MAX_DESCRIPTION_CHARS = 1000

_FRAME = (
    "Picture a square room seen from above, 200 by 200 units, with the origin in its bottom-left corner: x grows "
    "to the right (east) and y grows upwards (north). A robot moved through this room and a few points of its "
    "path were sampled. Each point is a Python dictionary with four keys: 'timestep' (when along the path the "
    "point was sampled; a path of N steps has timesteps 0 to N-1), 'pos' (the point's (x, y) in the frame "
    "above), 'semantics' (the objects the robot was close to, each with the robot's side of it: 'to the north "
    "west of statue' means the robot was north-west of the statue; sides are seen from the object, with north "
    "up and east right) and 'colors' (the colour of the floor tile under the robot: the room is tiled in "
    "areas of different colours)."
)
_TASKS = {
    "request": (
        "Write the request a person would send to an engineer who builds robot policies (agents, networks), "
        "asking for one that moves along this path. Name objects and tile colours from the points, in the "
        "order the robot meets them; for instance 'Could you build an agent that leaves the sofa, passes "
        "west of the bed and ends on the green tiles?', where every object and colour comes from the points. "
        "The person may greet and introduce themself ('Hello, I am Ana! I need a network that ...'). You may "
        f"write {DESCRIPTOR_TAG} instead of the last place, object or tile of the path. Never mention the "
        "dictionaries or sampled points, and use no numbers: no coordinates, no timesteps. The points follow "
        "[TRAJECTORY]; write the request after [REQ]."
    ),
    "instructional": (
        "Describe the path in words, as instructions that would guide a robot along it ('Go past ..., then "
        "...'). If the robot hardly moved, a short instruction such as 'stay close to where you start' is "
        "enough. Use no numbers: no coordinates, no timesteps. Be brief. The points follow [TRAJECTORY]; write "
        "the description after [DESCR]."
    ),
    "narrative": (
        "Describe the path in words, as a short account of where the robot went. Use no numbers: no "
        "coordinates, no timesteps. Keep it short. The points follow [TRAJECTORY]; write the description "
        "after [DESCR]."
    ),
}
_ANSWER_TAGS = {"request": "[REQ]", "instructional": "[DESCR]", "narrative": "[DESCR]"}


def draw_style(weights: Sequence[float], seed: int, item: int) -> str:
    """Item ``item``'s style, drawn with ``weights`` from a generator of its own (seed, item): the same
    whatever order or batch the items are described in."""
    value = np.random.default_rng([seed, item]).random()
    bounds = np.cumsum(weights)
    return STYLES[min(int(np.searchsorted(bounds, value, side="left")), len(STYLES) - 1)]


def simplified_points(annotation: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the original shows the LLM: each point's objects without their distances, the tile colour
    without the neighbouring tiles, and the position rounded to one decimal."""
    return [
        {
            "timestep": point["timestep"],
            "pos": [round(float(v), 1) for v in point["pos"]],
            "semantics": list(point["semantics"]),
            "colors": point["colors"][0] if point["colors"] else None,
        }
        for point in annotation
    ]


def describe_messages(style: str, annotation: Sequence[dict[str, Any]]) -> list[Message]:
    """The conversation asking for one description of ``annotation`` in ``style``."""
    user = f"{_FRAME} {_TASKS[style]}\n[TRAJECTORY] {simplified_points(annotation)}\n\n{_ANSWER_TAGS[style]}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def read_description(answer: Any, style: str, bd: Sequence[float]) -> str | None:
    """The description in an LLM answer, or None when there is none. The answer is untrusted text: only
    what follows an echoed answer tag is kept, quotes and control characters dropped, whitespace collapsed,
    the length capped; as the original does, ``<DESCRIPTOR>`` becomes the final position ("x=..., y=...",
    real units, rounded) and ``file_cabinet`` "file cabinet"."""
    if not isinstance(answer, str):
        return None
    text = answer.rsplit(_ANSWER_TAGS[style], 1)[-1]
    text = "".join(c if c.isprintable() else " " for c in text)
    text = re.sub(r"\s+", " ", text).strip().strip("\"'“”").strip()
    text = text.replace(DESCRIPTOR_TAG, f"x={round(float(bd[0]))}, y={round(float(bd[1]))}")
    text = text.replace("file_cabinet", "file cabinet")[:MAX_DESCRIPTION_CHARS].strip()
    return text or None
