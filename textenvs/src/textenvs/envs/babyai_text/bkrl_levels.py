"""The BabyAI levels of background-knowledge-rl (its ``babyai_envs``), re-created on minigrid 3.x.

One large room (20 to 30 cells) with a named target among random distractors. Unlike the original,
``GoToLocal-Pretraining`` draws its target from the env's RNG, not numpy's global one.
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


class GoToSequence(SampledLevel):
    """Go to one fixed object, then to another ("go to A, then go to B" or "go to B after you go to A")."""

    def __init__(self, first: Target, second: Target, **kwargs):
        self.first, self.second = first, second
        super().__init__(**kwargs)

    def propose_mission(self) -> Instr:
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
