"""Crafter 1.8.3's world generation, vectorized: the same worlds as ``crafter.worldgen.generate_world``.

Crafter decides each cell's material with a chain of OpenSimplex noise thresholds, evaluated cell by cell
in Python, then places creatures cell by cell. Here each noise field is computed at once over all the
cells where crafter's chain reaches it (OpenSimplex's own ``noise3`` kernel, looped in numba when it is
installed; opensimplex 0.4's internals) and the chain becomes array masks. Only the cells where crafter
draws from ``world.random`` keep a loop, which makes the same draws in the same order under the same
conditions, so the map, the creatures (and their order) and the RNG state afterwards are crafter's own.
"""

from __future__ import annotations

import numpy as np
import opensimplex
from crafter import engine, objects
from opensimplex.internals import _noise3

from textenvs.core.jit import jit

#: Crafter's names of the materials generation places, in the order of the codes below.
MATERIAL_NAMES = ("grass", "path", "coal", "iron", "diamond", "lava", "stone", "sand", "water", "tree")
GRASS, PATH, COAL, IRON, DIAMOND, LAVA, STONE, SAND, WATER, TREE = range(len(MATERIAL_NAMES))


@jit  # without numba, opensimplex's kernel runs in pure Python too
def _noise3_at_points(x: np.ndarray, y: np.ndarray, z: int, perm: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """OpenSimplex ``noise3(x[i], y[i], z)`` for every ``i``: the very kernel ``OpenSimplex.noise3`` runs."""
    noise = np.empty(x.size)
    for i in range(x.size):
        noise[i] = _noise3(x[i], y[i], z, perm, grad)
    return noise


class _UniformDraws:
    """``uniform()`` one by one, served from bulk draws (a scalar ``RandomState.uniform`` call costs
    microseconds; a bulk draw gives the same numbers); ``finish`` leaves ``random`` in the state the
    single draws would have left it in."""

    _CHUNK = 1024

    def __init__(self, random: np.random.RandomState):
        self._random = random
        self._state = random.get_state()
        self._values: list[float] = []
        self._used = 0

    def __call__(self) -> float:
        if self._used == len(self._values):
            self._values += self._random.uniform(size=self._CHUNK).tolist()
        self._used += 1
        return self._values[self._used - 1]

    def finish(self) -> None:
        self._random.set_state(self._state)
        self._random.uniform(size=self._used)


class _Octaves:
    """Crafter's ``_simplex`` over many cells at once: a weighted sum of noise octaves, by float operations
    in crafter's order (so every value is bit-identical to its per-cell one)."""

    def __init__(self, simplex: opensimplex.OpenSimplex, shape: tuple[int, int]):
        self._perm, self._grad = simplex._perm, simplex._perm_grad_index3
        self._everywhere = np.ones(shape, bool)

    def __call__(
        self,
        x: np.ndarray,
        y: np.ndarray,
        z: int,
        sizes: int | dict[int, float],
        normalize: bool = True,
        where: np.ndarray | None = None,
    ) -> np.ndarray:
        """The field at the cells ``where`` is true (all by default; NaN elsewhere, so never above a threshold)."""
        where = self._everywhere if where is None else where
        sizes = sizes if isinstance(sizes, dict) else {sizes: 1}
        value = 0
        for size, weight in sizes.items():
            value = value + weight * _noise3_at_points((x / size)[where], (y / size)[where], z, self._perm, self._grad)
        if normalize:
            value = value / sum(sizes.values())
        field = np.full(where.shape, np.nan)
        field[where] = value
        return field


def generate_world(world: engine.World, player: objects.Player) -> None:
    """Fill ``world`` (freshly reset, holding only ``player``) exactly as crafter's ``generate_world``."""
    simplex = opensimplex.OpenSimplex(seed=world.random.randint(0, 2**31 - 1))
    x, y = np.meshgrid(np.arange(world.area[0]), np.arange(world.area[1]), indexing="ij")
    distance = np.sqrt((x - player.pos[0]) ** 2 + (y - player.pos[1]) ** 2)
    uniform = _UniformDraws(world.random)
    materials, tunnels = _materials(uniform, _Octaves(simplex, x.shape), x, y, distance)
    material_ids = np.array([world._mat_ids[name] for name in MATERIAL_NAMES], np.uint8)
    world._mat_map[...] = material_ids[materials]
    _place_creatures(world, player, uniform, materials, tunnels, distance)
    uniform.finish()


def _materials(
    uniform: _UniformDraws, octaves: _Octaves, x: np.ndarray, y: np.ndarray, distance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Crafter's ``_set_material`` for every cell: material codes and the tunnel mask. A noise field is
    evaluated only at the cells where crafter's chain reaches it."""
    start = 4 - distance
    start = start + 2 * octaves(x, y, 8, 3)
    start = 1 / (1 + np.exp(-start))
    water = octaves(x, y, 3, {15: 1, 5: 0.15}, False) + 0.1
    water = water - 2 * start
    mountain = octaves(x, y, 0, {15: 1, 5: 0.3})
    mountain = mountain - (4 * start + 0.3 * water)

    materials = np.full(x.shape, GRASS, np.int64)
    lowland = start <= 0.5
    in_mountains = lowland & (mountain > 0.15)
    lowland &= ~in_mountains

    unsettled = in_mountains.copy()
    cave = unsettled & (octaves(x, y, 6, 7, where=unsettled) > 0.15) & (mountain > 0.3)
    unsettled &= ~cave
    horizontal_tunnel = unsettled & (octaves(2 * x, y / 5, 7, 3, where=unsettled) > 0.4)
    unsettled &= ~horizontal_tunnel
    vertical_tunnel = unsettled & (octaves(x / 5, 2 * y, 7, 3, where=unsettled) > 0.4)
    rock = unsettled & ~vertical_tunnel
    tunnels = horizontal_tunnel | vertical_tunnel
    materials[cave | tunnels] = PATH
    lava = rock & (mountain > 0.3)
    lava &= octaves(x, y, 6, 5, where=lava) > 0.35
    materials[rock] = STONE
    materials[lava] = LAVA

    shore = lowland & (water > 0.25) & (water <= 0.35)
    sand = shore & (octaves(x, y, 4, 9, where=shore) > -0.2)
    materials[sand] = SAND
    lake = lowland & ~sand & (water > 0.3)
    materials[lake] = WATER
    grassland = lowland & ~sand & ~lake

    coal_vein = octaves(x, y, 1, 8, where=rock) > 0
    iron_vein = octaves(x, y, 2, 6, where=rock) > 0.4
    deep = mountain > 0.18
    forest = octaves(x, y, 5, 7, where=grassland) > 0
    # Crafter draws (``uniform()``) only where a condition before it in its chain holds.
    cells = np.nonzero((rock & (coal_vein | iron_vein | deep)) | (grassland & forest))
    columns = (grassland, coal_vein, iron_vein, deep)
    for cell_x, cell_y, in_grassland, coal, iron, diamond in zip(
        *(c.tolist() for c in cells), *(mask[cells].tolist() for mask in columns), strict=True
    ):
        if in_grassland:
            if uniform() > 0.8:
                materials[cell_x, cell_y] = TREE
        elif coal and uniform() > 0.85:
            materials[cell_x, cell_y] = COAL
        elif iron and uniform() > 0.75:
            materials[cell_x, cell_y] = IRON
        elif diamond and uniform() > 0.994:
            materials[cell_x, cell_y] = DIAMOND
    return materials, tunnels


def _place_creatures(
    world: engine.World,
    player: objects.Player,
    uniform: _UniformDraws,
    materials: np.ndarray,
    tunnels: np.ndarray,
    distance: np.ndarray,
) -> None:
    """Crafter's ``_set_object`` for every cell: cows, zombies and skeletons, in crafter's order."""
    grass = materials == GRASS
    walkable = grass | (materials == PATH) | (materials == SAND)
    cow_ground = grass & (distance > 3)
    zombie_ground = distance > 10
    skeleton_ground = (materials == PATH) & tunnels
    cells = np.nonzero(walkable & (cow_ground | zombie_ground | skeleton_ground))
    columns = (cow_ground, zombie_ground, skeleton_ground)
    for cell_x, cell_y, cow, zombie, skeleton in zip(
        *(c.tolist() for c in cells), *(mask[cells].tolist() for mask in columns), strict=True
    ):
        if cow and uniform() > 0.985:
            world.add(objects.Cow(world, (cell_x, cell_y)))
        elif zombie and uniform() > 0.993:
            world.add(objects.Zombie(world, (cell_x, cell_y), player))
        elif skeleton and uniform() > 0.95:
            world.add(objects.Skeleton(world, (cell_x, cell_y), player))
