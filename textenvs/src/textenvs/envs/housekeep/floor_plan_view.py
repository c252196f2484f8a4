"""The labelled floor plan ``render()`` returns: named rooms, receptacles as labelled boxes, objects as
named markers, the robots with their heading and what they hold, and a legend.

It shows the whole house (objects no robot has found yet are rings), unlike the ``image`` observation,
which shows one robot's knowledge. Labels are placed greedily in a fixed order (rooms, robots, objects,
receptacles) at the first spot around their marker that covers no earlier label or marker; a label with no
free spot is left out (some receptacle names in crowded kitchens), so a crowded plan stays legible. The
same world gives the same image.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from textenvs.envs.housekeep.renderer import (
    CORRECT_RGB,
    MISPLACED_RGB,
    RECEPTACLE_RGB,
    ROBOT_RGB,
    ROOM_RGB,
    PlanGeometry,
    Projection,
    object_color,
    robot_slots,
    side_by_side,
)
from textenvs.envs.housekeep.world import HELD, World

VIEW_HEIGHT = 768
VIEW_WIDTH = 1024
MAP_SIZE = VIEW_HEIGHT  # the plan fills a square on the left; the legend is the panel right of it
_PAD = 16
RECEPTACLE_HALF = (7, 5)  # half width, half height of a receptacle box, pixels
RECEPTACLE_FILL = (205, 180, 140)
OBJECT_RADIUS = 6
ROBOT_RADIUS = 10
ROBOT_STEP = 2 * ROBOT_RADIUS + 4  # see ``renderer.robot_slots``

_BACKGROUND = (60, 60, 60)
_PANEL = (250, 250, 250)
_UNVISITED = (185, 185, 185)
_TEXT = (20, 20, 20)
_MUTED = (90, 90, 90)
_WHITE = (255, 255, 255)
_OBJECT_LINE = 34  # legend pixels per object
_Box = tuple[float, float, float, float]


@functools.lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _color(rgb: np.ndarray) -> tuple[int, int, int]:
    return tuple(int(v) for v in rgb)


def _overlaps(a: _Box, b: _Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@functools.lru_cache(maxsize=4096)
def _label_sprite(text: str, size: int, fill: tuple[int, int, int]) -> Image.Image:
    """``text`` in ``fill`` with a white halo on a transparent background, cut to its box. Labels repeat
    frame after frame and drawing haloed text is most of a frame's time, so each is drawn once."""
    font = _font(size)
    x0, y0, x1, y1 = font.getbbox(text, stroke_width=2, anchor="lt")
    sprite = Image.new("RGBA", (x1 - x0, y1 - y0), (*_WHITE, 0))
    ImageDraw.Draw(sprite).text((-x0, -y0), text, font=font, anchor="lt", fill=fill, stroke_width=2, stroke_fill=_WHITE)
    return sprite


class _Labels:
    """Text placed where it covers no earlier label or reserved marker, inside the map."""

    def __init__(self, image: Image.Image):
        self.image = image
        self.taken: list[_Box] = []

    def reserve(self, box: _Box) -> None:
        self.taken.append(box)

    def place(
        self,
        text: str,
        size: int,
        candidates: Iterable[tuple[tuple[float, float], str]],
        fill: tuple[int, int, int] = _TEXT,
        leader_from: _Box | None = None,
    ) -> bool:
        """Draw ``text`` at the first free candidate, a point and an anchor (``"mt"``: the middle of the
        label's top edge there, as PIL's anchors but on the label's box), with a line to it from the disc
        ``leader_from`` when given; False when no candidate is free."""
        sprite = _label_sprite(text, size, fill)
        width, height = sprite.size
        for (x, y), anchor in candidates:
            left = round(x - width * "lmr".index(anchor[0]) / 2)
            top = round(y - height * "tmb".index(anchor[1]) / 2)
            box = (left, top, left + width, top + height)
            inside = left >= 0 and top >= 0 and box[2] < MAP_SIZE and box[3] < MAP_SIZE
            if inside and not any(_overlaps(box, t) for t in self.taken):
                if leader_from is not None:
                    ImageDraw.Draw(self.image).line((*_edge_towards(leader_from, (x, y)), x, y), fill=fill, width=1)
                self.image.paste(sprite, (left, top), sprite)
                self.taken.append(box)
                return True
        return False


