"""Map coverage of an archive: the share of the reachable grid cells that hold an archived descriptor.

The map (600 x 600 real units) is cut into ``cells`` x ``cells`` squares (20: squares of 30 units, 10 map
pixels). A cell is reachable when it holds a map pixel where the robot's centre fits (no wall within its
3-pixel collision box) connected to the start through such pixels; walls and closed-off rooms do not count.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from textenvs.envs.fastsim.simulator import World


def reachable_cells(world: World, cells: int) -> np.ndarray:
    """bool[cells, cells] indexed [row (y down), column (x)]: the cells the robot can reach from the start."""
    size = world.size
    clearance = world.layout.robot_radius * float(world.fx)
    fits = world.room.reshape(size, size) > round(clearance)
    components, _ = ndimage.label(fits)
    start_x, start_y = (int(v * float(world.fx)) for v in world.layout.start[:2])
    reached = components == components[start_y, start_x]
    rows = np.arange(size) * cells // size
    grid = np.zeros((cells, cells), bool)
    ys, xs = np.nonzero(reached)
    grid[rows[ys], rows[xs]] = True
    return grid


def cells_of(bd: np.ndarray, real_size: float, cells: int) -> np.ndarray:
    """The (row, column) cell of each descriptor [n, 2] (x, y real units), int64[n, 2]."""
    index = np.floor(np.asarray(bd, np.float64) / real_size * cells).astype(np.int64)
    return np.clip(index, 0, cells - 1)[:, ::-1]


def coverage(bd: np.ndarray, reachable: np.ndarray, real_size: float) -> float:
    """The share of ``reachable`` cells holding at least one of the descriptors ``bd`` [n, 2]."""
    cells = reachable.shape[0]
    grid = np.zeros_like(reachable)
    if len(bd):
        rows, columns = cells_of(bd, real_size, cells).T
        grid[rows, columns] = True
    return float((grid & reachable).sum() / reachable.sum())
