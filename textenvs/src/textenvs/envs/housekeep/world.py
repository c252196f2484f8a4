"""The symbolic Housekeep world: rooms, receptacles with floor positions, objects, and one-handed robots
that discover rooms by visiting them. Commands cost low-level steps derived from the scene geometry."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from textenvs.core.spaces import is_printable
from textenvs.envs.housekeep.annotations import Annotations
from textenvs.envs.housekeep.commands import (
    GO_TO,
    LOOK_AT,
    MISSION_COMPLETE,
    OBJECT,
    PICK_UP,
    PLACE,
    RECEPTACLE,
    ROOM,
    Command,
    Ref,
    object_name,
)
from textenvs.envs.housekeep.episodes import Episode
from textenvs.envs.housekeep.scenes import Receptacle, Room, Scene

#: Housekeep's agent: 0.25 m per forward step, 10 degrees per turn.
FORWARD_STEP_M = 0.25
TURN_STEP_RAD = math.radians(10.0)
HELD = -1
_LEFT_OUT = frozenset({-1})
_TWO_PI = 2 * math.pi


@dataclass(slots=True)
class Robot:
    """One robot's body and knowledge."""

    x: float
    z: float
    heading: float = 0.0
    holding: int = HELD
    near: Ref | None = None  # the room or receptacle the robot went to last (an object's receptacle)
    looking: Ref | None = None
    walked: float = 0.0  # metres walked so far (straight lines between the places gone to)
    visited: list[bool] = field(default_factory=list)
    known_receptacles: list[int] = field(default_factory=list)  # discovery order
    known_objects: list[int] = field(default_factory=list)  # discovery order
    is_known_receptacle: list[bool] = field(default_factory=list)
    is_known_object: list[bool] = field(default_factory=list)


@dataclass(slots=True)
class ActionResult:
    """What one command did; rewards and feedback are derived from it."""

    verb: str
    success: bool
    steps: int
    feedback: str = ""
    was_correct: bool = False  # pick: the object sat on a correct receptacle; place: placed correctly
    first_pick: bool = False  # pick: first time this object is picked
    initially_correct: bool = False


@dataclass(frozen=True, eq=False)
class Layout:
    """The static part of an episode: its rooms and reachable receptacles, names and command strings."""

    scene: Scene
    receptacles: tuple[Receptacle, ...]
    rooms: tuple[Room, ...]
    receptacle_room: tuple[int, ...]
    room_receptacles: tuple[tuple[int, ...], ...]
    local: tuple[int, ...]  # the episode's receptacle index -> index here (-1: left out)
    names: dict[str, Ref]  # rooms and receptacles
    go_to_room: list[str]
    go_to_receptacle: list[str]
    look_at_receptacle: list[str]

    @functools.cached_property
    def receptacle_refs(self) -> tuple[Ref, ...]:
        return tuple(Ref(RECEPTACLE, i) for i in range(len(self.receptacles)))

    @functools.cached_property
    def room_order(self) -> tuple[int, ...]:
        """Room indices in name order (how text views list rooms)."""
        return tuple(sorted(range(len(self.rooms)), key=lambda k: self.rooms[k].name))

    def correct_receptacles(self, episode_receptacles: tuple[int, ...]) -> frozenset[int]:
        """An object's correct receptacles (indices into the episode's receptacle list) as indices here;
        cached, as episodes repeat the same lists."""
        correct = self._correct_cache.get(episode_receptacles)
        if correct is None:
            correct = frozenset(map(self.local.__getitem__, episode_receptacles)) - _LEFT_OUT
            self._correct_cache[episode_receptacles] = correct
        return correct

    @functools.cached_property
    def _correct_cache(self) -> dict[tuple[int, ...], frozenset[int]]:
        return {}

    @functools.cached_property
    def commands(self) -> dict[str, Command]:
        """Canonical go-to/look-at commands about rooms and receptacles, parsed."""
        table = {text: Command(GO_TO, Ref(ROOM, i)) for i, text in enumerate(self.go_to_room)}
        table.update({text: Command(GO_TO, Ref(RECEPTACLE, i)) for i, text in enumerate(self.go_to_receptacle)})
        table.update({text: Command(LOOK_AT, Ref(RECEPTACLE, i)) for i, text in enumerate(self.look_at_receptacle)})
        return table


