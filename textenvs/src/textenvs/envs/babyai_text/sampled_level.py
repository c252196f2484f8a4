"""``SampledLevel``: the base of the BabyAI levels textenvs re-creates (GLAM's, background-knowledge-rl's)."""

from __future__ import annotations

from minigrid.core.roomgrid import RoomGrid
from minigrid.envs.babyai.core.roomgrid_level import RejectSampling, RoomGridLevel
from minigrid.envs.babyai.core.verifier import Instr


class SampledLevel(RoomGridLevel):
    """A BabyAI level that draws its mission by rejection sampling, each attempt on a fresh grid.

    Subclasses implement ``propose_mission`` (build objects and agent on the current grid, return the
    instruction) and may narrow ``accepts``. Unlike minigrid's own retry loop this one never prints.
    """

    def __init__(self, room_size: int, num_dists: int, num_rows: int = 1, num_cols: int = 1, **kwargs):
        self.num_dists = num_dists
        super().__init__(room_size=room_size, num_rows=num_rows, num_cols=num_cols, **kwargs)

    def propose_mission(self) -> Instr:
        raise NotImplementedError

    def accepts(self, instrs: Instr) -> bool:
        """Every object reachable without moving another one, and minigrid's own validation."""
        if not self.check_objs_reachable(raise_exc=False):
            return False
        try:
            self.validate_instrs(instrs)
        except RejectSampling:
            return False
        return True

    def gen_mission(self) -> None:
        while True:
            instrs = self.propose_mission()
            if self.accepts(instrs):
                self.instrs = instrs
                return
            RoomGrid._gen_grid(self, self.width, self.height)