def _around(box: _Box, gap: float = 2) -> list[tuple[tuple[float, float], str]]:
    """Label candidates around a marker box: below, above, right, left, then the four corners outside it."""
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return [
        ((cx, y1 + gap), "mt"),
        ((cx, y0 - gap), "mb"),
        ((x1 + gap, cy), "lm"),
        ((x0 - gap, cy), "rm"),
        ((x1, y1 + gap), "lt"),
        ((x0, y1 + gap), "rt"),
        ((x1, y0 - gap), "lb"),
        ((x0, y0 - gap), "rb"),
    ]


class LabelledFloorPlan:
    """Draws a world as a ``VIEW_HEIGHT`` x ``VIEW_WIDTH`` RGB image (see the module docstring)."""

    def __init__(self, world: World):
        self.geometry = PlanGeometry.of(world)
        self.projection = Projection(self.geometry, _PAD, _PAD, MAP_SIZE - 2 * _PAD, MAP_SIZE - 2 * _PAD)

    def point(self, xz) -> tuple[int, int]:
        """The (x, y) image point of a floor position."""
        row, col = self.projection.pixel(xz)
        return col, row

    def receptacle_box(self, world: World, rec: int) -> _Box:
        x, y = self.point(world.receptacles[rec].position)
        hw, hh = RECEPTACLE_HALF
        return x - hw, y - hh, x + hw, y + hh

    def object_centers(self, world: World) -> dict[int, tuple[int, int]]:
        """The marker centre of each object on a receptacle: right of its receptacle's box, side by side."""
        on_receptacle = [obj for obj, location in enumerate(world.location) if location != HELD]
        anchors = []
        for obj in on_receptacle:
            x, y = self.point(world.receptacles[world.location[obj]].position)
            anchors.append((x + RECEPTACLE_HALF[0] + 2 + OBJECT_RADIUS, y))
        return dict(zip(on_receptacle, side_by_side(anchors, 2 * OBJECT_RADIUS + 3), strict=True))

    def draw(self, world: World, robot_names: Sequence[str] = ("robot",)) -> np.ndarray:
        image = Image.new("RGB", (VIEW_WIDTH, VIEW_HEIGHT), _BACKGROUND)
        draw = ImageDraw.Draw(image)
        labels = _Labels(image)
        self._rooms(world, draw, labels)
        for rec in range(len(world.receptacles)):
            box = self.receptacle_box(world, rec)
            draw.rectangle(box, fill=RECEPTACLE_FILL, outline=_color(RECEPTACLE_RGB), width=2)
            labels.reserve(box)
        objects = {obj: _disc(center, OBJECT_RADIUS) for obj, center in self.object_centers(world).items()}
        for obj, box in objects.items():
            _object_marker(draw, box, world, obj)
            labels.reserve(box)
        held = self._robots(world, draw, labels, robot_names)
        for obj, box in {**held, **objects}.items():  # a held object is named first, next to its robot
            name = world.object_names[obj]
            if not labels.place(name, 13, _around(box, 3)):
                labels.place(name, 13, _around(box, 3 * OBJECT_RADIUS), leader_from=box)
        # A receptacle that holds objects is labelled first, on its left (its objects are on its right).
        holding = sorted({location for location in world.location if location != HELD})
        for rec in holding:
            around = _around(self.receptacle_box(world, rec))
            self._label_receptacle(world, labels, rec, [around[3], *around[:3], *around[4:]])
        for rec in sorted(set(range(len(world.receptacles))) - set(holding)):
            self._label_receptacle(world, labels, rec, _around(self.receptacle_box(world, rec)))
        _legend(world, draw, robot_names)
        return np.asarray(image)

    def _label_receptacle(
        self, world: World, labels: _Labels, rec: int, candidates: list[tuple[tuple[float, float], str]]
    ) -> None:
        """The receptacle's name without its room's (``bed 11`` inside ``bedroom 0``)."""
        room = world.rooms[world.receptacle_room[rec]].name
        labels.place(world.receptacles[rec].name.removeprefix(room + " "), 11, candidates, _MUTED)

    def _rooms(self, world: World, draw: ImageDraw.ImageDraw, labels: _Labels) -> None:
        boxes = []
        for room, (low, high) in enumerate(self.geometry.room_boxes):
            box = (*self.point(low), *self.point(high))
            boxes.append(box)
            visited = any(robot.visited[room] for robot in world.robots)
            fill = _color(ROOM_RGB[room % len(ROOM_RGB)]) if visited else _UNVISITED
            draw.rectangle(box, fill=fill, outline=_WHITE, width=2)
        for room, (x0, y0, x1, y1) in enumerate(boxes):
            corners = [
                ((x0 + 4, y0 + 3), "lt"),
                ((x1 - 4, y0 + 3), "rt"),
                ((x0 + 4, y1 - 3), "lb"),
                ((x1 - 4, y1 - 3), "rb"),
            ]
            labels.place(world.rooms[room].name, 16, corners)

    def _robots(
        self, world: World, draw: ImageDraw.ImageDraw, labels: _Labels, robot_names: Sequence[str]
    ) -> dict[int, _Box]:
        """Each robot, labelled, and the object it holds at its top right; returns the held objects' marker
        boxes, to be labelled with the other objects."""
        held = {}
        for name, robot, slot in zip(robot_names, world.robots, robot_slots(world), strict=True):
            x, y = self.point((robot.x, robot.z))
            box = _disc((x - slot * ROBOT_STEP, y), ROBOT_RADIUS)
            _robot_marker(draw, box, robot.heading)
            labels.reserve(box)
            if robot.holding != HELD:
                disc = _held_disc(box)
                _object_marker(draw, disc, world, robot.holding)
                labels.reserve(disc)
                held[robot.holding] = disc
            labels.place(name, 14, _around(box, 3), _color(ROBOT_RGB))
        return held


