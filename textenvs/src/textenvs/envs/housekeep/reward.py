"""Housekeep's RL reward (``cos_eor/task/measures.py``), per command."""

from __future__ import annotations

from textenvs.envs.housekeep.commands import PICK_UP, PLACE
from textenvs.envs.housekeep.world import HELD, ActionResult, World

STEP_PENALTY = -0.01  # per low-level step
PICK_REWARD = 2.5  # first pick of an object that is not on a correct receptacle
PICK_CORRECT_PENALTY = -2.5  # picking an object that already sits on a correct receptacle
PLACE_REWARD = 2.5  # placing an initially misplaced object correctly, after its first pick
PLACE_WRONG_PENALTY = -2.5  # placing anywhere that is not correct
FAILED_PICK_PLACE_PENALTY = -0.2
SUCCESS_REWARD = 2.5  # once, when every object is correct and the hand is empty


def command_reward(result: ActionResult) -> float:
    """The reward of one command, without the success bonus."""
    reward = STEP_PENALTY * result.steps
    if result.verb not in (PICK_UP, PLACE):
        return reward
    if not result.success:
        return reward + FAILED_PICK_PLACE_PENALTY
    if result.verb == PICK_UP:
        if result.was_correct:
            return reward + PICK_CORRECT_PENALTY
        return reward + (PICK_REWARD if result.first_pick else 0.0)
    if not result.was_correct:
        return reward + PLACE_WRONG_PENALTY
    return reward + (PLACE_REWARD if result.first_pick and not result.initially_correct else 0.0)


def success_bonus(world: World) -> float:
    """``SUCCESS_REWARD`` the first time every object is correct with every hand empty, else 0."""
    if world.success_rewarded or not world.all_correct() or any(r.holding != HELD for r in world.robots):
        return 0.0
    world.success_rewarded = True
    return SUCCESS_REWARD
