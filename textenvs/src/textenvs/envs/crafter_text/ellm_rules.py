"""ELLM's modified Crafter (Du et al. 2023, ``text_crafter`` in yuqingd/ellm @ e068cf4): its action names, its
player rules and its step, on top of PyPI ``crafter``.

What differs from stock Crafter:

* actions are named by what they do to what (``"chop tree"``, ``"attack cow"``, ``"make wood pickaxe"``): 27
  of them, or, in the hard variant, 6 verb-only actions and 7 verbs x 19 nouns (139); a verb acts only on
  its own noun in front of the player (``"mine tree"`` does nothing);
* the player deals 5 damage whatever its sword, so every creature dies in one hit;
* collecting an item already at its maximum (9) still turns the tile into its leftover (tree -> grass,
  stone -> path) but gives nothing and unlocks nothing;
* a crafting table costs 1 wood (stock: 2);
* the reward is 1 on a step that unlocks an achievement for the first time in the episode (1 even when two
  unlock at once, as the original), with no health term; death ends the episode; episodes last 400 steps.

Each step also says ``player_action`` (the action's name), ``eval_success`` (the game action really
happened: a hit, a ripe plant eaten, an item collected, placed or made, a move, falling asleep) and
``action_success``, ELLM's looser flag: ``eval_success``, or the action's noun names the object or material
in front of the player, or an item it holds.
"""

from __future__ import annotations

import copy
from typing import Any

from crafter import constants, objects

from textenvs.envs.crafter_text.game import DeterministicCrafter

#: ELLM's 27 actions (its ``actions`` list), in its order.
ELLM_ACTIONS: tuple[str, ...] = (
    "do nothing",
    "move left",
    "move right",
    "move up",
    "move down",
    "eat plant",
    "attack zombie",
    "attack skeleton",
    "attack cow",
    "chop tree",
    "mine stone",
    "mine coal",
    "mine iron",
    "mine diamond",
    "drink water",
    "chop grass",
    "sleep",
    "place stone",
    "place crafting table",
    "place furnace",
    "place plant",
    "make wood pickaxe",
    "make stone pickaxe",
    "make iron pickaxe",
    "make wood sword",
    "make stone sword",
    "make iron sword",
)

#: ELLM's ``good_actions`` that are not among the 27 act as these (``eat cow`` hits a cow, ``make crafting
#: table`` places one).
ELLM_ALIASES: dict[str, str] = {"eat cow": "attack cow", "make crafting table": "place crafting table"}

#: The hard variant's actions: its verb-only actions, then each verb with each noun (ELLM's
#: ``decomposed_actions``).
VERB_ONLY: tuple[str, ...] = ("do nothing", "move left", "move right", "move up", "move down", "sleep")
VERBS: tuple[str, ...] = ("mine", "eat", "attack", "chop", "drink", "place", "make")
NOUNS: tuple[str, ...] = (
    "zombie",
    "skeleton",
    "cow",
    "tree",
    "stone",
    "coal",
    "iron",
    "diamond",
    "water",
    "grass",
    "crafting table",
    "furnace",
    "plant",
    "wood pickaxe",
    "stone pickaxe",
    "iron pickaxe",
    "wood sword",
    "stone sword",
    "iron sword",
)
HARD_ACTIONS: tuple[str, ...] = (*VERB_ONLY, *(f"{verb} {noun}" for verb in VERBS for noun in NOUNS))

#: The actions that act on a material in front (ELLM's ``good_actions`` among chop/mine/drink).
_MATERIAL_ACTIONS = frozenset(
    {"chop tree", "mine stone", "mine coal", "mine iron", "mine diamond", "drink water", "chop grass"}
)
_CREATURE_ACTIONS = {
    "eat plant": objects.Plant,
    "attack zombie": objects.Zombie,
    "attack skeleton": objects.Skeleton,
    "attack cow": objects.Cow,
    "eat cow": objects.Cow,
}
_MOVES = {"left": (-1, 0), "right": (+1, 0), "up": (0, -1), "down": (0, +1)}
PLAYER_DAMAGE = 5

#: ELLM's placing rules: stock Crafter's, with a crafting table for 1 wood.
PLACE_RULES: dict[str, dict[str, Any]] = copy.deepcopy(dict(constants.place))
PLACE_RULES["table"]["uses"] = {"wood": 1}


