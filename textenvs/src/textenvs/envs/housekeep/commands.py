"""LLM-Personalize's command vocabulary: ``go to X``, ``look at X``, ``pick up X``, ``place X on Y``,
``mission complete``; parsing text into a ``Command`` over an episode's named entities."""

from __future__ import annotations

import re
from typing import NamedTuple

from textenvs.core.commands import normalize_command

ROOM, RECEPTACLE, OBJECT = "room", "receptacle", "object"
GO_TO, LOOK_AT, PICK_UP, PLACE, MISSION_COMPLETE = "go to", "look at", "pick up", "place", "mission complete"

#: A planner's "step 3: go to ..." prefix, which LLM-Personalize's plans carry.
_STEP_PREFIX = re.compile(r"^step \d+ ?: ?")
_PLACE = re.compile(r"^place (.+) on (.+)$")


class Ref(NamedTuple):
    """An entity of the episode: ``kind`` is room/receptacle/object, ``index`` its index in the world."""

    kind: str
    index: int


class Command(NamedTuple):
    verb: str
    target: Ref | None = None
    destination: Ref | None = None


def parse(text: str, names: dict[str, Ref], known: dict[str, Command] | None = None) -> Command | None:
    """The command ``text`` names (case/space-insensitive), or None when it is malformed or names an entity
    the episode does not have. Whether the robot may do it now is the world's business.

    ``known`` caches parses by their exact text (canonical commands come back every step).
    """
    if known is not None:
        cached = known.get(text)
        if cached is None:
            cached = known[text] = parse(text, names) or _MALFORMED
        return None if cached is _MALFORMED else cached
    command = _STEP_PREFIX.sub("", normalize_command(text))
    if command == MISSION_COMPLETE:
        return Command(MISSION_COMPLETE)
    for verb in (GO_TO, LOOK_AT, PICK_UP):
        if command.startswith(verb + " "):
            target = names.get(command[len(verb) + 1 :].strip())
            if target is None or (verb == PICK_UP and target.kind != OBJECT):
                return None
            if verb == LOOK_AT and target.kind == ROOM:
                return None
            return Command(verb, target)
    match = _PLACE.match(command)
    if match:
        held, destination = names.get(match.group(1).strip()), names.get(match.group(2).strip())
        if held is not None and destination is not None and held.kind == OBJECT and destination.kind == RECEPTACLE:
            return Command(PLACE, held, destination)
    return None


_MALFORMED = Command("")


def object_name(key: str) -> str:
    """``"tennis_ball_1"`` -> ``"tennis ball 1"``."""
    return key.replace("_", " ")
