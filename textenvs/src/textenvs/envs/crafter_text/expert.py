"""A scripted Crafter expert with privileged access to the world (map, objects, inventory, vitals).

Every step it picks the most urgent goal: fight an adjacent zombie or skeleton; a single task's water or
cow; finish sealing its shelter and sleep; drink, eat; then the next step up the tech tree (wood, table,
wood pickaxe and sword, sapling, stone, stone tools, furnace, coal, iron, iron tools, diamond). Goals that
need a place are reached with Dijkstra over the map (walking costs 1, mining through stone or ore with the
right pickaxe costs 2; lava, water, trees and creatures are avoided), replanned every step.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from crafter import constants, objects

if TYPE_CHECKING:
    from textenvs.envs.crafter_text.env import CrafterTextEnv

_DIRECTIONS = {(-1, 0): "Move West", (1, 0): "Move East", (0, -1): "Move North", (0, 1): "Move South"}
_WALKABLE = ("grass", "sand", "path")
#: Material -> the tool that mines it (and so lets the planner walk through it).
_MINEABLE = {"stone": "wood_pickaxe", "coal": "wood_pickaxe", "iron": "stone_pickaxe", "diamond": "iron_pickaxe"}
#: Below these the expert drinks, eats, or goes to sleep.
_THIRSTY, _HUNGRY, _TIRED = 5, 5, 3
#: Daylight below which the expert shelters for the night (zombies spawn in the dark).
_NIGHT = 0.35
#: Stone the expert keeps topped up once it has a pickaxe: crafting uses some, a 2x2 shelter in the open 8.
_STONE_RESERVE = 9
#: How far (Manhattan) a table or furnace may be to count as "ours" rather than placing a new one.
_TABLE_REACH = 12


@dataclass
class _Map:
    """One step's view of the world as boolean masks over the 64x64 map."""

    material: np.ndarray
    ids: dict[str, int]
    occupied: np.ndarray

    def is_(self, *names: str) -> np.ndarray:
        return np.isin(self.material, [self.ids[n] for n in names if n in self.ids])