def _disc(center: tuple[float, float], radius: float) -> _Box:
    x, y = center
    return x - radius, y - radius, x + radius, y + radius


def _held_disc(robot: _Box) -> _Box:
    """Where a robot's held object is drawn: a disc centred on the top right corner of the robot's box."""
    return _disc((robot[2], robot[1]), OBJECT_RADIUS)


def _object_marker(draw: ImageDraw.ImageDraw, box: _Box, world: World, obj: int) -> None:
    found = world.location[obj] == HELD or any(robot.is_known_object[obj] for robot in world.robots)
    _disc_marker(draw, box, _color(object_color(world, obj)), found)


def _disc_marker(draw: ImageDraw.ImageDraw, box: _Box, color: tuple[int, int, int], found: bool) -> None:
    """An object: a disc in its colour, hollow (a ring) while no robot has found it."""
    if found:
        draw.ellipse(box, fill=color, outline=_WHITE, width=1)
    else:
        draw.ellipse(box, fill=_WHITE, outline=color, width=3)


def _robot_marker(draw: ImageDraw.ImageDraw, box: _Box, heading: float) -> None:
    """A blue disc with a white line from its centre in the direction it faces."""
    draw.ellipse(box, fill=_color(ROBOT_RGB), outline=_WHITE, width=2)
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    reach = ROBOT_RADIUS - 2
    draw.line((x, y, x + reach * math.cos(heading), y + reach * math.sin(heading)), fill=_WHITE, width=3)


