"""Crafter 1.8.x names, kept here so captions and registration work without importing ``crafter``.

The family's tests check every list against ``crafter.constants`` and crafter's semantic view.
"""

from __future__ import annotations

#: Semantic-map id -> name: crafter's material ids (0 is outside the map) then its object ids.
ID_TO_ITEM: tuple[str, ...] = (
    "None",
    "water",
    "grass",
    "stone",
    "path",
    "sand",
    "tree",
    "lava",
    "coal",
    "iron",
    "diamond",
    "table",
    "furnace",
    "player",
    "cow",
    "zombie",
    "skeleton",
    "arrow",
    "plant",
)
ITEM_TO_ID: dict[str, int] = {name: i for i, name in enumerate(ID_TO_ITEM)}
PLAYER_ID = ITEM_TO_ID["player"]

#: The player's vitals, in crafter's inventory order.
VITALS: tuple[str, ...] = ("health", "food", "drink", "energy")
VITAL_MAX = 9

#: Every inventory entry in crafter's order (vitals first).
INVENTORY_ITEMS: tuple[str, ...] = (
    *VITALS,
    "sapling",
    "wood",
    "stone",
    "coal",
    "iron",
    "diamond",
    "wood_pickaxe",
    "stone_pickaxe",
    "iron_pickaxe",
    "wood_sword",
    "stone_sword",
    "iron_sword",
)

#: Crafter's 22 achievements, in crafter's order.
ACHIEVEMENTS: tuple[str, ...] = (
    "collect_coal",
    "collect_diamond",
    "collect_drink",
    "collect_iron",
    "collect_sapling",
    "collect_stone",
    "collect_wood",
    "defeat_skeleton",
    "defeat_zombie",
    "eat_cow",
    "eat_plant",
    "make_iron_pickaxe",
    "make_iron_sword",
    "make_stone_pickaxe",
    "make_stone_sword",
    "make_wood_pickaxe",
    "make_wood_sword",
    "place_furnace",
    "place_plant",
    "place_stone",
    "place_table",
    "wake_up",
)

#: Crafter's action names; index i is crafter's action i.
CRAFTER_ACTIONS: tuple[str, ...] = (
    "noop",
    "move_left",
    "move_right",
    "move_up",
    "move_down",
    "do",
    "sleep",
    "place_stone",
    "place_table",
    "place_furnace",
    "place_plant",
    "make_wood_pickaxe",
    "make_stone_pickaxe",
    "make_iron_pickaxe",
    "make_wood_sword",
    "make_stone_sword",
    "make_iron_sword",
)

#: The commands under BALROG's and SmartPlay's names; index i is crafter's action i.
COMMANDS: tuple[str, ...] = (
    "Noop",
    "Move West",
    "Move East",
    "Move North",
    "Move South",
    "Do",
    "Sleep",
    "Place Stone",
    "Place Table",
    "Place Furnace",
    "Place Plant",
    "Make Wood Pickaxe",
    "Make Stone Pickaxe",
    "Make Iron Pickaxe",
    "Make Wood Sword",
    "Make Stone Sword",
    "Make Iron Sword",
)

#: SmartPlay's caption names of the moves ("You took action move_north.").
_COMPASS_MOVES = {
    "move_west": "Move West",
    "move_east": "Move East",
    "move_north": "Move North",
    "move_south": "Move South",
}

#: ELLM's names of the actions that differ from ours.
_ELLM_ACTIONS = {
    "do nothing": "Noop",
    "move left": "Move West",
    "move right": "Move East",
    "move up": "Move North",
    "move down": "Move South",
    "place crafting table": "Place Table",
}

#: Other spellings accepted for the commands: crafter's snake_case names, SmartPlay's compass moves and
#: ELLM's action names.
COMMAND_ALIASES: dict[str, str] = {
    **dict(zip(CRAFTER_ACTIONS, COMMANDS, strict=True)),
    **_COMPASS_MOVES,
    **_ELLM_ACTIONS,
}
