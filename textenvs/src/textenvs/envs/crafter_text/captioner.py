"""Captions of a Crafter state in the styles of SmartPlay, ELLM and BALROG: pure functions of the state.

A state is a mapping with ``semantic`` (crafter's semantic map, indexed ``[x][y]``), ``player_pos``
(``(x, y)``), ``facing`` (``(dx, dy)``; y grows to the south), ``inventory`` (crafter's inventory dict),
``sleeping`` (bool) and ``action`` (crafter's name of the last action, or None right after a reset).

The three styles look at the same 9x7 local view crafter draws (9x9 view minus the 2 inventory rows):
4 cells west and east of the player, 3 north and south.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from textenvs.envs.crafter_text.constants import ID_TO_ITEM, INVENTORY_ITEMS, PLAYER_ID, VITAL_MAX, VITALS

CAPTION_STYLES = ("smartplay", "ellm", "balrog")

#: Half-extents of the local view: x - 4 .. x + 4, y - 3 .. y + 3.
VIEW_HALF_WIDTH = 4
VIEW_HALF_HEIGHT = 3

OUT_OF_MAP = "Error, you are out of the map."
SLEEPING = "You are sleeping, and will not be able take actions until energy is full."
DIED = "You died."

_SMARTPLAY_ACTION_WORDS = (
    ("do_", "interact_"),
    ("move_up", "move_north"),
    ("move_down", "move_south"),
    ("move_left", "move_west"),
    ("move_right", "move_east"),
)
_ELLM_HIDDEN = frozenset({"player", "sand", "arrow"})
_ELLM_UNTARGETED_MATERIALS = frozenset({"path", "sand", "lava"})
_ELLM_NAMES = {"table": "crafting table"}
_ELLM_ITEM_NAMES = {"sapling": "plant"}
_ELLM_FEELINGS = {"health": "hurt", "food": "hungry", "drink": "thirsty", "energy": "sleepy"}
_BALROG_UNSHOWN = frozenset({"grass", "sand", "path"})
_BALROG_EDGE_ONLY = frozenset({"water"})


def caption(state: Mapping[str, Any], style: str = "smartplay") -> str:
    """The text a ``style`` agent reads for ``state``.

    ``"smartplay"``: SmartPlay's frame description; ``"ellm"``: ELLM's non-empty caption lines joined with
    newlines; ``"balrog"``: BALROG's long-term context, a blank line, then its short-term context.
    """
    if style == "smartplay":
        return smartplay_caption(state)
    if style == "ellm":
        return "\n".join(line for line in ellm_lines(state) if line)
    if style == "balrog":
        return "\n\n".join(balrog_contexts(state))
    raise ValueError(f"caption style {style!r} is not valid; choose one of {', '.join(map(repr, CAPTION_STYLES))}")


# ---------------------------------------------------------------------------------------------- shared parts
def _semantic(state: Mapping[str, Any]) -> np.ndarray:
    semantic = np.asarray(state["semantic"])
    if semantic.ndim != 2:
        raise ValueError(f"state['semantic'] must be a 2-D map indexed [x][y], got shape {semantic.shape}")
    if semantic.size and (semantic.min() < 0 or semantic.max() >= len(ID_TO_ITEM)):
        unknown = sorted({int(i) for i in np.unique(semantic) if not 0 <= i < len(ID_TO_ITEM)})
        raise ValueError(f"state['semantic'] holds unknown ids {unknown}; valid ids are 0..{len(ID_TO_ITEM) - 1}")
    x, y = (int(v) for v in state["player_pos"])
    if not (0 <= x < semantic.shape[0] and 0 <= y < semantic.shape[1]) or semantic[x, y] != PLAYER_ID:
        raise ValueError(f"state['player_pos'] {(x, y)} does not hold the player (id {PLAYER_ID}) on the map")
    return semantic


def _player(state: Mapping[str, Any]) -> tuple[int, int, int, int]:
    x, y = (int(v) for v in state["player_pos"])
    dx, dy = (int(v) for v in state["facing"])
    return x, y, dx, dy


def _sliced_view(semantic: np.ndarray, x: int, y: int) -> np.ndarray:
    """The local view cut the way SmartPlay and BALROG cut it: a plain slice of the map.

    Near the map's edge the slice is clipped (and past the left or top edge, empty), which is why those
    captioners report that the player is out of the map there.
    """
    return semantic[x - VIEW_HALF_WIDTH : x + VIEW_HALF_WIDTH + 1, y - VIEW_HALF_HEIGHT : y + VIEW_HALF_HEIGHT + 1]


@functools.cache
def _view_cells(shape: tuple[int, int]) -> tuple[tuple[int, int, int], ...]:
    """``(Manhattan distance, dx, dy)`` of each cell of a view of ``shape``, in the view's C order."""
    cells = []
    for i in range(shape[0]):
        for j in range(shape[1]):
            dx, dy = i - VIEW_HALF_WIDTH, j - VIEW_HALF_HEIGHT
            cells.append((abs(dx) + abs(dy), dx, dy))
    return tuple(cells)


