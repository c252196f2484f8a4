"""Crafter 1.8.3's rules as tables for the batched kernels, read from ``crafter.constants`` and its classes.

Ids: materials as the world's (0 is outside the map), objects as kinds 1..6 (their semantic id is the kind plus
``SEMANTIC_OFFSET``), items and achievements in crafter's orders (``INVENTORY_ITEMS``, ``ACHIEVEMENTS``).
"""

from __future__ import annotations

import crafter
import numpy as np

from textenvs.envs.crafter_text.constants import ACHIEVEMENTS, CRAFTER_ACTIONS, INVENTORY_ITEMS, ITEM_TO_ID
from textenvs.envs.crafter_text.game import AREA, VIEW

_MATERIALS = ("None", *crafter.constants.materials)  # world material ids: 0 is outside the map
assert tuple(name for name in ITEM_TO_ID if ITEM_TO_ID[name] < len(_MATERIALS)) == _MATERIALS
NUM_MATERIALS = len(_MATERIALS)
WATER, GRASS, STONE, PATH, SAND, TREE, LAVA, COAL, IRON, DIAMOND, TABLE, FURNACE = range(1, NUM_MATERIALS)

#: Object kinds; an object's semantic id is ``SEMANTIC_OFFSET + kind``.
PLAYER, COW, ZOMBIE, SKELETON, ARROW, PLANT = range(1, 7)
KIND_NAMES = ("player", "cow", "zombie", "skeleton", "arrow", "plant")
SEMANTIC_OFFSET = ITEM_TO_ID["player"] - PLAYER
KIND_OF_CLASS = {
    crafter.objects.Player: PLAYER,
    crafter.objects.Cow: COW,
    crafter.objects.Zombie: ZOMBIE,
    crafter.objects.Skeleton: SKELETON,
    crafter.objects.Arrow: ARROW,
    crafter.objects.Plant: PLANT,
}

_ITEM = {name: i for i, name in enumerate(INVENTORY_ITEMS)}
_ACH = {name: i for i, name in enumerate(ACHIEVEMENTS)}
HEALTH, FOOD, DRINK, ENERGY = (_ITEM[name] for name in ("health", "food", "drink", "energy"))
ITEM_MAX = np.array([crafter.constants.items[name]["max"] for name in INVENTORY_ITEMS], np.int64)
WAKE_UP, EAT_PLANT, EAT_COW = _ACH["wake_up"], _ACH["eat_plant"], _ACH["eat_cow"]
DEFEAT_ZOMBIE, DEFEAT_SKELETON = _ACH["defeat_zombie"], _ACH["defeat_skeleton"]
WOOD_SWORD, STONE_SWORD, IRON_SWORD = _ITEM["wood_sword"], _ITEM["stone_sword"], _ITEM["iron_sword"]

DO, SLEEP = CRAFTER_ACTIONS.index("do"), CRAFTER_ACTIONS.index("sleep")
MOVES = np.array([(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)], np.int64)  # actions 1..4: left, right, up, down
FIRST_PLACE, FIRST_MAKE = CRAFTER_ACTIONS.index("place_stone"), CRAFTER_ACTIONS.index("make_wood_pickaxe")
_MAT = {name: i for i, name in enumerate(_MATERIALS)}


def _material_mask(names: list[str]) -> np.ndarray:
    return np.array([name in names for name in _MATERIALS])


#: Rows: creatures (cow, zombie, skeleton), the player, arrows.
WALKABLE = np.stack(
    [
        _material_mask(crafter.constants.walkable),
        _material_mask(crafter.objects.Player(crafter.engine.World(AREA, [], (12, 12)), (0, 0)).walkable),
        _material_mask(crafter.objects.Arrow.walkable),
    ]
)
WALK_CREATURE, WALK_PLAYER, WALK_ARROW = range(3)

