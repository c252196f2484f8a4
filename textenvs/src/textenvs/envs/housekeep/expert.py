"""The Housekeep experts, in two modes.

``mode="faithful"``: LLM-Personalize's demonstrator (its planner's ``demo`` mode, ``LLMModelManual`` in
``cos_eor/policy/llm_planner.py``), a ``Demonstrator`` that plans: first ``go to`` every room not yet planned
(a room counts as visited once planned); then, at each planning call, the first object in the episode's
object order that is misplaced, has been seen and has a seen correct receptacle, taken to a uniformly random
one of its seen correct receptacles (go to, look at, pick up, go to, look at, place); ``mission complete``
when no object qualifies, even if unseen misplaced objects remain.

``mode="efficient"``: the same room sweep, then the first known misplaced object in discovery order to its
nearest known correct receptacle, re-planned from the state at every command (``next_command``).

``plan_text`` writes a plan the way LLM-Personalize's fine-tuning pairs do (``go to bathroom 0\\nstep 2: go
to bedroom 0``: the prompt ends with ``step 1: ``).
"""

from __future__ import annotations

import math
import zlib
from collections import deque
from typing import Any

import numpy as np

from textenvs.core.spaces import check_choice
from textenvs.envs.housekeep.commands import MISSION_COMPLETE, OBJECT, RECEPTACLE, Ref
from textenvs.envs.housekeep.world import HELD, Robot, World

EXPERT_MODES = ("efficient", "faithful")


