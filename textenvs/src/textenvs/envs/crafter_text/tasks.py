"""The Crafter-Text tasks: the full game, or one achievement that ends the episode when unlocked."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CrafterTask:
    """A single-achievement task: reward 1 and the episode's end when ``achievement`` is first unlocked."""

    name: str
    achievement: str
    mission: str


#: Single-task variants by name (the id is ``Crafter-Text-<name>-v0``).
TASKS: dict[str, CrafterTask] = {
    task.name: task
    for task in (
        CrafterTask("PlaceCraftingTable", "place_table", "Place a crafting table."),
        CrafterTask("MakeWoodPickaxe", "make_wood_pickaxe", "Make a wood pickaxe."),
        CrafterTask("CollectDrink", "collect_drink", "Drink water."),
        CrafterTask("EatCow", "eat_cow", "Eat a cow."),
    )
}

#: The mission of the full game.
FULL_GAME_MISSION = "Survive and unlock as many of the 22 achievements as you can."