def _compass(dx: int, dy: int) -> str:
    vertical = "north" if dy < 0 else "south" if dy > 0 else ""
    horizontal = "west" if dx < 0 else "east" if dx > 0 else ""
    return "-".join(part for part in (vertical, horizontal) if part)


def _inventory_counts(inventory: Mapping[str, int]) -> list[tuple[str, int]]:
    """Inventory entries in crafter's order (then any others in the order given)."""
    known = [(name, int(inventory[name])) for name in INVENTORY_ITEMS if name in inventory]
    extra = [(name, int(n)) for name, n in inventory.items() if name not in INVENTORY_ITEMS]
    return known + extra


def _status_and_inventory(inventory: Mapping[str, int]) -> str:
    """SmartPlay's (and BALROG's short-term) vitals and inventory block."""
    missing = [v for v in VITALS if v not in inventory]
    if missing:
        raise ValueError(f"state['inventory'] lacks the vitals {missing}; it needs all of {list(VITALS)}")
    status = "\n".join(f"- {v}: {int(inventory[v])}/{VITAL_MAX}" for v in VITALS)
    items = [f"- {name}: {n}" for name, n in _inventory_counts(inventory) if name not in VITALS and n != 0]
    held = "Your inventory:\n" + "\n".join(items) if items else "You have nothing in your inventory."
    return f"Your status:\n{status}\n\n{held}"


def _condition(state: Mapping[str, Any]) -> str:
    if state["sleeping"]:
        return SLEEPING + "\n\n"
    if int(state["inventory"]["health"]) <= 0:
        return DIED + "\n\n"
    return ""


# ---------------------------------------------------------------------------------------------- SmartPlay
def smartplay_caption(state: Mapping[str, Any]) -> str:
    """SmartPlay's ``describe_frame``: last action, sleeping/dead, nearest thing of each kind, vitals, items.

    Each kind in view (in id order) is reported once, at its nearest cell by Manhattan distance (ties: the
    westmost, then northmost cell), with the compass direction; "1 steps" is SmartPlay's own wording.
    """
    semantic = _semantic(state)
    x, y, dx, dy = _player(state)
    view = _sliced_view(semantic, x, y)
    try:
        facing_name = ID_TO_ITEM[view[VIEW_HALF_WIDTH + dx, VIEW_HALF_HEIGHT + dy]]
    except IndexError:
        return OUT_OF_MAP
    nearest: dict[int, tuple[int, int, int]] = {}  # id -> (distance, dx, dy), scanning west to east
    for item_id, cell in zip(view.ravel().tolist(), _view_cells(view.shape), strict=True):
        if item_id != PLAYER_ID and (item_id not in nearest or cell[0] < nearest[item_id][0]):
            nearest[item_id] = cell
    seen = [
        f"- {ID_TO_ITEM[item_id]} {distance} steps to your {_compass(ox, oy)}"
        for item_id, (distance, ox, oy) in sorted(nearest.items())
    ]
    surroundings = "You see:\n" + "\n".join(seen) if seen else "You see nothing away from you."

    text = ""
    if state.get("action") is not None:
        action = str(state["action"])
        for old, new in _SMARTPLAY_ACTION_WORDS:
            action = action.replace(old, new)
        text += f"You took action {action}."
    text += _condition(state)
    text += f"\n\n{surroundings}\n\nYou face {facing_name} at your front.\n\n"
    text += _status_and_inventory(state["inventory"])
    return text.strip()


