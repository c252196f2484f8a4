"""A deterministic adapter of PyPI ``crafter``: the same game, reproducible in every process and obs mode.

Stock crafter has two sources of irreproducibility, both fixed here without changing the rules:

* ``World._chunks`` maps each chunk to a ``set`` of objects, iterated in memory-address order when
  crafter balances creatures (which one despawns depends on that order). Chunks are balanced here with
  their objects in creation order.
* Night-time render noise draws from the world's RNG, so rendering (or not) changes the game. Here the
  noise comes from its own generator, derived from the episode's seed and the step, and the world is
  rendered only when asked (text mode never renders).

Worlds come from ``worldgen.py``, a vectorized generator that gives crafter's worlds bit for bit.
"""

from __future__ import annotations

from typing import Any

import crafter
import numpy as np
from crafter import engine, objects

from textenvs.envs.crafter_text import worldgen

#: Crafter's world and view sizes (its defaults; captions assume them).
AREA = (64, 64)
VIEW = (9, 9)


class _SeededNoiseLocalView(engine.LocalView):
    """Crafter's local view, with night noise from ``noise_seed`` and ``frame`` instead of the world RNG."""

    noise_seed = 0
    frame = 0

    def _noise(self, canvas: np.ndarray, amount: float, stddev: float) -> np.ndarray:
        noise = np.random.default_rng([self.noise_seed, self.frame]).uniform(32, 127, canvas.shape[:2])
        mask = amount * self._vignette(canvas.shape, stddev)[..., None]
        return (1 - mask) * canvas + mask * noise[..., None]


class DeterministicCrafter(crafter.Env):
    """``crafter.Env`` seeded per episode, balancing creatures in a fixed order, rendering only on demand."""

    player_class: type[objects.Player] = objects.Player

    def __init__(self, length: int):
        super().__init__(area=AREA, view=VIEW, length=length, seed=0)
        item_rows = int(np.ceil(len(crafter.constants.items) / VIEW[0]))
        self._local_view = _SeededNoiseLocalView(self._world, self._textures, [VIEW[0], VIEW[1] - item_rows])
        # Crafter evaluates ``2 * max(self._view)`` for every object on every step; over a tuple rather
        # than a numpy array that is several times cheaper, and the value is the same.
        self._view = VIEW

    def start_episode(self, world_seed: int, noise_seed: int) -> None:
        """Crafter's ``reset`` with an explicit world seed (crafter derives it from a per-env counter)."""
        self._episode += 1
        self._step = 0
        self._world.reset(seed=world_seed)
        self._local_view.noise_seed = noise_seed
        self._update_time()
        self._player = self.player_class(self._world, (AREA[0] // 2, AREA[1] // 2))
        self._last_health = self._player.health
        self._world.add(self._player)
        self._unlocked = set()
        worldgen.generate_world(self._world, self._player)  # crafter's worlds, generated ~10x faster

    @property
    def player(self) -> objects.Player:
        return self._player

    @property
    def world(self) -> engine.World:
        return self._world

    @property
    def steps(self) -> int:
        return self._step

    def semantic(self) -> np.ndarray:
        """The semantic map, indexed ``[x][y]`` (crafter's ``info['semantic']``)."""
        return self._sem_view()

    def image(self, width: int, height: int) -> np.ndarray:
        """The frame crafter would show, ``(height, width, 3)`` uint8."""
        self._local_view.frame = self._step
        self._view = np.array(VIEW)  # crafter's render divides by the view as an array
        try:
            return self.render((width, height))
        finally:
            self._view = VIEW

    def _obs(self) -> None:
        return None  # rendering happens in ``image`` only when an observation needs pixels

    def _balance_chunk(self, chunk: tuple[int, int, int, int], objs: set[Any]) -> None:
        in_creation_order = sorted(objs, key=lambda obj: int(self._world._obj_map[tuple(obj.pos)]))
        super()._balance_chunk(chunk, in_creation_order)
