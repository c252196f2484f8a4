"""GLAM's BabyAI-Text levels (Carta et al., ICML 2023) re-created on minigrid 3.x.

One 8x8 room with 8 distractors (+1 for go to / pick up, +2 for put next and sequences); the *open*
task uses two rooms joined by a locked door whose key lies in the agent's room. Missions that name an
excluded colour-object pair are redrawn: training levels exclude yellow box, red key, red door, green
ball and grey door; ``MixedTestLocal`` allows only those pairs. GLAM drew the task kind once per env
instance; here it is drawn per reset unless ``task_kind_per_instance=True`` (then at the first reset).
"""

from __future__ import annotations

from minigrid.envs.babyai.core.verifier import (
    AfterInstr,
    BeforeInstr,
    GoToInstr,
    Instr,
    ObjDesc,
    OpenInstr,
    PickupInstr,
    PutNextInstr,
)

from textenvs.envs.babyai_text.sampled_level import SampledLevel

#: Pairs GLAM keeps out of training missions (and alone allows in MixedTestLocal).
HELD_OUT_PAIRS = ("yellow box", "red key", "red door", "green ball", "grey door")
#: Every pair that MixedTestLocal excludes (the complement of ``HELD_OUT_PAIRS`` among BabyAI's pairs).
TEST_EXCLUDED_PAIRS = (
    "yellow key", "yellow ball", "yellow door",
    "red box", "red ball",
    "green box", "green key", "green door",
    "grey box", "grey key", "grey ball",
    "blue box", "blue key", "blue ball", "blue door",
    "purple box", "purple key", "purple ball", "purple door",
)  # fmt: skip

#: Task kind -> (second instruction of the sequence, orders it may be stated in).
SEQUENCE_KINDS = {
    "pick up seq go to": (GoToInstr, ("before", "after")),
    "pick up then go to": (GoToInstr, ("before",)),
    "go to after pick up": (GoToInstr, ("after",)),
    "pick up seq pick up": (PickupInstr, ("before", "after")),
}
MIXED_KINDS = ("goto", "pickup", "open", "putnext", "pick up seq go to")


