"""Housekeep's iGibson scenes (``metadata_v2_readjusted.yaml``): rooms and receptacles with 3D positions,
and how each receptacle maps to the annotations' room|receptacle pairs."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from textenvs.data import load_yaml, read_asset
from textenvs.envs.housekeep.annotations import Annotations, all_scenes, load_annotations

_INSTANCE_SUFFIX = re.compile(r"_\d+$")


@dataclass(frozen=True)
class Receptacle:
    """One receptacle instance of a scene.

    ``key`` is Housekeep's episode key (``"bathroom_0-bathtub_14_0.urdf"``); ``name`` is LLM-Personalize's
    (``"bathroom 0 bathtub 14"``). ``pairs`` are the annotation room|receptacle indices the instance counts
    as, by Housekeep's episode builder: only pairs that name some instance of the scene exactly survive
    (``filter_annotations``), and a surviving pair ``room-receptacle`` covers every instance whose
    ``room type-category`` contains it (``match_rec_cat_to_instances``), so ``bathroom|bottom_cabinet``
    also covers a ``bottom_cabinet_no_top`` in a bathroom that has a plain bottom cabinet too.
    ``exact_pair`` is the pair with exactly the instance's room type and category (Housekeep's soft score
    and rearrange quality look that one up), or -1.
    """

    key: str
    name: str
    room: str | None  # room instance, e.g. "bathroom_0"; None for a few windows outside every room
    category: str
    position: tuple[float, float]  # (x, z) on the floor plan, metres
    pairs: tuple[int, ...]
    exact_pair: int
    kind_label: str  # room type and category, ELLM-style: "bathroom bottom cabinet"


@dataclass(frozen=True)
class Room:
    key: str  # "living_room_0"
    name: str  # "living room 0"
    kind: str  # "living_room", the annotations' room type
    center: tuple[float, float]
    area: float  # m², the floor its receptacles span (see ``floor_area``)


@dataclass(frozen=True, eq=False)
class Scene:
    name: str
    rooms: tuple[Room, ...]
    receptacles: tuple[Receptacle, ...]

    @functools.cached_property
    def receptacle_index(self) -> dict[str, int]:
        return {r.key: i for i, r in enumerate(self.receptacles)}

    @functools.cached_property
    def room_index(self) -> dict[str, int]:
        return {r.key: i for i, r in enumerate(self.rooms)}

    @functools.cached_property
    def reachable(self) -> tuple[int, ...]:
        """Indices of receptacles the robot can reach: those inside a room."""
        return tuple(i for i, r in enumerate(self.receptacles) if r.room is not None)

    def unpaired_receptacles(self) -> list[str]:
        """Keys of receptacles that match no annotation pair (never a correct or annotated place)."""
        return [r.key for r in self.receptacles if not r.pairs]

    @functools.cached_property
    def positions(self) -> np.ndarray:
        return np.array([r.position for r in self.receptacles], dtype=np.float64)


#: How far past its outermost receptacles a room's floor is taken to reach, metres (half a receptacle's depth
#: plus the strip the robot stands on).
ROOM_MARGIN_M = 1.0


def floor_area(positions: np.ndarray) -> float:
    """A room's floor area estimated from its receptacles' floor positions: their bounding box grown by
    ``ROOM_MARGIN_M`` on every side. The scene files hold no room outlines (Housekeep measures seen area on
    habitat's navmesh), so this stands in for the area the robot sees when it visits the room."""
    width, depth = positions.max(0) - positions.min(0) + 2 * ROOM_MARGIN_M
    return float(width * depth)


def room_kind(room: str) -> str:
    """``"living_room_0"`` -> ``"living_room"``."""
    return _INSTANCE_SUFFIX.sub("", room)


def display_category(category: str, annotations: Annotations) -> str:
    """The category as LLM-Personalize names it: the longest annotated receptacle type that prefixes it
    (``bottom_cabinet_no_top`` -> ``bottom cabinet``), else the category itself."""
    kinds = {pair.split("|", 1)[1] for pair in annotations.pairs}
    prefixes = [k for k in kinds if category == k or category.startswith(k + "_")]
    return max(prefixes, key=len, default=category).replace("_", " ")


def _scene_pair(meta: dict) -> str:
    room = meta.get("room")
    return f"{room_kind(room) if room else ''}|{meta['category']}"


def _receptacle(urdf: str, meta: dict, annotations: Annotations, scene_pairs: list[int]) -> Receptacle:
    room = meta.get("room")
    category = meta["category"]
    instance = urdf.removesuffix(".urdf").removeprefix(category + "_").split("_")[0]
    full = _scene_pair(meta).replace("|", "-")
    pairs = tuple(i for i in scene_pairs if annotations.pairs[i].replace("|", "-") in full)
    exact = annotations.pair_index.get(_scene_pair(meta), -1)
    label = display_category(category, annotations)
    name = f"{room.replace('_', ' ')} {label} {instance}" if room else f"{label} {instance}"
    x, _, z = (float(v) for v in meta["pos"])
    return Receptacle(
        key=f"{room}-{urdf}",
        name=name,
        room=room,
        category=category,
        position=(x, z),
        pairs=pairs,
        exact_pair=exact,
        kind_label=f"{room_kind(room).replace('_', ' ')} {label}" if room else label,
    )


@functools.lru_cache(maxsize=32)
def load_scene(name: str, data_dir: str | None = None) -> Scene:
    """A scene by name (e.g. ``"Pomaria_2_int"``); an unknown name raises, listing the valid ones."""
    valid = all_scenes(data_dir)
    if name not in valid:
        raise ValueError(f"unknown Housekeep scene {name!r}; valid scenes: {', '.join(valid)}")
    annotations = load_annotations(data_dir)
    raw = load_yaml(read_asset(f"housekeep/scenes/{name}.yaml", data_dir))
    named = {_scene_pair(meta) for meta in raw["urdfs"].values()}
    scene_pairs = [i for i, pair in enumerate(annotations.pairs) if pair in named]
    receptacles = tuple(_receptacle(urdf, meta, annotations, scene_pairs) for urdf, meta in raw["urdfs"].items())
    room_keys = sorted({r.room for r in receptacles if r.room is not None})
    rooms = []
    for key in room_keys:
        members = np.array([r.position for r in receptacles if r.room == key])
        cx, cz = members.mean(0)
        center = (float(cx), float(cz))
        rooms.append(Room(key, key.replace("_", " "), room_kind(key), center, floor_area(members)))
    return Scene(name=name, rooms=tuple(rooms), receptacles=receptacles)
