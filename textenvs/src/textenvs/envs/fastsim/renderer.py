"""Top-down RGB frames: the map (and the apartment's tiles and objects), goal, robot and laser rays."""

from __future__ import annotations

import functools
import math

import numpy as np
from PIL import Image, ImageDraw

from textenvs.envs.fastsim.simulator import World

#: Image pixels per map pixel.
SCALE = 2
_TILE_RGB = {
    "red": (255, 0, 0),
    "green": (0, 255, 0),
    "blue": (0, 0, 255),
    "yellow": (255, 255, 0),
    "orange": (255, 165, 0),
    "purple": (128, 0, 128),
    "pink": (255, 192, 203),
    "gray": (128, 128, 128),
    "white": (255, 255, 255),
}
_GOAL_RGB = (0, 170, 0)
_ROBOT_RGB = (30, 60, 220)
_LASER_HIT_RGB = (220, 0, 0)
_LASER_FREE_RGB = (255, 170, 170)
_OBJECT_RGB = (90, 50, 20)


def image_shape(world: World) -> tuple[int, int]:
    return world.size * SCALE, world.size * SCALE


@functools.lru_cache(maxsize=4)
def _background(world: World) -> Image.Image:
    size = world.size
    floor = np.full((size, size, 3), 255, np.uint8)
    tiling = world.layout.tiling
    if tiling is not None:
        for row, colours in enumerate(tiling.colours):
            for column, colour in enumerate(colours):
                top, left = tiling.margin + row * tiling.size, tiling.margin + column * tiling.size
                tint = (np.asarray(_TILE_RGB[colour]) + 255 * 2) // 3  # light tints keep the robot visible
                floor[top : top + tiling.size, left : left + tiling.size] = tint
    floor[world.obstacles] = 0
    image = Image.fromarray(floor).resize((size * SCALE, size * SCALE), Image.NEAREST)
    draw = ImageDraw.Draw(image)
    for name, (ox, oy) in world.layout.objects:
        cx, cy = ox * SCALE, oy * SCALE
        draw.rectangle((cx - 4, cy - 4, cx + 4, cy + 4), fill=_OBJECT_RGB)
        draw.text((cx + 6, cy - 5), name, fill=_OBJECT_RGB)
    return image


def map_image(world: World) -> np.ndarray:
    """uint8[H, W, 3] image of the map alone (``SCALE`` image pixels a map pixel): the tiles, the walls and
    the named objects."""
    return np.asarray(_background(world))


def render_frame(world: World, pose: np.ndarray, lasers: np.ndarray) -> np.ndarray:
    """uint8[H, W, 3] frame of the robot at ``pose`` (real x, y, theta) with libfastsim's laser readings."""
    layout = world.layout
    image = _background(world).copy()
    draw = ImageDraw.Draw(image)
    to_image = float(world.fx) * SCALE
    gx, gy = (v * to_image for v in layout.goal)
    goal_r = max(layout.goal_diameter / 2 * to_image, 4.0)
    draw.ellipse((gx - goal_r, gy - goal_r, gx + goal_r, gy + goal_r), fill=_GOAL_RGB)
    x, y, theta = (float(v) for v in pose)
    rx, ry = x * to_image, y * to_image
    for angle, distance in zip(world.laser_angles, lasers, strict=True):
        hit = distance >= 0
        length = (float(distance) if hit else layout.laser_range) * to_image
        end = (rx + length * math.cos(theta + angle), ry + length * math.sin(theta + angle))
        draw.line((rx, ry, *end), fill=_LASER_HIT_RGB if hit else _LASER_FREE_RGB, width=1)
    radius = layout.robot_radius * to_image
    draw.ellipse((rx - radius, ry - radius, rx + radius, ry + radius), fill=_ROBOT_RGB)
    nose = (rx + radius * math.cos(theta), ry + radius * math.sin(theta))
    draw.line((rx, ry, *nose), fill=(255, 255, 255), width=2)
    return np.asarray(image)