class EllmPlayer(objects.Player):
    """Crafter's player under ELLM's rules; ``update`` returns ``(action_success, eval_success)``."""

    def __init__(self, world: Any, pos: Any):
        super().__init__(world, pos)
        self.action = "do nothing"

    def update(self) -> tuple[bool, bool]:
        target = (self.pos[0] + self.facing[0], self.pos[1] + self.facing[1])
        material, obj = self.world[target]
        action = self.action
        if self.sleeping:
            if self.inventory["energy"] < constants.items["energy"]["max"]:
                action = "sleep"
            else:
                self.sleeping = False
                self.achievements["wake_up"] += 1
        success = action not in VERB_ONLY and self._names_what_is_here(action, material, obj)
        done = self._act(action, target, material, obj)
        self._update_life_stats()
        self._degen_or_regen_health()
        for name, amount in self.inventory.items():
            self.inventory[name] = max(0, min(amount, constants.items[name]["max"]))
        self._wake_up_when_hurt()
        return success or done, done

    def _names_what_is_here(self, action: str, material: str | None, obj: Any) -> bool:
        """ELLM's loose success: the action's noun is the object or material in front, or an item held."""
        noun = action.split(" ", 1)[1]
        held = noun.replace(" ", "_")
        named_object = obj is not None and noun == getattr(obj, "name", type(obj).__name__.lower())
        return named_object or noun == material or self.inventory.get(held, 0) > 0

    def _act(self, action: str, target: tuple[int, int], material: str | None, obj: Any) -> bool:
        if action == "do nothing":
            return True
        if action.startswith("move "):
            return self._move_to(action.removeprefix("move "))
        if action == "sleep":
            if self.inventory["energy"] < constants.items["energy"]["max"]:
                self.sleeping = True
                return self.action == "sleep"  # not when a sleeping player's action is forced to sleep
            return False
        if action in _CREATURE_ACTIONS:
            return isinstance(obj, _CREATURE_ACTIONS[action]) and self._hit(obj)
        verb, noun = action.split(" ", 1)
        if verb in ("chop", "mine", "drink"):
            return noun == material and action in _MATERIAL_ACTIONS and self._collect(target, material)
        if verb == "place" or (verb == "make" and noun == "crafting table"):
            return self._place_item(noun.replace(" ", "_"), target, material)
        if verb == "make":
            return self._make_item(noun.replace(" ", "_"))
        return False

    def _move_to(self, direction: str) -> bool:
        self.facing = _MOVES[direction]
        moved = self.move(self.facing)
        if self.world[self.pos][0] == "lava":
            self.health = 0
        return moved

    def _hit(self, obj: Any) -> bool:
        if isinstance(obj, objects.Plant):
            if not obj.ripe:
                return False
            obj.grown = 0
            self.inventory["food"] += 4
            self.achievements["eat_plant"] += 1
            return True
        obj.health -= PLAYER_DAMAGE
        if obj.health <= 0:
            kind = {objects.Zombie: "defeat_zombie", objects.Skeleton: "defeat_skeleton", objects.Cow: "eat_cow"}
            self.achievements[kind[type(obj)]] += 1
            if isinstance(obj, objects.Cow):
                self.inventory["food"] += 6
                self._hunger = 0
        return True

    def _collect(self, target: tuple[int, int], material: str) -> bool:
        if material == "water":
            self._thirst = 0
        info = constants.collect.get(material)
        if not info or any(self.inventory[name] < amount for name, amount in info["require"].items()):
            return False
        self.world[target] = info["leaves"]  # the tile is used up even when nothing is received
        if self.random.uniform() > info.get("probability", 1):
            return False
        for name, amount in info["receive"].items():
            if self.inventory[name] == constants.items[name]["max"]:
                return False
            self.inventory[name] += amount
            self.achievements[f"collect_{name}"] += 1
        return True

    def _place_item(self, name: str, target: tuple[int, int], material: str | None) -> bool:
        name = "table" if "crafting" in name else name
        if self.world[target][1] or name not in PLACE_RULES:
            return False
        info = PLACE_RULES[name]
        if material not in info["where"] or any(self.inventory[k] < v for k, v in info["uses"].items()):
            return False
        for item, amount in info["uses"].items():
            self.inventory[item] -= amount
        if info["type"] == "material":
            self.world[target] = name
        else:
            self.world.add(objects.Plant(self.world, target))
        self.achievements[f"place_{name}"] += 1
        return True

    def _make_item(self, name: str) -> bool:
        if name not in constants.make:
            return False
        info = constants.make[name]
        nearby, _ = self.world.nearby(self.pos, 1)
        if not all(util in nearby for util in info["nearby"]):
            return False
        if any(self.inventory[k] < v for k, v in info["uses"].items()):
            return False
        for item, amount in info["uses"].items():
            self.inventory[item] -= amount
        self.inventory[name] += info["gives"]
        self.achievements[f"make_{name}"] += 1
        return True


class EllmCrafter(DeterministicCrafter):
    """``DeterministicCrafter`` under ELLM's rules: actions by name, ``step_ellm`` returns what ELLM's step
    reports."""

    player_class = EllmPlayer

    def __init__(self, length: int):
        super().__init__(length)
        ids = self._sem_view._obj_ids  # the semantic map looks objects up by exact type
        ids[EllmPlayer] = ids[objects.Player]

    def step_ellm(self, action: str) -> tuple[float, bool, bool]:
        """Play ``action`` (an ELLM action name); ``(reward, action_success, eval_success)``."""
        self._step += 1
        self._update_time()
        player = self._player
        player.action = action
        success = done = False
        reach = 2 * max(self._view)
        for obj in self._world.objects:
            if player.distance(obj) < reach:
                if obj is player:
                    success, done = obj.update()
                else:
                    obj.update()
        if self._step % 10 == 0:
            for chunk, objs in self._world.chunks.items():
                self._balance_chunk(chunk, objs)
        self._last_health = player.health
        unlocked = {name for name, count in player.achievements.items() if count > 0 and name not in self._unlocked}
        self._unlocked |= unlocked
        return (1.0 if unlocked else 0.0), success, done
