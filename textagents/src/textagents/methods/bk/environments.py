"""What the LLM is told about the environment, per env family: one description shared by BK-Code, BK-Goal
and BK-Pref's prompts (ours: the original described minigrid's numeric grid, ``prompts/minigrid``)."""

from __future__ import annotations

ENVIRONMENTS = {
    "babyai_text": (
        "The environment is BabyAI, a grid world seen from the agent's point of view. Each observation is "
        "text: one line per thing the agent sees, such as 'You see a red ball 2 steps forward' or 'You see a "
        "wall 1 step left', and lines such as 'You carry a blue key'. The agent turns left or right, goes "
        "forward, picks up, drops and toggles (opens doors). Missions ask it to go to, pick up, put next to "
        "or open objects (balls, boxes, keys, doors) of six colours."
    ),
    "crafter_text": (
        "The environment is Crafter, a 2D survival game. Each observation is text: what the player sees and "
        "targets, its inventory and its status (hungry, thirsty, sleepy). The player collects wood, stone, "
        "coal, iron and diamonds, makes tools at a table, drinks water, eats, sleeps and fights zombies."
    ),
}
