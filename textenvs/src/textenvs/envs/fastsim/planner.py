"""A wavefront planner over the pixel map: the cost-to-goal of every free pixel and the way down it."""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass

import numpy as np

from textenvs.envs.fastsim.kernels import jit
from textenvs.envs.fastsim.simulator import World

_NEIGHBOURS = tuple((di, dj) for dj in (-1, 0, 1) for di in (-1, 0, 1) if di or dj)
#: Pixels closer than this to a wall cost extra, so paths keep to the middle of corridors.
COMFORT_CLEARANCE_PX = 6.0
WALL_PENALTY = 1.0


@dataclass(frozen=True)
class CostField:
    """``cost[j, i]``: path cost from pixel (i, j) to the goal (inf on walls); ``next_pixel[j, i]``: the
    flat index of the neighbour one step down the field (itself at the goal)."""

    cost: np.ndarray
    next_pixel: np.ndarray
    goal_pixel: tuple[int, int]
    room: np.ndarray  # clearance (pixels) of every pixel, capped

    def line_is_clear(self, start: tuple[float, float], end: tuple[float, float], min_room: float) -> bool:
        """Whether every pixel on the segment (pixel coordinates) has at least ``min_room`` clearance."""
        length = max(abs(end[0] - start[0]), abs(end[1] - start[1]))
        samples = np.linspace(0.0, 1.0, int(length) + 2)
        i = (start[0] + samples * (end[0] - start[0])).astype(int)
        j = (start[1] + samples * (end[1] - start[1])).astype(int)
        size = self.room.shape[0]
        inside = (i >= 0) & (j >= 0) & (i < size) & (j < size)
        return bool(inside.all() and (self.room[j, i] >= min_room).all())

    def path_cost(self, i: int, j: int) -> float:
        size = self.cost.shape[0]
        return float(self.cost[min(max(j, 0), size - 1), min(max(i, 0), size - 1)])

    def lookahead(self, i: int, j: int, hops: int) -> tuple[int, int]:
        """The pixel ``hops`` steps down the field from (i, j)."""
        size = self.cost.shape[0]
        index = min(max(j, 0), size - 1) * size + min(max(i, 0), size - 1)
        for _ in range(hops):
            index = int(self.next_pixel.flat[index])
        return index % size, index // size


@jit
def _dijkstra(step_cost, size, sources):
    """Octile shortest-path costs on the ``size`` x ``size`` grid from ``sources`` (flat indices, cost 0);
    entering pixel p costs ``step_cost[p]`` times the step length (inf = impassable)."""
    cost = np.full(size * size, np.inf)
    heap = [(0.0, 0)]  # a typed list for numba, emptied at once
    heap.pop()
    for source in sources:
        cost[source] = 0.0
        heap.append((0.0, source))
    heapq.heapify(heap)
    while heap:
        current, index = heapq.heappop(heap)
        if current > cost[index]:
            continue
        i = index % size
        j = index // size
        for dj in range(-1, 2):
            for di in range(-1, 2):
                ni = i + di
                nj = j + dj
                if (di == 0 and dj == 0) or ni < 0 or nj < 0 or ni >= size or nj >= size:
                    continue
                neighbour = nj * size + ni
                candidate = current + step_cost[neighbour] * (1.4142135623730951 if di and dj else 1.0)
                if candidate < cost[neighbour]:
                    cost[neighbour] = candidate
                    heapq.heappush(heap, (candidate, neighbour))
    return cost


def clearance(obstacles: np.ndarray, cap: float = COMFORT_CLEARANCE_PX) -> np.ndarray:
    """Euclidean distance (pixels) from every pixel to the nearest wall pixel, capped at ``cap``."""
    size = obstacles.shape[0]
    reach = int(np.ceil(cap))
    padded = np.pad(obstacles, reach, constant_values=True)
    room = np.full(obstacles.shape, float(cap))
    for dj in range(-reach, reach + 1):
        for di in range(-reach, reach + 1):
            distance = float(np.hypot(di, dj))
            if distance < cap:
                window = padded[reach + dj : reach + dj + size, reach + di : reach + di + size]
                room = np.where(window, np.minimum(room, distance), room)
    return room


@functools.lru_cache(maxsize=4)
def cost_field(world: World) -> CostField:
    """The wavefront field of ``world``'s goal (cached per world)."""
    obstacles = world.obstacles
    gi, gj = (world.real_to_pixel(v) for v in world.layout.goal)
    room = clearance(obstacles)
    step_cost = 1.0 + WALL_PENALTY * np.clip(COMFORT_CLEARANCE_PX - room, 0.0, None)
    step_cost[obstacles] = np.inf
    size = obstacles.shape[0]
    cost = _dijkstra(step_cost.ravel(), size, np.array([gj * size + gi])).reshape(size, size)
    best_cost = cost.copy()
    own_index = np.arange(size * size).reshape(size, size)
    best_index = own_index
    padded = np.pad(cost, 1, constant_values=np.inf)
    for di, dj in _NEIGHBOURS:
        neighbour = padded[1 + dj : 1 + dj + size, 1 + di : 1 + di + size]
        better = neighbour < best_cost
        best_cost = np.where(better, neighbour, best_cost)
        best_index = np.where(better, own_index + dj * size + di, best_index)
    return CostField(cost, best_index, (gi, gj), room)