def _legend(world: World, draw: ImageDraw.ImageDraw, robot_names: Sequence[str]) -> None:
    left = MAP_SIZE
    draw.rectangle((left, 0, VIEW_WIDTH - 1, VIEW_HEIGHT - 1), fill=_PANEL)
    x, y = left + 14, 14
    draw.text((x, y), world.scene.name, font=_font(18), fill=_TEXT)
    y += 26
    draw.text((x, y), f"{world.commands} commands, {world.steps} steps", font=_font(13), fill=_MUTED)
    y += 28
    for name, robot in zip(robot_names, world.robots, strict=True):
        held = world.object_names[robot.holding] if robot.holding != HELD else "nothing"
        draw.text((x, y), f"{name} holds {held}", font=_font(13), fill=_color(ROBOT_RGB))
        y += 20
    y += 10

    def robot_holding(box: _Box) -> None:
        robot = _centred(box, ROBOT_RADIUS)
        _robot_marker(draw, robot, 0.0)
        _disc_marker(draw, _held_disc(robot), _color(MISPLACED_RGB), True)

    entries = [
        ("room, visited", lambda b: draw.rectangle(b, fill=_color(ROOM_RGB[0]), outline=_MUTED)),
        ("room, not visited yet", lambda b: draw.rectangle(b, fill=_UNVISITED, outline=_MUTED)),
        (
            "receptacle",
            lambda b: draw.rectangle(_shrink(b, 2, 4), fill=RECEPTACLE_FILL, outline=_color(RECEPTACLE_RGB), width=2),
        ),
        ("object, correct place", lambda b: _disc_marker(draw, _centred(b, OBJECT_RADIUS), _color(CORRECT_RGB), True)),
        ("object, misplaced", lambda b: _disc_marker(draw, _centred(b, OBJECT_RADIUS), _color(MISPLACED_RGB), True)),
        (
            "object, not found yet",
            lambda b: _disc_marker(draw, _centred(b, OBJECT_RADIUS), _color(MISPLACED_RGB), False),
        ),
        ("robot, facing right", lambda b: _robot_marker(draw, _centred(b, ROBOT_RADIUS), 0.0)),
        ("robot holding an object", robot_holding),
    ]
    for text, swatch in entries:
        swatch((x, y, x + 22, y + 22))
        draw.text((x + 32, y + 11), text, font=_font(13), fill=_TEXT, anchor="lm")
        y += 30
    y += 10
    draw.text((x, y), "Objects", font=_font(15), fill=_TEXT)
    y += 24
    for obj, name in enumerate(world.object_names):
        if y + 2 * _OBJECT_LINE > VIEW_HEIGHT:
            draw.text((x, y), f"... and {len(world.object_names) - obj} more", font=_font(12), fill=_MUTED)
            break
        location = world.location[obj]
        where = world.receptacles[location].name if location != HELD else f"held by {robot_names[world.holder(obj)]}"
        _object_marker(draw, _disc((x + 6, y + 7), 5), world, obj)
        draw.text((x + 18, y), name, font=_font(12), fill=_TEXT)
        draw.text((x + 18, y + 15), where, font=_font(10), fill=_MUTED)
        y += _OBJECT_LINE


def _edge_towards(disc: _Box, point: tuple[float, float]) -> tuple[float, float]:
    """The point of a disc's rim that faces ``point``."""
    (cx, cy), radius = _centre(disc), (disc[2] - disc[0]) / 2
    distance = math.hypot(point[0] - cx, point[1] - cy) or 1.0
    return cx + radius * (point[0] - cx) / distance, cy + radius * (point[1] - cy) / distance


def _centre(box: _Box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _centred(box: _Box, radius: float) -> _Box:
    return _disc(_centre(box), radius)


def _shrink(box: _Box, dx: float, dy: float) -> _Box:
    return box[0] + dx, box[1] + dy, box[2] - dx, box[3] - dy
