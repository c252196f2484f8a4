"""The BabyAI levels of background-knowledge-rl (its ``babyai_envs``), re-created on minigrid 3.x.

One large room (20 to 30 cells) with a named target among random distractors. The levels draw the env's
RNG in the original's order, so a seed gives the original's level; the one exception is
``GoToLocal-Pretraining``, which draws its target from the env's RNG, not numpy's global one.

The sequence and pick-up levels subclass minigrid's ``LevelGen`` in the original with
``locked_room_prob=0``: each attempt still draws one float against that probability before anything else
(``_draw_locked_room``), and so do ours.
"""

from __future__ import annotations

from minigrid.envs.babyai.core.verifier import AfterInstr, BeforeInstr, GoToInstr, Instr, ObjDesc, PickupInstr

from textenvs.envs.babyai_text.sampled_level import SampledLevel

#: An object as (type, color).
Target = tuple[str, str]


class GoToPretraining(SampledLevel):
    """Go to a red, green or blue ball or box."""

    def propose_mission(self) -> Instr:
        self.place_agent()
        color = self._rand_elem(["red", "green", "blue"])
        kind = self._rand_elem(["ball", "box"])
        target, _ = self.add_object(0, 0, kind, color)
        self.add_distractors(num_distractors=self.num_dists, all_unique=False)
        return GoToInstr(ObjDesc(target.type, target.color))


class GoToObject(SampledLevel):
    """Go to one fixed object (type, color)."""

    def __init__(self, target: Target, **kwargs):
        self.target = target
        super().__init__(**kwargs)

    def propose_mission(self) -> Instr:
        self.place_agent()
        target, _ = self.add_object(0, 0, *self.target)
        self.add_distractors(num_distractors=self.num_dists, all_unique=False)
        return GoToInstr(ObjDesc(target.type, target.color))


def _draw_locked_room(level: SampledLevel) -> None:
    """``LevelGen.gen_mission``'s first draw: ``_rand_float(0, 1) < locked_room_prob``; with the original's
    probability 0 no room is locked, but the draw moves the RNG, and the rest of the level depends on it."""
    level._rand_float(0, 1)


class GoToSequence(SampledLevel):
    """Go to one fixed object, then to another ("go to A, then go to B" or "go to B after you go to A").

    ``GoTo-PurpleBallGreenKey-S20`` keeps the original's quirk: its second object is a purple box, not the
    green key its name promises."""

    def __init__(self, first: Target, second: Target, **kwargs):
        self.first, self.second = first, second
        super().__init__(**kwargs)

    def propose_mission(self) -> Instr:
        _draw_locked_room(self)
        first, _ = self.add_object(0, 0, *self.first)
        second, _ = self.add_object(0, 0, *self.second)
        self.add_distractors(num_distractors=self.num_dists, all_unique=False)
        self.place_agent()
        go_first = GoToInstr(ObjDesc(first.type, first.color))
        go_second = GoToInstr(ObjDesc(second.type, second.color))
        if self._rand_elem(["before", "after"]) == "before":
            return BeforeInstr(go_first, go_second)
        return AfterInstr(go_second, go_first)


class PickUpObject(SampledLevel):
    """Pick up one fixed object (type, color)."""

    def __init__(self, target: Target, **kwargs):
        self.target = target
        super().__init__(**kwargs)

    def propose_mission(self) -> Instr:
        _draw_locked_room(self)
        target, _ = self.add_object(0, 0, *self.target)
        self.add_distractors(num_distractors=self.num_dists, all_unique=False)
        self.place_agent()
        return PickupInstr(ObjDesc(target.type, target.color))


BKRL_LEVEL_CLASSES: dict[str, type[SampledLevel]] = {
    "goto_pretraining": GoToPretraining,
    "goto": GoToObject,
    "goto_sequence": GoToSequence,
    "pickup": PickUpObject,
}
