"""Pixels of a BabyAI level from minigrid's own renderer: the agent's view or the full grid."""

from __future__ import annotations

import numpy as np
from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel

PIXEL_VIEWS = ("agent", "full")


def grid_size_bound(level: RoomGridLevel) -> tuple[int, int]:
    """The largest (width, height) the level's grid takes over its episodes."""
    max_grid_size = getattr(level, "max_grid_size", None)
    return max_grid_size() if max_grid_size else (level.width, level.height)


def image_shape(level: RoomGridLevel, view: str, tile_size: int) -> tuple[int, int]:
    """(height, width) in pixels of every frame ``render_view`` returns for this level."""
    if view == "agent":
        side = level.agent_view_size * tile_size
        return side, side
    width, height = grid_size_bound(level)
    return height * tile_size, width * tile_size


def render_view(level: RoomGridLevel, view: str, tile_size: int) -> np.ndarray:
    """The agent's egocentric view, or the whole grid (zero-padded to ``image_shape``) with the
    agent's field of view highlighted, as minigrid draws them."""
    if view == "agent":
        return level.get_pov_render(tile_size)
    frame = level.get_full_render(True, tile_size)
    height, width = image_shape(level, view, tile_size)
    if frame.shape[:2] == (height, width):
        return frame
    padded = np.zeros((height, width, 3), dtype=np.uint8)
    padded[: frame.shape[0], : frame.shape[1]] = frame
    return padded
