"""ELLM's goal-suggestion prompt for Crafter and its answer parser (Du et al. 2023, ``text_crafter/lm.py``'s
bullet prompt).

The prompt lists the valid verbs, two worked examples, then the caption: the observation sentence (first
letters of its two sentences capitalised), the inventory sentence, "You feel sleepy." only when sleepy (the
other status words are dropped), and " What do you do?". The answer is a list of bullets, one goal each.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = (
    "Valid actions: sleep, eat, attack, chop, drink, place, make, mine\n"
    "You are a player playing a game. Suggest the best actions the player can take based on the things you "
    "see and the items in your inventory. Only use valid actions and objects.\n\n"
    "You see plant, tree, and skeleton. You are targeting skeleton. What do you do?\n"
    "- Eat plant\n- Chop tree\n- Attack skeleton\n\n"
    "You see water, grass, cow, and diamond. You are targeting grass. You have in your inventory plant. "
    "What do you do?\n"
    "- Drink water\n- Chop grass\n- Attack cow\n- Place plant\n\n"
)
SUFFIX = "What do you do?\n"
#: The original's sampling: up to 100 tokens, temperature 0.7, stop at a blank line (seeded here: answers are
#: cached per prompt anyway, and a seed makes a run reproducible).
SAMPLING = {"max_tokens": 100, "temperature": 0.7, "stop": ["\n\n"], "seed": 0}


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def goal_prompt(observation: str, inventory: str, status: str) -> str:
    """The prompt for one caption: ELLM's ``obs_caption``, ``inventory_caption`` and ``status_caption``."""
    text = _capitalised(observation)
    if "targeting" in text:
        second = text.find(".") + 2
        text = text[:second] + text[second : second + 1].upper() + text[second + 1 :]
    status = "you feel sleepy." if "sleepy" in status else "."
    if len(inventory) > 1 or len(status) > 1:
        text += " "
        if len(inventory) > 1:
            text += _capitalised(inventory)
        if len(status) > 1:
            text += (" " if len(inventory) > 1 else "") + _capitalised(status)
    return f"{PREFIX}{text} {SUFFIX}"


@dataclass(frozen=True)
class ParsedGoals:
    """The goals of an answer (lower-cased, stripped, duplicates dropped, first-seen order) and how many of
    its non-empty lines were not bullets."""

    goals: tuple[str, ...]
    non_bullet_lines: int

    @property
    def well_formed(self) -> bool:
        """Every line a bullet: the original kept an answer only then."""
        return self.non_bullet_lines == 0 and bool(self.goals)


def parse_goals(answer: str, strict: bool = False) -> ParsedGoals:
    """Each bullet line (``-`` first) is one goal. ``strict``: the original's rule, where one line that is not
    a bullet voids the whole answer. A goal is cut at a further ``-`` as the original split on it."""
    if answer.endswith(('\n"""', "\n```")):
        answer = answer[:-4]
    lines = [line.strip() for line in answer.split("\n") if line.strip()]
    bullets = [line for line in lines if line.startswith("-")]
    non_bullets = len(lines) - len(bullets)
    if strict and not all(line.startswith("-") for line in answer.split("\n")):
        return ParsedGoals((), max(1, non_bullets))
    goals: dict[str, None] = {}
    for line in bullets:
        for piece in line.lower().split("-"):
            goal = piece.strip(" .\n")
            if goal:
                goals[goal] = None
    return ParsedGoals(tuple(goals), non_bullets)