# Collecting, by material: the tool required (-1: none) and the count, the item received (-1: not collectable),
# the material left behind, the probability and the achievement.
COLLECT_REQUIRE = np.full(NUM_MATERIALS, -1, np.int64)
COLLECT_REQUIRE_COUNT = np.zeros(NUM_MATERIALS, np.int64)
COLLECT_RECEIVE = np.full(NUM_MATERIALS, -1, np.int64)
COLLECT_LEAVES = np.zeros(NUM_MATERIALS, np.int64)
COLLECT_PROBABILITY = np.ones(NUM_MATERIALS)
COLLECT_ACHIEVEMENT = np.zeros(NUM_MATERIALS, np.int64)
for _name, _info in crafter.constants.collect.items():
    _m = _MAT[_name]
    assert len(_info["require"]) <= 1 and len(_info["receive"]) == 1
    for _item, _count in _info["require"].items():
        COLLECT_REQUIRE[_m], COLLECT_REQUIRE_COUNT[_m] = _ITEM[_item], _count
    ((_item, _count),) = _info["receive"].items()
    assert _count == 1
    COLLECT_RECEIVE[_m], COLLECT_ACHIEVEMENT[_m] = _ITEM[_item], _ACH[f"collect_{_item}"]
    COLLECT_LEAVES[_m] = _MAT[_info["leaves"]]
    COLLECT_PROBABILITY[_m] = _info.get("probability", 1)

# Placing, by place action (stone, table, furnace, plant): what it uses, where, the material it makes
# (-1: a plant object) and the achievement.
_PLACE_NAMES = [name[len("place_") :] for name in CRAFTER_ACTIONS[FIRST_PLACE:FIRST_MAKE]]
PLACE_USES = np.zeros((len(_PLACE_NAMES), len(INVENTORY_ITEMS)), np.int64)
PLACE_WHERE = np.zeros((len(_PLACE_NAMES), NUM_MATERIALS), bool)
PLACE_MATERIAL = np.full(len(_PLACE_NAMES), -1, np.int64)
PLACE_ACHIEVEMENT = np.array([_ACH[f"place_{name}"] for name in _PLACE_NAMES], np.int64)
for _p, _name in enumerate(_PLACE_NAMES):
    _info = crafter.constants.place[_name]
    for _item, _count in _info["uses"].items():
        PLACE_USES[_p, _ITEM[_item]] = _count
    PLACE_WHERE[_p] = _material_mask(_info["where"])
    if _info["type"] == "material":
        PLACE_MATERIAL[_p] = _MAT[_name]
    else:
        assert _name == "plant"

# Making, by make action: what it uses, the materials it needs nearby, the item made and its achievement.
_MAKE_NAMES = [name[len("make_") :] for name in CRAFTER_ACTIONS[FIRST_MAKE:]]
MAKE_USES = np.zeros((len(_MAKE_NAMES), len(INVENTORY_ITEMS)), np.int64)
MAKE_NEARBY = np.zeros((len(_MAKE_NAMES), NUM_MATERIALS), bool)
MAKE_ITEM = np.array([_ITEM[name] for name in _MAKE_NAMES], np.int64)
MAKE_GIVES = np.array([crafter.constants.make[name]["gives"] for name in _MAKE_NAMES], np.int64)
MAKE_ACHIEVEMENT = np.array([_ACH[f"make_{name}"] for name in _MAKE_NAMES], np.int64)
for _k, _name in enumerate(_MAKE_NAMES):
    for _item, _count in crafter.constants.make[_name]["uses"].items():
        MAKE_USES[_k, _ITEM[_item]] = _count
    MAKE_NEARBY[_k] = _material_mask(crafter.constants.make[_name]["nearby"])

# Crafter's creature balance (``Env._balance_chunk``), one row per class in crafter's order: kind, ground
# material, spawn and despawn distances and probabilities.
BALANCE_KIND = np.array([ZOMBIE, SKELETON, COW], np.int64)
BALANCE_GROUND = np.array([GRASS, PATH, GRASS], np.int64)
BALANCE_SPAWN_DIST = np.array([6, 7, 5], np.int64)
BALANCE_DESPAWN_DIST = np.array([0, 7, 5], np.int64)
BALANCE_SPAWN_P = np.array([0.3, 0.1, 0.01])
BALANCE_DESPAWN_P = np.array([0.4, 0.1, 0.1])
INITIAL_HEALTH = np.array([0, 0, 3, 5, 3, 0, 1], np.int64)  # by kind (the player's lives in its inventory)

#: Positions in the tuple of object and chunk arrays the kernels share (``CrafterBatch._state``).
KINDS, XS, YS, HEALTHS, COUNTERS, DXS, DYS, REMOVED, COUNT, OBJ_MAP, CHUNK_ORDER, CHUNK_COUNT, CHUNK_SEEN = range(13)

CHUNK = 12
CHUNKS_PER_SIDE = -(-AREA[0] // CHUNK)
NUM_CHUNKS = CHUNKS_PER_SIDE * CHUNKS_PER_SIDE
UPDATE_DISTANCE = 2 * max(VIEW)  # crafter updates the objects closer than this to the player
BALANCE_EVERY = 10