def _shift(mask: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """``out[x, y] = mask[x + dx, y + dy]`` (False outside the map)."""
    out = np.zeros_like(mask)
    w, h = mask.shape
    out[max(-dx, 0) : w - max(dx, 0), max(-dy, 0) : h - max(dy, 0)] = mask[
        max(dx, 0) : w + min(dx, 0), max(dy, 0) : h + min(dy, 0)
    ]
    return out


def _ahead(cell: tuple[int, int], direction: tuple[int, int]) -> tuple[int, int]:
    return cell[0] + direction[0], cell[1] + direction[1]


def _side_cells(sides: set[tuple[tuple[int, int], tuple[int, int]]]) -> set[tuple[int, int]]:
    """The distinct cells that walling ``sides`` fills."""
    return {_ahead(c, d) for c, d in sides}


def _near(mask: np.ndarray) -> np.ndarray:
    """Cells whose 3x3 neighbourhood (crafter's "nearby" for crafting) holds a cell of ``mask``."""
    out = np.zeros_like(mask)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            out |= _shift(mask, dx, dy)
    return out


class CrafterExpert:
    """The scripted expert of ``CrafterTextEnv`` (create it with ``env.unwrapped.expert()``)."""

    def __init__(self, env: CrafterTextEnv):
        self.env = env
        self._shelter: list[tuple[int, int]] | None = None
        self._plant: tuple[int, int] | None = None

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self._shelter = None
        self._plant = None

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        command = self._choose()
        if self.env.action_mode == "discrete":
            return self.env.discrete_commands().index(command)
        return command

    # ----------------------------------------------------------------- the decision
    @property
    def _player(self) -> objects.Player:
        return self.env.game.player

    def _choose(self) -> str:
        player = self._player
        inv = player.inventory
        if player.sleeping:
            return "Noop"
        grid = self._snapshot()
        fight = self._fight()
        if fight:
            return fight
        task = self._task_step(grid)
        if task:
            return task
        if self._shelter is not None or self._wants_shelter():
            shelter = self._take_shelter(grid)
            if shelter:
                return shelter
        if inv["drink"] <= _THIRSTY or (inv["drink"] < 9 and self._facing_material() == "water"):
            step = self._interact(grid, grid.is_("water"), "Do")
            if step:
                return step
        if inv["food"] <= _HUNGRY:
            step = self._interact(grid, self._creatures(grid, objects.Cow), "Do")
            if step:
                return step
        if inv["energy"] <= 1:
            return "Sleep"
        return self._progress(grid) or self._wander(grid)

    def _task_step(self, grid: _Map) -> str | None:
        """Go straight for a single task's drink or cow (the table and pickaxe come first anyway)."""
        task = self.env.task
        if task is None or task.achievement not in ("collect_drink", "eat_cow"):
            return None
        target = grid.is_("water") if task.achievement == "collect_drink" else self._creatures(grid, objects.Cow)
        return self._interact(grid, target, "Do")

    def _wants_shelter(self) -> bool:
        return self._player.inventory["energy"] <= _TIRED or self.env.game.world.daylight < _NIGHT

    # ----------------------------------------------------------------- goals
    def _progress(self, grid: _Map) -> str | None:
        """The next step up the tech tree (or toward an achievement not yet unlocked)."""
        inv = self._player.inventory
        done = self._player.achievements
        if done["eat_plant"] == 0 and self._plant is not None:
            step = self._eat_plant(grid)
            if step:
                return step
        if done["place_table"] == 0:
            return self._collect(grid, "wood", constants.place["table"]["uses"]["wood"]) or self._place_table(grid)
        for tool in ("wood_pickaxe", "wood_sword"):
            if inv[tool] == 0:
                return self._craft(grid, tool)
        if inv["sapling"] == 0 and done["collect_sapling"] == 0:
            return self._interact(grid, grid.is_("grass") & ~grid.occupied, "Do")
        if inv["sapling"] > 0 and done["place_plant"] == 0:
            return self._place(grid, "plant", np.ones_like(grid.occupied))
        if inv["stone"] < _STONE_RESERVE:
            return self._collect(grid, "stone", _STONE_RESERVE)
        if done["place_stone"] == 0:
            return self._place(grid, "stone", np.ones_like(grid.occupied))
        for tool in ("stone_pickaxe", "stone_sword"):
            if inv[tool] == 0:
                return self._craft(grid, tool)
        for tool in ("iron_pickaxe", "iron_sword"):
            if inv[tool] == 0:
                return self._craft(grid, tool)
        if inv["diamond"] == 0:
            return self._interact(grid, grid.is_("diamond"), "Do")
        if inv["food"] < 9:
            return self._interact(grid, self._creatures(grid, objects.Cow), "Do")
        return self._interact(grid, self._creatures(grid, (objects.Zombie, objects.Skeleton)), "Do")

    def _collect(self, grid: _Map, item: str, amount: int) -> str | None:
        """A step toward holding ``amount`` of ``item`` (None when it is held already)."""
        if self._player.inventory[item] >= amount:
            return None
        return self._interact(grid, grid.is_("tree" if item == "wood" else item), "Do") or self._wander(grid)

    def _craft(self, grid: _Map, tool: str) -> str | None:
        """Gather what ``tool`` uses, get next to its stations (placing them if none is near), make it."""
        recipe = constants.make[tool]
        near_table = self._station_cells(grid, ("table",))
        for item, amount in recipe["uses"].items():
            if item == "wood" and not near_table.any():
                amount += constants.place["table"]["uses"]["wood"]  # a new table is needed too
            step = self._collect(grid, item, amount)
            if step:
                return step
        stand = self._station_cells(grid, tuple(recipe["nearby"]))
        if not stand.any():
            if not near_table.any():
                return self._place_table(grid)
            furnace_stone = constants.place["furnace"]["uses"]["stone"]
            return self._collect(grid, "stone", furnace_stone) or self._place(grid, "furnace", near_table)
        if stand[tuple(self._player.pos)]:
            return "Make " + tool.replace("_", " ").title()
        return self._go(grid, stand)

    def _station_cells(self, grid: _Map, stations: tuple[str, ...]) -> np.ndarray:
        """Cells within reach of the player from which every one of ``stations`` is "nearby"."""
        cells = self._within(np.ones_like(grid.occupied), _TABLE_REACH)
        for station in stations:
            cells &= _near(grid.is_(station))
        return cells

    def _place_table(self, grid: _Map) -> str | None:
        return self._place(grid, "table", np.ones_like(grid.occupied))

    def _eat_plant(self, grid: _Map) -> str | None:
        assert self._plant is not None
        plant = self.env.game.world[self._plant][1]
        if not isinstance(plant, objects.Plant):
            self._plant = None
            return None
        if not plant.ripe:
            return None
        target = np.zeros_like(grid.occupied)
        target[self._plant] = True
        return self._interact(grid, target, "Do")

    # ----------------------------------------------------------------- fighting and shelter
    def _fight(self) -> str | None:
        """Face and hit an adjacent zombie or skeleton; wall off a zombie two cells ahead when hurt."""
        px, py = (int(v) for v in self._player.pos)
        for (dx, dy), move in _DIRECTIONS.items():
            obj = self.env.game.world[(px + dx, py + dy)][1]
            if isinstance(obj, (objects.Zombie, objects.Skeleton)):
                return "Do" if tuple(self._player.facing) == (dx, dy) else move
        fx, fy = self._player.facing
        ahead = self.env.game.world[(px + 2 * fx, py + 2 * fy)][1]
        facing_material, facing_obj = self.env.game.world[(px + fx, py + fy)]
        hurt = self._player.health <= 5
        walled = facing_obj is None and facing_material in _WALKABLE and self._player.inventory["stone"] > 0
        if hurt and walled and isinstance(ahead, objects.Zombie):
            return "Place Stone"
        return None

    def _take_shelter(self, grid: _Map) -> str | None:
        """Wall in a pocket of free cells around the player with stone, then sleep in it."""
        player = self._player
        here = (int(player.pos[0]), int(player.pos[1]))
        facing = (int(player.facing[0]), int(player.facing[1]))
        if self._shelter is not None and here not in self._shelter:
            self._shelter = None
        if self._shelter is None:
            self._shelter = self._choose_shelter(grid, here, facing)
            if self._shelter is None:
                return None
        sides = self._open_sides(grid, self._shelter)
        if not sides:
            if player.inventory["energy"] < constants.items["energy"]["max"]:
                return "Sleep"
            if self._wants_shelter():
                return "Noop"  # awake, walled in, waiting for the day
            self._shelter = None
            return None
        plan = self._seal_plan(self._shelter, here, facing, sides)
        if plan is None or player.inventory["stone"] < len(_side_cells(sides)):
            self._shelter = None
            return None
        if plan == "Place Stone" and self.env.game.world[_ahead(here, facing)][1] is not None:
            return "Do"  # a creature stands where the wall goes
        return plan

    def _choose_shelter(
        self, grid: _Map, here: tuple[int, int], facing: tuple[int, int]
    ) -> list[tuple[int, int]] | None:
        """The pocket (1 cell, 2 cells, or a 2x2 square with the player) that takes the fewest stones."""
        x, y = here
        candidates = [[here]] + [[here, (x + dx, y + dy)] for dx, dy in _DIRECTIONS]
        candidates += [[(x + i, y + j) for i in (0, sx) for j in (0, sy)] for sx in (-1, 1) for sy in (-1, 1)]
        free = self._passable(grid)
        best: tuple[int, list[tuple[int, int]]] | None = None
        for cells in candidates:
            if not all(self._inside(c) and (c == here or free[c]) for c in cells):
                continue
            sides = self._open_sides(grid, cells)
            walls = len(_side_cells(sides))
            if walls > self._player.inventory["stone"] or (best is not None and walls >= best[0]):
                continue
            if sides and self._seal_plan(cells, here, facing, sides) is None:
                continue
            best = (walls, cells)
        return best[1] if best else None

    def _open_sides(self, grid: _Map, cells: list[tuple[int, int]]) -> set[tuple[tuple[int, int], tuple[int, int]]]:
        """``(cell, direction)`` pairs whose neighbour outside the pocket a creature could walk into."""
        walkable = grid.is_(*_WALKABLE)
        sides = set()
        for c in cells:
            for d in _DIRECTIONS:
                n = _ahead(c, d)
                if n not in cells and self._inside(n) and walkable[n]:
                    sides.add((c, d))
        return sides

    def _seal_plan(
        self,
        cells: list[tuple[int, int]],
        here: tuple[int, int],
        facing: tuple[int, int],
        sides: set[tuple[tuple[int, int], tuple[int, int]]],
    ) -> str | None:
        """The first command of a walk inside the pocket that walls every open side; None if impossible.

        Inside the pocket, moving toward a pocket cell walks there and toward a blocked cell only turns;
        a wall can only be placed on the cell faced, so an open side is reached by walking into its cell
        from the opposite neighbour, or by turning once it is the only way left.
        """
        state, remaining, first = (here, facing), set(sides), None
        while remaining:
            found = self._nearest_side(cells, state, remaining)
            if found is None:
                return None
            state, move = found
            first = first or move or "Place Stone"
            wall = _ahead(*state)
            remaining = {(c, d) for c, d in remaining if _ahead(c, d) != wall}
        return first

    def _nearest_side(
        self,
        cells: list[tuple[int, int]],
        start: tuple[tuple[int, int], tuple[int, int]],
        sides: set[tuple[tuple[int, int], tuple[int, int]]],
    ) -> tuple[tuple[tuple[int, int], tuple[int, int]], str | None] | None:
        """Breadth-first over (cell, facing) inside the pocket to a state facing an open side."""
        if start in sides:
            return start, None
        first: dict[tuple[tuple[int, int], tuple[int, int]], str] = {}
        frontier = [start]
        while frontier:
            following = []
            for pos, face in frontier:
                for d, move in _DIRECTIONS.items():
                    n = _ahead(pos, d)
                    if n in cells:
                        state = (n, d)
                    elif (pos, d) in sides or not self._inside(n):
                        continue
                    else:
                        state = (pos, d)
                    if state in first or state == start:
                        continue
                    first[state] = first.get((pos, face), move)
                    if state in sides:
                        return state, first[state]
                    following.append(state)
            frontier = following
        return None

    # ----------------------------------------------------------------- acting on places
    def _interact(self, grid: _Map, target: np.ndarray, action: str) -> str | None:
        """Face a cell of ``target`` and ``action`` it; None when no target cell can be reached."""
        return self._face_and(grid, target, np.ones_like(target), action)

    def _place(self, grid: _Map, item: str, stand: np.ndarray) -> str | None:
        info = constants.place[item]
        target = grid.is_(*info["where"]) & ~grid.occupied & ~grid.is_("lava")
        command = "Place " + ("Table" if item == "table" else item.title())
        step = self._face_and(grid, target, stand, command)
        if step == command and item == "plant":
            fx, fy = self._player.facing
            self._plant = (int(self._player.pos[0] + fx), int(self._player.pos[1] + fy))
        return step

    def _face_and(self, grid: _Map, target: np.ndarray, stand: np.ndarray, action: str) -> str | None:
        player = self._player
        px, py = (int(v) for v in player.pos)
        fx, fy = (int(v) for v in player.facing)
        if self._inside((px + fx, py + fy)) and target[px + fx, py + fy] and stand[px, py]:
            return action
        passable = self._passable(grid)
        blocked = ~(grid.is_(*_WALKABLE) & ~grid.occupied)
        for (dx, dy), move in _DIRECTIONS.items():
            n = (px + dx, py + dy)
            if self._inside(n) and target[n] and blocked[n] and stand[px, py]:
                return move  # turns without moving
        for (dx, dy), move in _DIRECTIONS.items():
            n, beyond = (px + dx, py + dy), (px + 2 * dx, py + 2 * dy)
            if self._inside(beyond) and passable[n] and stand[n] and target[beyond] and not blocked[beyond]:
                return move  # steps in, then faces the target
        turn_goal = stand & self._adjacent(target & blocked)
        walk_goal = np.zeros_like(target)
        for dx, dy in _DIRECTIONS:
            walk_goal |= _shift(passable & stand & _shift(target & ~blocked, dx, dy), dx, dy)
        return self._go(grid, (turn_goal | walk_goal) & passable)

    # ----------------------------------------------------------------- moving
    def _go(self, grid: _Map, goal: np.ndarray) -> str | None:
        """The first step of the cheapest path to a cell of ``goal``; None when none is reachable."""
        path = self._dijkstra(grid, goal)
        if path is None:
            return None
        if not path:
            return "Noop"
        return self._step_toward(grid, path[0])

    def _step_toward(self, grid: _Map, cell: tuple[int, int]) -> str:
        px, py = (int(v) for v in self._player.pos)
        d = (cell[0] - px, cell[1] - py)
        if self.env.game.world[cell][0] in _MINEABLE and tuple(self._player.facing) == d:
            return "Do"
        return _DIRECTIONS[d]

    def _passable(self, grid: _Map) -> np.ndarray:
        return grid.is_(*_WALKABLE) & ~grid.occupied

    def _dijkstra(self, grid: _Map, goal: np.ndarray) -> list[tuple[int, int]] | None:
        inv = self._player.inventory
        cost = np.where(self._passable(grid), 1, 0)
        for material, tool in _MINEABLE.items():
            if inv[tool] > 0:
                cost = np.where(grid.is_(material) & ~grid.occupied, 2, cost)
        start = (int(self._player.pos[0]), int(self._player.pos[1]))
        if goal[start]:
            return []
        w, h = goal.shape
        best = {start: 0}
        parent: dict[tuple[int, int], tuple[int, int]] = {}
        queue = [(0, start)]
        cost_list = cost.tolist()
        goal_list = goal.tolist()
        while queue:
            dist, cell = heapq.heappop(queue)
            if dist > best[cell]:
                continue
            if goal_list[cell[0]][cell[1]]:
                path = [cell]
                while path[-1] in parent and parent[path[-1]] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            for dx, dy in _DIRECTIONS:
                nx, ny = cell[0] + dx, cell[1] + dy
                if 0 <= nx < w and 0 <= ny < h and cost_list[nx][ny]:
                    nd = dist + cost_list[nx][ny]
                    if nd < best.get((nx, ny), 1 << 30):
                        best[(nx, ny)] = nd
                        parent[(nx, ny)] = cell
                        heapq.heappush(queue, (nd, (nx, ny)))
        return None

    def _wander(self, grid: _Map) -> str:
        """Walk to grass farther away to find what is missing nearby (or wait when there is none)."""
        grass = grid.is_("grass") & ~grid.occupied
        return self._go(grid, grass & ~self._within(grass, 10)) or "Noop"

    # ----------------------------------------------------------------- map helpers
    def _snapshot(self) -> _Map:
        world = self.env.game.world
        return _Map(material=world._mat_map, ids=world._mat_ids, occupied=world._obj_map > 0)

    def _creatures(self, grid: _Map, kind: type) -> np.ndarray:
        mask = np.zeros_like(grid.occupied)
        for obj in self.env.game.world.objects:
            if isinstance(obj, kind):
                mask[tuple(obj.pos)] = True
        return mask

    def _facing_material(self) -> str | None:
        px, py = self._player.pos
        fx, fy = self._player.facing
        return self.env.game.world[(px + fx, py + fy)][0]

    def _within(self, mask: np.ndarray, radius: int) -> np.ndarray:
        """Cells within Manhattan ``radius`` of the player, and ``mask`` (the player's side of the map)."""
        px, py = (int(v) for v in self._player.pos)
        xs, ys = np.indices(mask.shape)
        return mask & (np.abs(xs - px) + np.abs(ys - py) <= radius)

    def _adjacent(self, mask: np.ndarray) -> np.ndarray:
        out = np.zeros_like(mask)
        for dx, dy in _DIRECTIONS:
            out |= _shift(mask, dx, dy)
        return out

    def _inside(self, cell: tuple[int, int]) -> bool:
        w, h = self.env.game.world.area
        return 0 <= cell[0] < w and 0 <= cell[1] < h
