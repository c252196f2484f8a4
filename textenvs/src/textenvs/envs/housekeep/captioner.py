"""Text views of the world, one robot's knowledge at a time.

``llm_personalize``: the context of LLM-Personalize's planner prompts, e.g.
``You are holding nothing.\\nIn bathroom 0, found receptacles: bathroom 0 bathtub 14, bathroom 0 carpet 15.
Object tennis ball 1 found on bathroom 0 carpet 15 \\nIn corridor 0, no receptacles found yet.``
(rooms in name order, receptacles and objects in discovery order, its spacing included).
``ellm``: ELLM-style lists, ``objects: dumbbell, tennis ball.receptacles: bathroom bathtub.you are holding:
dumbbell.``
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from textenvs.envs.housekeep.scenes import Scene
from textenvs.envs.housekeep.world import HELD, World

TEXT_STYLES = ("llm_personalize", "ellm")
MISSION = (
    "There are objects misplaced on wrong receptacles and potentially in the wrong room. "
    "Explore the house, place misplaced objects on correct receptacles, then say mission complete."
)


def describe(world: World, robot_id: int, style: str) -> str:
    """The text view, built from scratch (``TextView`` keeps it up to date cheaply)."""
    if style == "ellm":
        return _ellm(world, robot_id)
    return _llm_personalize(world, robot_id)


class TextView:
    """One robot's text view of one world, rebuilt room by room: a room's line is reformatted only
    when ``world.room_version`` says it may have changed."""

    def __init__(self, world: World, robot_id: int, style: str):
        self.world, self.robot_id, self.style = world, robot_id, style
        self.order = world.room_order
        # every room's line as of room_version 0: nothing found there yet (all of a new world)
        self.lines: dict[int, tuple[int, str]] = dict(enumerate(_unexplored_lines(world.scene)))
        self.text: tuple[int, str] | None = None

    def describe(self) -> str:
        world = self.world
        if self.text is not None and self.text[0] == world.text_version:
            return self.text[1]
        if self.style == "ellm":
            text = _ellm(world, self.robot_id)
        else:
            lines = []
            for room in self.order:
                cached = self.lines.get(room)
                if cached is None or cached[0] != world.room_version[room]:
                    cached = self.lines[room] = (world.room_version[room], _room_line(world, self.robot_id, room))
                lines.append(cached[1])
            text = f"You are holding {_holding(world, self.robot_id)}.\n" + " \n".join(lines)
        self.text = (world.text_version, text)
        return text


def _room_line(world: World, robot_id: int, room: int) -> str:
    robot = world.robots[robot_id]
    in_room = world.receptacle_room
    receptacles = [world.receptacles[r].name for r in robot.known_receptacles if in_room[r] == room]
    objects = []
    for obj in robot.known_objects:
        location = world.location[obj]
        if location != HELD and in_room[location] == room:
            objects.append((world.object_names[obj], world.receptacles[location].name))
    return _format_room(world.rooms[room].name, receptacles, objects)


@functools.lru_cache(maxsize=32)
def _unexplored_lines(scene: Scene) -> tuple[tuple[int, str], ...]:
    return tuple((0, _format_room(room.name, [], [])) for room in scene.rooms)


def _holding(world: World, robot_id: int) -> str:
    held = world.robots[robot_id].holding
    return "nothing" if held == HELD else world.object_names[held]


def _llm_personalize(world: World, robot_id: int) -> str:
    lines = " \n".join(_room_line(world, robot_id, room) for room in world.room_order)
    return f"You are holding {_holding(world, robot_id)}.\n" + lines


@dataclass(frozen=True)
class RoomView:
    """What one robot knows of a room: receptacle names and (object, receptacle) sightings."""

    name: str
    receptacles: list[str]
    objects: list[tuple[str, str]]


def format_context(holding: str, rooms: list[RoomView]) -> str:
    """LLM-Personalize's planner context (without the leading newline its prompt template adds)."""
    return f"You are holding {holding}.\n" + " \n".join(format_room(room) for room in rooms)


def format_room(room: RoomView) -> str:
    return _format_room(room.name, room.receptacles, room.objects)


def _format_room(name: str, receptacles: list[str], objects: list[tuple[str, str]]) -> str:
    if receptacles:
        line = f"In {name}, found receptacles: {', '.join(receptacles)}."
    else:
        line = f"In {name}, no receptacles found yet."
    if objects:
        line += " " + ". ".join(f"Object {obj} found on {rec}" for obj, rec in objects)
    return line


def _ellm(world: World, robot_id: int) -> str:
    robot = world.robots[robot_id]
    objects = [world.categories[o].replace("_", " ") for o in robot.known_objects if world.location[o] != HELD]
    receptacles: list[str] = []
    for rec in robot.known_receptacles:
        label = world.receptacles[rec].kind_label
        if label not in receptacles:
            receptacles.append(label)
    held = world.robots[robot_id].holding
    holding = "nothing" if held == HELD else world.categories[held].replace("_", " ")
    return (
        f"objects: {', '.join(objects) or 'none'}."
        f"receptacles: {', '.join(receptacles) or 'none'}."
        f"you are holding: {holding}."
    )


def text_length_bound(scene: Scene, max_objects: int, longest_object_name: int) -> int:
    """An upper bound on the length of any text view of this scene, for the observation space."""
    receptacles = [scene.receptacles[i] for i in scene.reachable]
    receptacle_names = sum(len(r.name) + 2 for r in receptacles)
    rooms = sum(len(r.name) + 40 for r in scene.rooms)
    longest_receptacle = max((len(r.name) for r in receptacles), default=0)
    objects = max_objects * (longest_object_name + longest_receptacle + 20)
    return receptacle_names + rooms + objects + longest_object_name + 40
