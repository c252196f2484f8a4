"""LLM-Personalize's demonstrator: go to every unvisited room, then move each misplaced object to a
discovered correct receptacle (go to, look at, pick up, go to, look at, place), then ``mission complete``.

``plan(world, robot)`` gives the demonstrator's next plan as commands; ``plan_text`` writes it the way
LLM-Personalize's fine-tuning pairs do (``go to bathroom 0\\nstep 2: go to bedroom 0``: the prompt ends
with ``step 1: ``). The expert policy issues the same plans one command at a time (``next_command``).
"""

from __future__ import annotations

import math
from typing import Any

from textenvs.envs.housekeep.commands import MISSION_COMPLETE, OBJECT, RECEPTACLE, Ref
from textenvs.envs.housekeep.world import HELD, Robot, World


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
    """The plan as LLM-Personalize's assistant messages write it."""
    steps = plan(world, robot_id)
    return "\n".join(step if i == 0 else f"step {i + 1}: {step}" for i, step in enumerate(steps))


class HousekeepExpert:
    """The demonstrator as an ``Expert``: one command per ``act``, in the env's action mode."""

    def __init__(self, env: Any, robot_id: int = 0):
        self.env = env
        self.robot_id = robot_id

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        """Stateless: every ``act`` re-plans from the world."""

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        command = next_command(self.env.world, self.robot_id)
        if getattr(self.env, "action_mode", "text") == "discrete":
            admissible = info["admissible_commands"]
            return admissible.index(command) if command in admissible else len(admissible)
        return command