# ---------------------------------------------------------------------------------------------- ELLM
def ellm_lines(state: Mapping[str, Any]) -> tuple[str, str, str]:
    """ELLM's three caption lines: what it sees and targets; its inventory; how it feels ("" when nothing).

    Only cells inside the map count; names are unique and sorted, without player, sand and arrow.
    """
    semantic = _semantic(state)
    x, y, dx, dy = _player(state)
    width, height = semantic.shape
    x0, y0 = max(x - VIEW_HALF_WIDTH, 0), max(y - VIEW_HALF_HEIGHT, 0)
    view = semantic[x0 : x + VIEW_HALF_WIDTH + 1, y0 : y + VIEW_HALF_HEIGHT + 1]
    names = sorted({_ELLM_NAMES.get(ID_TO_ITEM[i], ID_TO_ITEM[i]) for i in np.unique(view) if i != 0} - _ELLM_HIDDEN)
    if len(names) == 1:
        listed = names[0]
    else:  # ELLM writes "a, and b" for two names and "you see ." for none
        listed = "".join(f"{n}, " for n in names[:-1]) + (f"and {names[-1]}" if names else "")
    sight = f"you see {listed}."
    tx, ty = x + dx, y + dy
    if 0 <= tx < width and 0 <= ty < height:
        target_id = int(semantic[tx, ty])
        target = ID_TO_ITEM[target_id]
        if target_id >= PLAYER_ID or (target_id != 0 and target not in _ELLM_UNTARGETED_MATERIALS):
            sight += f" you are targeting {target}."

    inventory = state["inventory"]
    held = [_ELLM_ITEM_NAMES.get(n, n) for n, count in _inventory_counts(inventory) if n not in VITALS and count > 0]
    items = f"you have in your inventory {', '.join(held)}." if held else ""
    low = [_ELLM_FEELINGS[v] for v in VITALS if int(inventory[v]) < VITAL_MAX]
    feelings = f"you feel {', '.join(low)}." if low else ""
    return sight, items, feelings


# ---------------------------------------------------------------------------------------------- BALROG
def balrog_contexts(state: Mapping[str, Any]) -> tuple[str, str]:
    """BALROG's ``(long_term_context, short_term_context)``.

    Long-term: sleeping/dead, then the nearest thing of each kind with precise offsets ("1 step south and
    4 steps west"), leaving out grass, sand and path, and showing water only at the edge of a body of
    water; then what the player faces ("nothing" for grass, sand, path). As in BALROG, "nearest" compares
    the first number of the offset (the north/south distance when there is one), and kinds are listed in
    the order the scan (west to east, north to south) first meets them. Short-term: vitals and items.
    """
    semantic = _semantic(state)
    x, y, dx, dy = _player(state)
    view = _sliced_view(semantic, x, y)
    tx, ty = VIEW_HALF_WIDTH + dx, VIEW_HALF_HEIGHT + dy
    # BALROG bounds-checks the target against the view's shape read as (rows, columns), i.e. with x and
    # y swapped; only a view clipped by the map's edge can tell the difference.
    facing_name = "nothing"
    if 0 <= tx < view.shape[1] and 0 <= ty < view.shape[0]:
        try:
            facing_name = ID_TO_ITEM[view[tx, ty]]
        except IndexError:
            return OUT_OF_MAP, _status_and_inventory(state["inventory"])
    facing_name = "nothing" if facing_name in _BALROG_UNSHOWN else facing_name

    edges = {name: _edge_cells(view, name).tolist() for name in _BALROG_EDGE_ONLY}
    nearest: dict[str, tuple[int, int, int]] = {}
    for i, column in enumerate(view.tolist()):
        for j, item_id in enumerate(column):
            name = ID_TO_ITEM[item_id]
            if item_id == PLAYER_ID or name in _BALROG_UNSHOWN or (name in edges and not edges[name][i][j]):
                continue
            ox, oy = i - VIEW_HALF_WIDTH, j - VIEW_HALF_HEIGHT
            rank = abs(oy) if oy else abs(ox)
            if name not in nearest or rank < nearest[name][0]:
                nearest[name] = (rank, ox, oy)
    seen = [f"- {name} {_precise_offset(ox, oy)}" for name, (_rank, ox, oy) in nearest.items()]
    surroundings = "You see:\n" + "\n".join(seen) if seen else "You see nothing away from you."
    long_term = f"{_condition(state)}\n\n{surroundings}\n\nYou face {facing_name} at your front."
    return long_term.strip(), _status_and_inventory(state["inventory"])


def _precise_offset(dx: int, dy: int) -> str:
    """BALROG's offset wording: "1 step north and 4 steps west" (north/south first)."""
    parts = []
    if dy:
        parts.append((abs(dy), "north" if dy < 0 else "south"))
    if dx:
        parts.append((abs(dx), "west" if dx < 0 else "east"))
    return " and ".join(f"{n} step{'s' if n > 1 else ''} {d}" for n, d in parts)


def _edge_cells(view: np.ndarray, name: str) -> np.ndarray:
    """Cells of kind ``name`` with a 4-neighbour inside the view that is of another kind."""
    inside = view == ID_TO_ITEM.index(name)
    other = np.zeros_like(inside)
    other[1:, :] |= ~inside[:-1, :]
    other[:-1, :] |= ~inside[1:, :]
    other[:, 1:] |= ~inside[:, :-1]
    other[:, :-1] |= ~inside[:, 1:]
    return inside & other