def _distance(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def correct_target(world: World, robot: Robot, obj: int, origin: tuple[float, float]) -> int | None:
    """The known correct receptacle of ``obj`` nearest to ``origin`` (ties: discovery order)."""
    options = [r for r in robot.known_receptacles if r in world.correct[obj]]
    return min(options, key=lambda r: _distance(world.receptacles[r].position, origin), default=None)


def next_misplaced(world: World, robot: Robot) -> tuple[int, int] | None:
    """The first known misplaced object (discovery order) with a known correct receptacle, and that one."""
    for obj in robot.known_objects:
        location = world.location[obj]
        if location == HELD or location in world.correct[obj]:
            continue
        target = correct_target(world, robot, obj, world.receptacles[location].position)
        if target is not None:
            return obj, target
    return None


def _unvisited_rooms(world: World, robot: Robot) -> list[int]:
    return [k for k in world.room_order if not robot.visited[k]]


def next_command(world: World, robot_id: int = 0) -> str:
    """The demonstrator's next command, from the state alone (where it is in its current plan)."""
    robot = world.robots[robot_id]
    if robot.holding != HELD:
        target = correct_target(world, robot, robot.holding, (robot.x, robot.z))
        if target is not None:
            ref, name = Ref(RECEPTACLE, target), world.receptacles[target].name
            if robot.looking == ref:
                return f"place {world.object_names[robot.holding]} on {name}"
            return f"look at {name}" if world.is_near(robot, ref) else f"go to {name}"
    unvisited = _unvisited_rooms(world, robot)
    if unvisited:
        return f"go to {world.rooms[unvisited[0]].name}"
    task = next_misplaced(world, robot)
    if task is None:
        return MISSION_COMPLETE
    ref, name = Ref(OBJECT, task[0]), world.object_names[task[0]]
    if robot.looking == ref:
        return f"pick up {name}"
    return f"look at {name}" if world.is_near(robot, ref) else f"go to {name}"


def plan(world: World, robot_id: int = 0) -> list[str]:
    """The demonstrator's next plan, as canonical commands."""
    robot = world.robots[robot_id]
    if robot.holding != HELD:
        obj = robot.holding
        target = correct_target(world, robot, obj, (robot.x, robot.z))
        if target is not None:
            name, rec = world.object_names[obj], world.receptacles[target].name
            return [f"go to {rec}", f"look at {rec}", f"place {name} on {rec}"]
    unvisited = _unvisited_rooms(world, robot)
    if unvisited:
        return [f"go to {world.rooms[k].name}" for k in unvisited]
    task = next_misplaced(world, robot)
    if task is not None:
        name, rec = world.object_names[task[0]], world.receptacles[task[1]].name
        return [
            f"go to {name}",
            f"look at {name}",
            f"pick up {name}",
            f"go to {rec}",
            f"look at {rec}",
            f"place {name} on {rec}",
        ]
    return [MISSION_COMPLETE]


def plan_text(world: World, robot_id: int = 0) -> str:
    """The efficient expert's next plan as LLM-Personalize's assistant messages write it."""
    return format_plan(plan(world, robot_id))


def format_plan(steps: list[str]) -> str:
    """A plan as LLM-Personalize's assistant messages write it (the prompt ends with ``step 1: ``)."""
    return "\n".join(step if i == 0 else f"step {i + 1}: {step}" for i, step in enumerate(steps))


def object_plan(name: str, receptacle: str) -> list[str]:
    return [
        f"go to {name}",
        f"look at {name}",
        f"pick up {name}",
        f"go to {receptacle}",
        f"look at {receptacle}",
        f"place {name} on {receptacle}",
    ]


class Demonstrator:
    """LLM-Personalize's demonstrator: ``plan()`` is one planning call; its random choices come from ``rng``."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.planned_rooms: set[int] = set()

    def plan(self, world: World, robot_id: int = 0) -> list[str]:
        robot = world.robots[robot_id]
        rooms = [k for k in world.room_order if k not in self.planned_rooms]
        if rooms:
            self.planned_rooms.update(rooms)
            return [f"go to {world.rooms[k].name}" for k in rooms]
        for obj, location in enumerate(world.location):
            if location != HELD and location in world.correct[obj]:
                continue
            # the original shuffles every misplaced object's correct receptacles, qualifying or not
            order = self.rng.permutation(sorted(world.correct[obj]))
            target = next((int(r) for r in order if robot.is_known_receptacle[r]), None)
            if target is not None and location != HELD and robot.is_known_object[obj]:
                return object_plan(world.object_names[obj], world.receptacles[target].name)
        return [MISSION_COMPLETE]


class EfficientPlanner:
    """The efficient expert's plans, for the same planning loop as the demonstrator's."""

    def plan(self, world: World, robot_id: int = 0) -> list[str]:
        return plan(world, robot_id)


def make_planner(mode: str, world: World, seed: int = 0) -> Demonstrator | EfficientPlanner:
    """A fresh planner for one episode of ``world`` in ``mode`` (``"faithful"`` or ``"efficient"``)."""
    check_choice("expert mode", mode, EXPERT_MODES)
    return Demonstrator(demonstrator_rng(seed, world)) if mode == "faithful" else EfficientPlanner()


def demonstrator_rng(seed: int, world: World) -> np.random.Generator:
    """The demonstrator's generator for one episode: from the expert's seed and the episode alone, so an
    episode's demonstration is the same in every process whatever was played before."""
    episode = "|".join([world.scene.name, *world.object_keys])
    return np.random.default_rng([seed, zlib.crc32(episode.encode())])


class HousekeepExpert:
    """An expert policy (``mode`` ``"efficient"`` or ``"faithful"``): one command per ``act``, in the env's
    action mode. The faithful one plays each demonstrator plan to its end before planning again; ``plans``
    holds the episode's (text view, plan) pairs at each planning call, for imitation learning."""

    def __init__(self, env: Any, robot_id: int = 0, mode: str = "efficient", seed: int = 0):
        self.env = env
        self.robot_id = robot_id
        self.mode = check_choice("expert mode", mode, EXPERT_MODES)
        self.seed = int(seed)
        self.planner: Demonstrator | EfficientPlanner | None = None
        self.pending: deque[str] = deque()
        self.plans: list[tuple[str, list[str]]] = []

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        if self.mode == "faithful":
            self.planner = make_planner(self.mode, self.env.world, self.seed)
            self.pending.clear()
            self.plans = []

    def next_command(self, obs: Any) -> str:
        if self.mode == "efficient":
            return next_command(self.env.world, self.robot_id)
        if self.planner is None:
            raise RuntimeError("call reset(obs, info) at the start of each episode before act()")
        if not self.pending:
            steps = self.planner.plan(self.env.world, self.robot_id)
            self.plans.append((obs["text"] if isinstance(obs, dict) else str(obs), steps))
            self.pending.extend(steps)
        return self.pending.popleft()

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        command = self.next_command(obs)
        if getattr(self.env, "action_mode", "text") == "discrete":
            admissible = info["admissible_commands"]
            return admissible.index(command) if command in admissible else len(admissible)
        return command