@functools.lru_cache(maxsize=64)
def layout(scene: Scene, receptacle_keys: tuple[str, ...]) -> Layout:
    index = scene.receptacle_index
    # Receptacles outside every room (a few windows, pictures) can hold nothing and are never correct.
    kept = [k for k in receptacle_keys if k in index and scene.receptacles[index[k]].room]
    receptacles = tuple(scene.receptacles[index[k]] for k in kept)
    receptacle_room = tuple(scene.room_index[r.room] for r in receptacles)
    names = {room.name: Ref(ROOM, i) for i, room in enumerate(scene.rooms)}
    names.update({rec.name: Ref(RECEPTACLE, i) for i, rec in enumerate(receptacles)})
    check_printable(scene.name, [*names, *(r.kind_label for r in receptacles)])
    return Layout(
        scene=scene,
        receptacles=receptacles,
        rooms=scene.rooms,
        receptacle_room=receptacle_room,
        room_receptacles=tuple(
            tuple(i for i, r in enumerate(receptacle_room) if r == room) for room in range(len(scene.rooms))
        ),
        local=tuple(kept.index(k) if k in kept else -1 for k in receptacle_keys),
        names=names,
        go_to_room=[f"{GO_TO} {room.name}" for room in scene.rooms],
        go_to_receptacle=[f"{GO_TO} {rec.name}" for rec in receptacles],
        look_at_receptacle=[f"{LOOK_AT} {rec.name}" for rec in receptacles],
    )


@functools.lru_cache(maxsize=1024)
def _object_texts(key: str) -> tuple[str, str, str, str]:
    """An object's name and its go-to, look-at and pick-up command texts, by object key."""
    name = object_name(key)
    return name, f"{GO_TO} {name}", f"{LOOK_AT} {name}", f"{PICK_UP} {name}"


@functools.lru_cache(maxsize=64)
def _object_refs(count: int) -> tuple[Ref, ...]:
    return tuple(Ref(OBJECT, i) for i in range(count))


@functools.lru_cache(maxsize=64)
def _object_commands(verb: str, count: int) -> tuple[Command, ...]:
    """``verb`` about each of ``count`` objects: the same immutable commands in every episode."""
    return tuple(Command(verb, ref) for ref in _object_refs(count))


def check_printable(scene: str, names: list[str]) -> None:
    """Names go into every text observation, which must stay printable: refuse corrupted data once."""
    if is_printable("".join(names)):
        return
    bad = [name for name in names if not is_printable(name)]
    if bad:
        raise ValueError(f"scene {scene}: names with non-printable characters {bad!r}; the data files are corrupted")


