"""``ViewCache``: minigrid's observation of a level, remembered per agent pose while the grid stays the same.

Encoding the agent's view (``gen_obs``: slice, rotate, occlusion, encode) is about 70% of a minigrid step.
The view depends only on the grid, the agent's pose and what it carries, and between two changes of the
grid an agent keeps coming back to the same poses (turning in place, walking into a wall): those steps
reuse the view computed the first time. Only minigrid's own actions change a BabyAI grid, and only
``pick up``, ``drop`` and ``toggle`` with something in front of the agent or in its hands; before such a
step, and at every reset, the cache is emptied.
"""

from __future__ import annotations

from typing import Any

from minigrid.core.actions import Actions
from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel

_GRID_ACTIONS = frozenset((Actions.pickup, Actions.drop, Actions.toggle))


class ViewCache:
    """Steps ``level`` through ``step``, with ``level.gen_obs`` answered from the cache during those steps.

    The cache takes over ``level.gen_obs``; outside ``step`` (in ``level.reset``, for another caller) it is
    minigrid's own. It assumes that nothing but ``step`` and ``clear`` changes the level between steps,
    which holds while the env owns its level. The cached views are read-only arrays.
    """

    def __init__(self, level: RoomGridLevel):
        self.level = level
        self._gen_obs = level.gen_obs
        self._views: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._active = False
        level.gen_obs = self._cached_gen_obs

    def clear(self) -> None:
        """Forget every view (the grid changed, e.g. a new episode)."""
        self._views.clear()

    def step(self, action: Actions) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """``level.step(action)``."""
        level = self.level
        if action in _GRID_ACTIONS and self._may_change_grid():
            self._views.clear()
        self._active = True
        try:
            return level.step(action)
        finally:
            self._active = False

    def _may_change_grid(self) -> bool:
        """Whether ``pick up``, ``drop`` or ``toggle`` could change the grid now: never with empty hands and
        nothing but an empty cell or a wall in front (minigrid then does nothing)."""
        level = self.level
        if level.carrying is not None:
            return True
        front = level.grid.get(*level.front_pos)
        return front is not None and front.type != "wall"

    def _cached_gen_obs(self) -> dict[str, Any]:
        if not self._active:
            return self._gen_obs()
        level = self.level
        pose = (*level.agent_pos, level.agent_dir)
        obs = self._views.get(pose)
        if obs is None:
            obs = self._views[pose] = self._gen_obs()
            obs["image"].flags.writeable = False
        return obs
