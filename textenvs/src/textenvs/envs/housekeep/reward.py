"""Housekeep-Text's reward, per command, as named terms.

``"housekeep"`` (default) is Housekeep's ``CosRearrangementRLEnv.get_reward`` (``cos_eor/env/env.py``) with the
values of its RL config:

- ``slack``: -0.01 per low-level step (a command that costs k low-level steps pays -0.01 k);
- ``pick``: a successful pick of an object that sits on a correct receptacle costs -2.5, every time; the first
  successful pick of any other object pays +2.5, later picks 0 (the pick counter counts penalised picks too);
- ``place``: every successful place pays +2.5 if the number of correctly placed objects rose, -2.5 if not
  (a held object is never correct, so: +2.5 exactly when it lands on a correct receptacle);
- ``episode_success``: +2.5 on every low-level step at whose end every object is correct and every hand is
  empty; Housekeep does not end the episode then, only on its STOP action (``mission complete``);
- ``failed_pick_place``: the config's -0.2 is never paid by the original (it reads the failure flag from a
  dict that never holds it): ``fail_penalty`` defaults to 0; ``fail_penalty=-0.2`` is the intended value.

``"ellm"`` is the variant ELLM's text Housekeep trains with when its goals are the correct placements (Du et
al. 2023, ``text_housekeep/cos_eor/env/text_env.py``): +2.5 for the first pick of an object that is not on a
correct receptacle, -0.25 for picking one that is; +2.5 for placing an initially misplaced object correctly
after its first pick, -0.25 for placing it anywhere incorrect; no step penalty, no success bonus; the episode
ends once every object is correct with an empty hand.

The reward of a command is ``scale`` times the sum of its terms (Housekeep's trainer uses 0.1 and evaluates
unscaled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from textenvs.core.spaces import check_choice
from textenvs.envs.housekeep.commands import PICK_UP, PLACE
from textenvs.envs.housekeep.world import HELD, ActionResult, World

REWARD_STYLES = ("housekeep", "ellm")

STEP_PENALTY = -0.01  # SLACK_REWARD, per low-level step
PICK_REWARD = 2.5  # GRIPPED_SUCCESS_REWARD
PLACE_REWARD = 2.5  # DROP_SUCCESS_REWARD
SUCCESS_REWARD = 2.5  # SUCCESS_REWARD, per low-level step while the house is tidy and hands are empty
INTENDED_FAIL_PENALTY = -0.2  # GRIPPED_DROPPED_FAIL_REWARD in the config; never paid by the original
ELLM_WRONG_FACTOR = -0.1  # ELLM: a pick or place off its goals pays -0.1 x the success reward

TERMS = ("slack", "pick", "place", "failed_pick_place", "episode_success")


@dataclass(frozen=True)
class RewardRule:
    """Which reward: ``style`` (``"housekeep"`` or ``"ellm"``), ``fail_penalty`` for a failed pick or place,
    and ``scale`` multiplying the summed terms."""

    style: str = "housekeep"
    fail_penalty: float = 0.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        check_choice("reward_style", self.style, REWARD_STYLES)
        for name, value in (("fail_penalty", self.fail_penalty), ("reward_scale", self.scale)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")

    @property
    def ends_on_success(self) -> bool:
        """ELLM's variant ends the episode when the house is tidy and the hand empty; Housekeep's does not."""
        return self.style == "ellm"

    def terms(self, result: ActionResult | None, steps: int, world: World) -> dict[str, float]:
        """The terms of one command (``result`` None: an invalid command) that cost ``steps`` low-level steps,
        with ``world`` as it is after every robot's command of this step."""
        terms = dict.fromkeys(TERMS, 0.0)
        if result is not None and result.verb in (PICK_UP, PLACE):
            if not result.success:
                terms["failed_pick_place"] = float(self.fail_penalty)
            elif self.style == "housekeep":
                terms["pick" if result.verb == PICK_UP else "place"] = _housekeep_pick_place(result)
            else:
                terms["pick" if result.verb == PICK_UP else "place"] = _ellm_pick_place(result)
        if self.style == "housekeep":
            terms["slack"] = STEP_PENALTY * steps
            if is_tidy(world):
                terms["episode_success"] = SUCCESS_REWARD * steps
        return terms

    def total(self, terms: dict[str, float]) -> float:
        return self.scale * sum(terms.values())


def _housekeep_pick_place(result: ActionResult) -> float:
    if result.verb == PICK_UP:
        if result.was_correct:
            return -PICK_REWARD
        return PICK_REWARD if result.first_pick else 0.0
    return PLACE_REWARD if result.was_correct else -PLACE_REWARD


def _ellm_pick_place(result: ActionResult) -> float:
    if result.verb == PICK_UP:
        if result.was_correct:
            return ELLM_WRONG_FACTOR * PICK_REWARD
        return PICK_REWARD if result.first_pick else 0.0
    if not result.was_correct:
        return ELLM_WRONG_FACTOR * PLACE_REWARD
    return PLACE_REWARD if result.first_pick and not result.initially_correct else 0.0


def is_tidy(world: World) -> bool:
    """Housekeep's episode-success condition with empty hands: every object on a correct receptacle."""
    return world.all_correct() and all(r.holding == HELD for r in world.robots)