class GlamLevel(SampledLevel):
    """A GLAM level: ``task_kinds`` to draw from, ``excluded`` mission substrings, door colours."""

    task_kinds: tuple[str, ...] = MIXED_KINDS
    excluded: tuple[str, ...] = HELD_OUT_PAIRS
    door_colors: tuple[str, ...] = ("yellow", "green", "blue", "purple")
    door_color_optional = True

    def __init__(self, task_kind_per_instance: bool = False, room_size: int = 8, num_dists: int = 8, **kwargs):
        self.task_kind_per_instance = task_kind_per_instance
        self.task_kind: str | None = None
        super().__init__(room_size=room_size, num_dists=num_dists, **kwargs)

    def _gen_grid(self, width: int, height: int) -> None:
        if self.task_kind is None or not self.task_kind_per_instance:
            self.task_kind = self._rand_elem(self.task_kinds)
        self.num_cols = 2 if self.task_kind == "open" else 1
        self.width = (self.room_size - 1) * self.num_cols + 1
        super()._gen_grid(self.width, self.height)

    def max_grid_size(self) -> tuple[int, int]:
        """Largest (width, height) over the task kinds (the open task has two rooms side by side)."""
        num_cols = 2 if "open" in self.task_kinds else 1
        return (self.room_size - 1) * num_cols + 1, self.room_size

    def accepts(self, instrs: Instr) -> bool:
        surface = instrs.surface(self)
        return not any(pair in surface for pair in self.excluded) and super().accepts(instrs)

    def propose_mission(self) -> Instr:
        kind = self.task_kind
        if kind == "open":
            return self._propose_open()
        self.place_agent()
        if kind in ("goto", "pickup"):
            target = self._rand_elem(self.add_distractors(num_distractors=self.num_dists + 1, all_unique=False))
            instr = GoToInstr if kind == "goto" else PickupInstr
            return instr(ObjDesc(target.type, target.color))
        objs = self.add_distractors(num_distractors=self.num_dists + 2, all_unique=False)
        first = self._rand_elem(objs)
        second = self._rand_elem(objs)
        if (first.type, first.color) == (second.type, second.color) and self._unique(first):
            while (first.type, first.color) == (second.type, second.color):
                second = self._rand_elem(objs)
        first_desc, second_desc = ObjDesc(first.type, first.color), ObjDesc(second.type, second.color)
        if kind == "putnext":
            return PutNextInstr(first_desc, second_desc)
        second_instr, orders = SEQUENCE_KINDS[kind]
        pick_up, then = PickupInstr(first_desc), second_instr(second_desc)
        if self._rand_elem(orders) == "before":
            return BeforeInstr(pick_up, then)
        return AfterInstr(then, pick_up)

    def _unique(self, obj) -> bool:
        """Whether ``obj`` is the only object of its colour and type (then the second must differ)."""
        objs, _ = ObjDesc(obj.type, obj.color).find_matching_objs(self)
        return len(objs) < 2

    def _propose_open(self) -> Instr:
        color = self._rand_elem(self.door_colors)
        locked_room = self._add_locked_door(color)
        self.connect_all()
        for j in range(self.num_rows):
            for i in range(self.num_cols):
                if self.get_room(i, j) is not locked_room:
                    self.add_distractors(i, j, num_distractors=self.num_dists, all_unique=False)
        while True:
            self.place_agent()
            if self.room_from_pos(*self.agent_pos) is not locked_room:
                break
        named = self._rand_elem([None, color]) if self.door_color_optional else color
        return OpenInstr(ObjDesc("door", named))

    def _add_locked_door(self, color: str):
        """A locked door of ``color`` into a random room, and its key in another room; the locked room."""
        while True:
            i, j = self._rand_int(0, self.num_cols), self._rand_int(0, self.num_rows)
            door_idx = self._rand_int(0, 4)
            locked_room = self.get_room(i, j)
            if locked_room.neighbors[door_idx] is not None:
                break
        self.add_door(i, j, door_idx, color=color, locked=True)
        while True:
            i, j = self._rand_int(0, self.num_cols), self._rand_int(0, self.num_rows)
            if self.get_room(i, j) is not locked_room:
                self.add_object(i, j, "key", color)
                return locked_room


class MixedTrainLocal(GlamLevel):
    """Go to, pick up, open (locked door), put next, pick up A then/after go to B; held-out pairs excluded."""


class MixedTestLocal(GlamLevel):
    """MixedTrainLocal's task kinds on the held-out pairs only (red and grey locked doors)."""

    excluded = TEST_EXCLUDED_PAIRS
    door_colors = ("red", "grey")
    door_color_optional = False


class PickUpSeqGoToLocal(GlamLevel):
    """Only "pick up A, then go to B" / "go to B after you pick up A"."""

    task_kinds = ("pick up seq go to",)


class PickUpThenGoToLocal(GlamLevel):
    """Only "pick up A, then go to B"."""

    task_kinds = ("pick up then go to",)


class GoToAfterPickUpLocal(GlamLevel):
    """Only "go to B after you pick up A"."""

    task_kinds = ("go to after pick up",)


class PickUpSeqPickUpLocal(GlamLevel):
    """Only "pick up A, then pick up B" / "pick up B after you pick up A"."""

    task_kinds = ("pick up seq pick up",)


GLAM_LEVEL_CLASSES: dict[str, type[GlamLevel]] = {
    cls.__name__: cls
    for cls in (
        MixedTrainLocal,
        MixedTestLocal,
        PickUpSeqGoToLocal,
        PickUpThenGoToLocal,
        GoToAfterPickUpLocal,
        PickUpSeqPickUpLocal,
    )
}
