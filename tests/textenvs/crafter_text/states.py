"""Hand-built Crafter states for caption tests: a map of one material with things placed on it."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.envs.crafter_text.constants import INVENTORY_ITEMS, ITEM_TO_ID


def make_state(
    things: dict[tuple[int, int], str] | None = None,
    *,
    ground: str = "grass",
    player_pos: tuple[int, int] = (32, 32),
    facing: tuple[int, int] = (0, 1),
    inventory: dict[str, int] | None = None,
    sleeping: bool = False,
    action: str | None = None,
) -> dict[str, Any]:
    """A 64x64 map of ``ground``, the player at ``player_pos`` and ``things`` at offsets from the player."""
    semantic = np.full((64, 64), ITEM_TO_ID[ground], np.uint8)
    x, y = player_pos
    semantic[x, y] = ITEM_TO_ID["player"]
    for (dx, dy), name in (things or {}).items():
        semantic[x + dx, y + dy] = ITEM_TO_ID[name]
    full = {name: 9 if i < 4 else 0 for i, name in enumerate(INVENTORY_ITEMS)}
    return {
        "semantic": semantic,
        "player_pos": player_pos,
        "facing": facing,
        "inventory": {**full, **(inventory or {})},
        "sleeping": sleeping,
        "action": action,
    }
