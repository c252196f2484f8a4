"""The BabyAI-Text expert: minigrid's ``BabyAIBot`` behind the ``Expert`` interface."""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from minigrid.core.actions import Actions
from minigrid.utils.baby_ai_bot import BabyAIBot, DisappearedBoxError

if TYPE_CHECKING:
    from textenvs.envs.babyai_text.env import BabyAITextEnv


class QuickBabyAIBot(BabyAIBot):
    """``BabyAIBot`` with the same plans, computed faster.

    Two of its hot spots are replaced by equivalents: the breadth-first search pops its queue from a
    deque (minigrid's copies the list on every pop, quadratic on 20x20+ rooms), and the visibility
    update reads the view the env already encoded (its unseen cells are 0) instead of recomputing it.
    """

    def __init__(self, level: Any, current_view: Callable[[], np.ndarray]):
        self.current_view = current_view
        super().__init__(level)

    def _process_obs(self) -> None:
        level = self.mission.unwrapped
        size = level.agent_view_size
        seen_i, seen_j = np.nonzero(self.current_view()[:, :, 0])
        top_left = np.asarray(level.agent_pos) + level.dir_vec * (size - 1) - level.right_vec * (size // 2)
        cells = top_left + np.outer(seen_i, level.right_vec) - np.outer(seen_j, level.dir_vec)
        width, height = self.vis_mask.shape
        inside = (cells[:, 0] >= 0) & (cells[:, 0] < width) & (cells[:, 1] >= 0) & (cells[:, 1] < height)
        self.vis_mask[cells[inside, 0], cells[inside, 1]] = True

    def _breadth_first_search(self, initial_states, accept_fn, ignore_blockers):
        """Cells by breadth-first search from ``initial_states`` ((i, j, di, dj)), straight-ahead moves
        queued first; returns (path back to the start, accepted cell, predecessors) or (None, None, ...).

        A cell is queued once (minigrid's queues it again from every neighbour and skips the copies
        when popped): the order in which cells are first reached, and so every result, is the same.
        """
        self.bfs_counter += 1
        grid = self.mission.unwrapped.grid
        cells, width, height = grid.grid, grid.width, grid.height
        visible = self.vis_mask.tolist()
        previous_pos: dict[tuple[int, int], tuple[int, int] | None] = {}
        queue: deque[tuple[int, int, int, int, tuple[int, int] | None]] = deque()
        queued: set[tuple[int, int]] = set()
        for i, j, di, dj in initial_states:
            if (i, j) not in queued:
                queued.add((i, j))
                queue.append((i, j, di, dj, None))
        while queue:
            i, j, di, dj, came_from = queue.popleft()
            if not (0 <= i < width and 0 <= j < height):
                raise IndexError(f"BabyAIBot's search left the {width}x{height} grid at {(i, j)}")
            self.bfs_step_counter += 1
            cell = cells[j * width + i]
            previous_pos[(i, j)] = came_from
            if accept_fn((i, j), cell):
                path, pos = [], (i, j)
                while pos:
                    path.append(pos)
                    pos = previous_pos[pos]
                return path, (i, j), previous_pos
            if not visible[i][j]:
                continue
            if cell is not None:
                if cell.type == "wall" or (cell.type == "door" and not cell.is_open):
                    continue
                if cell.type != "door" and not ignore_blockers:
                    continue
            for di_next, dj_next in ((di, dj), (dj, di), (-dj, -di), (-di, -dj)):
                next_pos = (i + di_next, j + dj_next)
                if next_pos not in queued:
                    queued.add(next_pos)
                    queue.append((*next_pos, di_next, dj_next, (i, j)))
        return None, None, previous_pos


def bot_failure_reason(error: AssertionError | DisappearedBoxError) -> str:
    """Why ``BabyAIBot`` gave up, as a sentence (its own texts are terse: one begins with a stray "0")."""
    if isinstance(error, DisappearedBoxError):
        return "a box was opened, and the bot cannot plan once a box is gone"
    detail = str(error).removeprefix("0").strip()  # minigrid's "0nothing left to explore"
    return detail or "one of its internal checks did not hold"


class BabyAIBotExpert:
    """Plans with ``BabyAIBot`` on the env's level; ``act`` returns an action of the env's action space.

    When the env executed another action than the one suggested (the expert as an advisor, as in
    DAgger), the bot is told which one, so that it replans from where the agent really is.
    ``BabyAIBot`` cannot solve a few levels (``PutNextS*Carrying``, ``KeyInBox``): when it fails, the
    expert warns, records why in ``failure`` and turns left until the episode ends.
    """

    def __init__(self, env: BabyAITextEnv):
        self.env = env
        self.bot: BabyAIBot | None = None
        self.suggested: int | None = None
        self.failure: str | None = None

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.bot = QuickBabyAIBot(self.env.level, lambda: self.env.view)
        self.suggested = None
        self.failure = None

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self.bot is None:
            raise RuntimeError("call expert.reset(obs, info) after env.reset() before expert.act")
        if self.failure is None:
            taken = self.env.last_action
            try:
                action = self.bot.replan(None if taken == self.suggested else taken)
            except (AssertionError, DisappearedBoxError) as error:
                self._give_up(f"BabyAIBot failed: {bot_failure_reason(error)}")
            else:
                if action == Actions.done:
                    self._give_up("BabyAIBot considers the mission done but the level does not")
                else:
                    self.suggested = int(action)
        if self.failure is not None:
            self.suggested = int(Actions.left)
        return self.env.action_for(self.suggested)

    def _give_up(self, reason: str) -> None:
        self.failure = reason
        warnings.warn(
            f"{reason} on {self.env.level_name!r} ({self.env.mission()!r}); "
            "the expert turns left until the episode ends",
            stacklevel=3,
        )