class World:
    """The state of one episode; ``execute(robot, command)`` advances it."""

    def __init__(
        self, scene: Scene, episode: Episode, annotations: Annotations, robot_starts: list[tuple[float, float]]
    ):
        self.scene = scene
        self.annotations = annotations
        static = layout(scene, episode.receptacles)
        local = static.local
        self.receptacles = static.receptacles
        self.rooms = static.rooms
        self.receptacle_room = static.receptacle_room
        self.room_receptacles = static.room_receptacles
        self.room_order = static.room_order
        self.receptacle_refs = static.receptacle_refs
        self.object_keys = list(episode.objects)
        object_texts = [_object_texts(k) for k in episode.objects]
        self.object_names = [name for name, *_ in object_texts]
        self.categories = list(episode.categories)
        self.category_columns = [annotations.object_index.get(c) for c in episode.categories]
        if None in self.category_columns:
            unknown = [c for c in episode.categories if c not in annotations.object_index]
            raise ValueError(f"unknown object categories {unknown}; valid: the 269 of housekeep/amt/objects.txt")
        self.location: list[int] = [local[s] for s in episode.start]
        if HELD in self.location:
            outside = [episode.receptacles[s] for s in episode.start if local[s] == HELD]
            raise ValueError(f"objects start on receptacles the robot cannot reach: {outside}")
        self.correct: list[frozenset[int]] = [static.correct_receptacles(cs) for cs in episode.correct]
        self.initially_correct = [at in correct for at, correct in zip(self.location, self.correct, strict=True)]
        self.misplaced_at_start = [i for i, ok in enumerate(self.initially_correct) if not ok]
        self.correct_count = sum(self.initially_correct)  # objects on a correct receptacle now
        self.rearranged_count = 0  # initially misplaced objects on a correct receptacle now
        check_printable(scene.name, self.object_names)
        self.names = dict(static.names)
        self.names.update(zip(self.object_names, _object_refs(len(self.object_names)), strict=True))
        # Command strings, formatted once: admissible lists are built from them every step.
        self.go_to_room = static.go_to_room
        self.go_to_receptacle = static.go_to_receptacle
        self.look_at_receptacle = static.look_at_receptacle
        self.go_to_object = [go_to for _, go_to, _, _ in object_texts]
        self.look_at_object = [look_at for _, _, look_at, _ in object_texts]
        self.pick_up_object = [pick_up for _, _, _, pick_up in object_texts]
        # Parse cache of this episode's command texts, seeded with every canonical command but placing.
        self.parsed: dict[str, Command] = dict(static.commands)
        for verb, texts in ((GO_TO, self.go_to_object), (LOOK_AT, self.look_at_object), (PICK_UP, self.pick_up_object)):
            self.parsed.update(zip(texts, _object_commands(verb, len(texts)), strict=True))
        self._go_to_commands: dict[int, tuple[int, list[str]]] = {}
        self.robots = [self._new_robot(x, z) for x, z in robot_starts]
        # Bookkeeping for rewards and metrics.
        self.picks = [0] * len(self.object_keys)
        self.places = [0] * len(self.object_keys)
        self.seen_objects = [False] * len(self.object_keys)
        # (metres the carrier had walked, its position) at each successful pick and place of an object
        self.carry_points: list[list[tuple[float, tuple[float, float]]]] = [[] for _ in self.object_keys]
        self.attempts = {PICK_UP: 0, PLACE: 0, LOOK_AT: 0}  # pick, place and look-at commands played
        self.successes = {PICK_UP: 0, PLACE: 0, LOOK_AT: 0}  # ... and those that succeeded
        self.steps = 0
        self.commands = 0
        self.version = 0  # bumps on every state change (admissible commands)
        self.text_version = 0  # bumps when a text view may change
        self.room_version = [0] * len(self.rooms)  # bumps when a text view of that room may change

    def _new_robot(self, x: float, z: float) -> Robot:
        return Robot(
            x=x,
            z=z,
            visited=[False] * len(self.rooms),
            is_known_receptacle=[False] * len(self.receptacles),
            is_known_object=[False] * len(self.object_keys),
        )

    # ------------------------------------------------------------------ queries
    def name(self, ref: Ref) -> str:
        if ref.kind == ROOM:
            return self.rooms[ref.index].name
        if ref.kind == RECEPTACLE:
            return self.receptacles[ref.index].name
        return self.object_names[ref.index]

    def is_correct(self, obj: int) -> bool:
        return self.location[obj] in self.correct[obj]

    def all_correct(self) -> bool:
        return self.correct_count == len(self.location)

    def holder(self, obj: int) -> int | None:
        return next((i for i, r in enumerate(self.robots) if r.holding == obj), None)

    def position_of(self, ref: Ref) -> tuple[float, float] | None:
        if ref.kind == ROOM:
            return self.rooms[ref.index].center
        if ref.kind == RECEPTACLE:
            return self.receptacles[ref.index].position
        location = self.location[ref.index]
        return None if location == HELD else self.receptacles[location].position

    def is_near(self, robot: Robot, ref: Ref) -> bool:
        """Whether ``ref`` is within reach: the receptacle the robot stands at, or an object on it now."""
        near = robot.near
        if near is None or near.kind == ROOM:
            return False
        if ref.kind == RECEPTACLE:
            return ref.index == near.index
        return ref.kind == OBJECT and self.location[ref.index] == near.index

    def admissible_commands(self, robot_id: int) -> list[str]:
        """The commands that would succeed now for one robot, in a fixed order."""
        robot = self.robots[robot_id]
        location = self.location
        cached = self._go_to_commands.get(robot_id)
        if cached is None or cached[0] != self.text_version:
            # the go-to part changes only with knowledge and object moves, which bump text_version
            go_to = self.go_to_room + [self.go_to_receptacle[r] for r in robot.known_receptacles]
            go_to += [self.go_to_object[o] for o in robot.known_objects if location[o] != HELD]
            cached = self._go_to_commands[robot_id] = (self.text_version, go_to)
        result = list(cached[1])
        near = robot.near
        if near is not None and near.kind == RECEPTACLE:
            rec = near.index
            result.append(self.look_at_receptacle[rec])
            if rec in location:
                known = robot.is_known_object
                result += [self.look_at_object[o] for o, at in enumerate(location) if at == rec and known[o]]
        looking = robot.looking
        if looking is not None:
            if looking.kind == OBJECT and robot.holding == HELD and location[looking.index] != HELD:
                result.append(self.pick_up_object[looking.index])
            if looking.kind == RECEPTACLE and robot.holding != HELD:
                held, rec = self.object_names[robot.holding], self.receptacles[looking.index].name
                result.append(f"{PLACE} {held} on {rec}")
        result.append(MISSION_COMPLETE)
        return result

    # ------------------------------------------------------------------ knowledge
    def _changed(self, room: int) -> None:
        """A text view of ``room`` may have changed (for some robot)."""
        self.text_version += 1
        self.room_version[room] += 1

    def visit_room(self, robot: Robot, room: int) -> None:
        if not robot.visited[room]:
            robot.visited[room] = True
            self._changed(room)
        known = robot.is_known_receptacle
        for rec in self.room_receptacles[room]:
            if not known[rec]:
                known[rec] = True
                robot.known_receptacles.append(rec)
                self._changed(room)
        in_room = self.receptacle_room
        for obj, location in enumerate(self.location):
            if location != HELD and in_room[location] == room:
                self.discover_object(robot, obj)

    def discover_receptacle(self, robot: Robot, rec: int) -> None:
        if not robot.is_known_receptacle[rec]:
            robot.is_known_receptacle[rec] = True
            robot.known_receptacles.append(rec)
            self._changed(self.receptacle_room[rec])
        if rec in self.location:
            for obj, location in enumerate(self.location):
                if location == rec:
                    self.discover_object(robot, obj)

    def discover_object(self, robot: Robot, obj: int) -> None:
        """Called for objects on a receptacle (never a held one)."""
        self.seen_objects[obj] = True
        if not robot.is_known_object[obj]:
            robot.is_known_object[obj] = True
            robot.known_objects.append(obj)
            self._changed(self.receptacle_room[self.location[obj]])

    def is_known(self, robot: Robot, ref: Ref) -> bool:
        if ref.kind == ROOM:
            return True
        if ref.kind == RECEPTACLE:
            return robot.is_known_receptacle[ref.index]
        return robot.is_known_object[ref.index]

    # ------------------------------------------------------------------ actions
    def travel(self, robot: Robot, x: float, z: float) -> tuple[int, float]:
        """Low-level steps to turn toward (x, z) in 10-degree turns and walk there in 0.25 m steps, and the
        heading on arrival."""
        dx, dz = x - robot.x, z - robot.z
        distance = math.hypot(dx, dz)
        if distance < 1e-9:
            return 1, robot.heading
        heading = math.atan2(dz, dx)
        turn = abs((heading - robot.heading + math.pi) % _TWO_PI - math.pi)
        steps = math.ceil(turn / TURN_STEP_RAD - 1e-9) + math.ceil(distance / FORWARD_STEP_M - 1e-9)
        return (steps if steps > 1 else 1), heading

    def execute(self, robot_id: int, command: Command) -> ActionResult:
        robot = self.robots[robot_id]
        if command.verb == GO_TO:
            result = self._go_to(robot, command.target)
        elif command.verb == LOOK_AT:
            result = self._look_at(robot, command.target)
        elif command.verb == PICK_UP:
            result = self._pick_up(robot, command.target)
        elif command.verb == PLACE:
            result = self._place(robot, command.target, command.destination)
        else:
            result = ActionResult(MISSION_COMPLETE, True, 1, "Mission complete.")
        if result.verb in self.attempts:
            self.attempts[result.verb] += 1
            self.successes[result.verb] += result.success
        self.steps += result.steps
        self.commands += 1
        self.version += 1
        return result

    def _unknown(self, verb: str, robot: Robot, ref: Ref) -> ActionResult | None:
        if self.is_known(robot, ref):
            return None
        where = "" if ref.kind == ROOM else " Visit rooms to find receptacles and objects."
        return ActionResult(verb, False, 1, f"You have not found {self.name(ref)} yet.{where}")

    def _go_to(self, robot: Robot, target: Ref) -> ActionResult:
        failure = self._unknown(GO_TO, robot, target)
        if failure:
            return failure
        position = self.position_of(target)
        if position is None:
            holder = self.holder(target.index)
            who = "you are" if self.robots[holder] is robot else f"robot {holder} is"
            return ActionResult(GO_TO, False, 1, f"You cannot go to {self.name(target)}: {who} holding it.")
        steps, robot.heading = self.travel(robot, position[0], position[1])
        robot.walked += math.hypot(position[0] - robot.x, position[1] - robot.z)
        robot.x, robot.z = position
        robot.looking = None
        if target.kind == ROOM:
            robot.near = target
            self.visit_room(robot, target.index)
        else:
            receptacle = target.index if target.kind == RECEPTACLE else self.location[target.index]
            robot.near = self.receptacle_refs[receptacle]
            self.discover_receptacle(robot, receptacle)
        return ActionResult(GO_TO, True, steps, f"You went to {self.name(target)}.")

    def _look_at(self, robot: Robot, target: Ref) -> ActionResult:
        failure = self._unknown(LOOK_AT, robot, target)
        if failure:
            return failure
        if not self.is_near(robot, target):
            return ActionResult(LOOK_AT, False, 1, f"{self.name(target)} is not near you; go to it first.")
        robot.looking = target
        return ActionResult(LOOK_AT, True, 1, f"You are looking at {self.name(target)}.")

    def _pick_up(self, robot: Robot, target: Ref) -> ActionResult:
        name = self.name(target)
        failure = self._unknown(PICK_UP, robot, target)
        if failure:
            return failure
        obj = target.index
        if robot.holding != HELD:
            return ActionResult(
                PICK_UP, False, 1, f"You cannot pick up {name}: your hand holds {self.object_names[robot.holding]}."
            )
        if self.location[obj] == HELD:
            return ActionResult(PICK_UP, False, 1, f"You cannot pick up {name}: another robot holds it.")
        if robot.looking != target or not self.is_near(robot, target):
            return ActionResult(PICK_UP, False, 1, f"You cannot pick up {name}: go to it and look at it first.")
        was_correct = self.is_correct(obj)
        self.correct_count -= was_correct
        self.rearranged_count -= was_correct and not self.initially_correct[obj]
        self._changed(self.receptacle_room[self.location[obj]])
        self.location[obj] = HELD
        robot.holding = obj
        robot.looking = None
        self.picks[obj] += 1
        self.carry_points[obj].append((robot.walked, (robot.x, robot.z)))
        return ActionResult(
            PICK_UP,
            True,
            1,
            f"You picked up {name}.",
            was_correct=was_correct,
            first_pick=self.picks[obj] == 1,
            initially_correct=self.initially_correct[obj],
        )

    def _place(self, robot: Robot, held: Ref, destination: Ref) -> ActionResult:
        obj_name, rec_name = self.name(held), self.name(destination)
        if robot.holding != held.index:
            return ActionResult(PLACE, False, 1, f"You cannot place {obj_name}: you are not holding it.")
        failure = self._unknown(PLACE, robot, destination)
        if failure:
            return failure
        if robot.looking != destination or not self.is_near(robot, destination):
            return ActionResult(
                PLACE, False, 1, f"You cannot place {obj_name} on {rec_name}: go to it and look at it first."
            )
        obj = held.index
        self.location[obj] = destination.index
        self._changed(self.receptacle_room[destination.index])
        now_correct = self.is_correct(obj)
        self.correct_count += now_correct
        self.rearranged_count += now_correct and not self.initially_correct[obj]
        robot.holding = HELD
        self.places[obj] += 1
        self.carry_points[obj].append((robot.walked, (robot.x, robot.z)))
        return ActionResult(
            PLACE,
            True,
            1,
            f"You placed {obj_name} on {rec_name}.",
            was_correct=self.is_correct(obj),
            first_pick=self.picks[obj] == 1,
            initially_correct=self.initially_correct[obj],
        )
