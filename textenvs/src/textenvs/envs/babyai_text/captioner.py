"""GLAM's BabyAI-Text captioner (``gen_graph``, English), rewritten from its described behaviour.

The caption of a state is a list of sentences built from the agent's egocentric view (minigrid's
``gen_obs_grid`` encoded with its visibility mask), in this order:

1. ``"You carry a {color} {type}"`` when the agent carries an object;
2. walls straight ahead, then to the left, then to the right: ``"You see a wall {n} step(s) forward"``,
   only when no object stands between the agent and the wall (unseen and empty cells are skipped);
3. every visible cell holding something other than unseen/empty/wall, column by column (left to
   right), each column from its farthest cell to the agent's row: ``"You see a {color} {type} {dx}
   step(s) left|right and {dy} step(s) forward"``, dropping an axis whose offset is 0; doors read
   ``"You see a {open|closed|locked} {color} door ..."`` (GLAM writes "a open" too).

``cached_caption`` is ``caption_view`` behind a per-process cache keyed by the view's bytes and the carried
object: a random agent sees the same view again about three steps in four (turning in place, bumping into
walls), and a hit costs a tenth of a caption.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT, OBJECT_TO_IDX

_UNSEEN = OBJECT_TO_IDX["unseen"]
_EMPTY = OBJECT_TO_IDX["empty"]
_WALL = OBJECT_TO_IDX["wall"]
_DOOR = OBJECT_TO_IDX["door"]
_DOOR_STATES = {0: "open", 1: "closed", 2: "locked"}
#: The text observation joins the caption's sentences with this.
SEPARATOR = "\n"


def caption(env: Any) -> list[str]:
    """GLAM's descriptions of the current state of a minigrid env (or of a BabyAI-Text env's level)."""
    env = env.unwrapped
    env = getattr(env, "level", env)
    grid, vis_mask = env.gen_obs_grid()
    return caption_view(grid.encode(vis_mask), env.carrying)


def caption_view(view: np.ndarray, carrying: Any = None) -> list[str]:
    """GLAM's descriptions of an encoded egocentric view (``(size, size, 3)``, agent at bottom centre).

    ``view`` is what minigrid's ``gen_obs()["image"]`` holds; ``carrying`` is the carried ``WorldObj``.
    """
    return _caption_cells(_cells(view), view.shape[0], carrying)


#: Views ``cached_caption`` remembers (about 1 KiB each), shared by the envs of a process; the oldest goes first.
CACHE_SIZE = 8192
_CACHE: dict[tuple[bytes, int, tuple[str, str] | None], tuple[tuple[str, ...], str]] = {}


def cached_caption(view: np.ndarray, carrying: Any = None) -> tuple[list[str], str]:
    """``caption_view(view, carrying)`` and its sentences joined by ``SEPARATOR``, from the cache when this
    view (same cells, same carried object) was captioned before.

    The list is a fresh copy each call (callers may change it); the joined text is the very same string
    object on a hit, which lets ``TextEnv`` skip re-checking an unchanged text.
    """
    cells, size = _cells(view), view.shape[0]
    key = (cells, size, None if carrying is None else (carrying.color, carrying.type))
    entry = _CACHE.get(key)
    if entry is None:
        sentences = _caption_cells(cells, size, carrying)
        entry = _CACHE[key] = (tuple(sentences), SEPARATOR.join(sentences))
        if len(_CACHE) > CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)), None)
    return list(entry[0]), entry[1]


def _cells(view: np.ndarray) -> bytes:
    """The view's bytes: cell (i, j) holds (type, color, state) at ``3 * (i * size + j)``."""
    return np.asarray(view, dtype=np.uint8).tobytes()


_SEE_THROUGH = bytes((_UNSEEN, _EMPTY))
_WALL_KIND = bytes((_WALL,))
#: ``bytes.translate`` table: 1 for the kinds captioned as objects (anything but unseen, empty, wall), else 0.
_IS_OBJECT = bytes(int(kind > _WALL) for kind in range(256))


def _caption_cells(cells: bytes, size: int, carrying: Any) -> list[str]:
    kinds = cells[0::3]
    agent_x, agent_y = size // 2, size - 1
    agent = agent_x * size + agent_y
    descriptions = [f"You carry a {carrying.color} {carrying.type}"] if carrying is not None else []
    lines = (
        (kinds[agent - 1 : agent_x * size - 1 : -1], "forward"),
        (kinds[agent - size :: -size], "left"),
        (kinds[agent + size :: size], "right"),
    )
    for line, direction in lines:
        steps = _wall_distance(line)
        if steps:
            descriptions.append(_wall_sentence(steps, direction))
    # Jumping from object to object with bytes.find (in C) instead of visiting all size * size cells.
    objects = kinds.translate(_IS_OBJECT)
    index = objects.find(1)
    while index >= 0:
        if index != agent:
            descriptions.append(_object_at(cells[3 * index : 3 * index + 3], index, size))
        index = objects.find(1, index + 1)
    return descriptions


def _wall_distance(kinds: bytes) -> int:
    """Steps to the first wall along a line of cells, or 0 when another object comes first or none."""
    rest = kinds.lstrip(_SEE_THROUGH)
    return len(kinds) - len(rest) + 1 if rest[:1] == _WALL_KIND else 0


def _steps(n: int, direction: str) -> str:
    return f"{n} step{'s' if n > 1 else ''} {direction}"


@functools.cache
def _wall_sentence(steps: int, direction: str) -> str:
    return f"You see a wall {_steps(steps, direction)}"


@functools.cache
def _object_at(cell: bytes, index: int, size: int) -> str:
    """The sentence of the object whose (type, color, state) is ``cell``, in cell ``index`` of the view."""
    i, j = divmod(index, size)
    kind, color, state = cell
    return _object_sentence(kind, color, state, i - size // 2, size - 1 - j)


@functools.cache
def _object_sentence(kind: int, color: int, state: int, right: int, forward: int) -> str:
    """One visible object, ``right`` cells to the agent's right (negative: left), ``forward`` ahead."""
    name = f"{IDX_TO_COLOR[color]} {IDX_TO_OBJECT[kind]}"
    if kind == _DOOR:
        name = f"{_DOOR_STATES[state]} {name}"
    if right == 0:
        where = _steps(forward, "forward")
    else:
        where = _steps(abs(right), "right" if right > 0 else "left")
        if forward:
            where += f" and {_steps(forward, 'forward')}"
    return f"You see a {name} {where}"


@functools.cache
def max_caption_length(view_size: int, separator: str) -> int:
    """An upper bound on ``separator.join(caption)`` for a ``view_size`` view: a carried object, three
    walls and an object in every other cell, each as long as the longest sentence of its kind."""
    half, depth = view_size // 2, view_size - 1
    carry = max(len(f"You carry a {c} {t}") for c in IDX_TO_COLOR.values() for t in IDX_TO_OBJECT.values())
    wall = len(_wall_sentence(max(half, depth), "forward"))
    kinds = [k for k in IDX_TO_OBJECT if k > _WALL]
    sentence = max(
        len(_object_sentence(kind, color, state, right, depth))
        for kind in kinds
        for color in IDX_TO_COLOR
        for state in _DOOR_STATES
        for right in (-half, half)
    )
    count = 1 + 3 + view_size * view_size - 1
    return carry + 3 * wall + (count - 4) * sentence + (count - 1) * len(separator)
