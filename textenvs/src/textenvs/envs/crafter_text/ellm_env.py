"""``Crafter-Text-ELLM``: ELLM's modified Crafter, the one ELLM and background-knowledge shaping train on."""

from __future__ import annotations

from typing import Any

from crafter import objects

from textenvs.core.commands import CommandVocabulary
from textenvs.core.text_env import StepOutcome
from textenvs.envs.crafter_text.captioner import ellm_lines
from textenvs.envs.crafter_text.ellm_rules import ELLM_ACTIONS, ELLM_ALIASES, HARD_ACTIONS, EllmCrafter
from textenvs.envs.crafter_text.env import CrafterTextEnv
from textenvs.envs.crafter_text.expert import CrafterExpert

ELLM_LENGTH = 400


class CrafterTextEllmEnv(CrafterTextEnv):
    """Crafter as ELLM (Du et al. 2023) modified it, played through ELLM's action names and captions.

    ## Description
    The full Crafter game under ELLM's rules (``ellm_rules.py``): 5 damage per hit whatever the sword,
    collecting an item held 9 times uses the tile up for nothing, a crafting table costs 1 wood, the reward
    is 1 on a step that unlocks an achievement for the first time (no health term), death ends the episode.

    ## Action Space
    ``Text``: ELLM's 27 action names (``"do nothing"``, ``"move left"``, ``"chop tree"``, ``"attack cow"``,
    ``"place crafting table"``, ``"make wood pickaxe"``, ...; ``"eat cow"`` and ``"make crafting table"`` are
    accepted as ``"attack cow"`` and ``"place crafting table"``), or with ``hard=True`` its 139: 6 verb-only
    actions and each of 7 verbs (mine, eat, attack, chop, drink, place, make) with each of 19 nouns, a verb
    acting only on its own noun (``"mine tree"`` does nothing). ``action_mode="discrete"``: ``Discrete(27)``
    or ``Discrete(139)`` in that order.

    ## Observation Space
    As ``Crafter-Text``, with ``caption_style="ellm"`` by default.

    ## Rewards
    1 on a step that unlocks an achievement for the first time in the episode, else 0.

    ## Starting State
    A new world generated from the seed (stock Crafter's worlds); the player in its middle.

    ## Episode End
    ``terminated`` when the player dies; ``truncated`` after ``length`` (400) steps.

    ## Arguments
    ``hard`` (False: 27 actions; True: 139), ``caption_style`` (``"ellm"``), ``length`` (400),
    ``image_size``, ``obs_mode``, ``action_mode``, ``render_mode``.

    ## Info
    As ``Crafter-Text``, plus ``player_action`` (the action played, ELLM's "what the agent did"),
    ``eval_success`` (the game action happened), ``action_success`` (ELLM's loose flag: ``eval_success``
    or the action's noun names what is in front of the player or an item it holds; False for an invalid
    command), and ELLM's caption in three parts: ``obs_caption`` (``you see ... you are targeting ...``),
    ``inventory_caption`` and ``status_caption`` ("" when empty).

    ## Version History
    * v0: initial release, on crafter 1.8.3.
    """

    game_class = EllmCrafter

    def __init__(
        self,
        *,
        hard: bool = False,
        caption_style: str = "ellm",
        length: int = ELLM_LENGTH,
        image_size: int | tuple[int, int] = 64,
        obs_mode: str = "text",
        action_mode: str = "text",
        render_mode: str | None = None,
    ):
        if not isinstance(hard, bool):
            raise ValueError(f"hard={hard!r} is not valid; use True (139 actions) or False (27)")
        self.hard = hard
        super().__init__(
            caption_style=caption_style,
            length=length,
            image_size=image_size,
            obs_mode=obs_mode,
            action_mode=action_mode,
            render_mode=render_mode,
        )

    def _vocabulary(self) -> CommandVocabulary:
        if self.hard:
            return CommandVocabulary(HARD_ACTIONS)
        return CommandVocabulary(ELLM_ACTIONS, ELLM_ALIASES)

    def _step_world(self, command: Any) -> StepOutcome:
        action = command if command is not None else "do nothing"
        reward, action_success, eval_success = self.game.step_ellm(action)
        self._semantic = self.game.semantic()
        self._last_action = action
        self._return += reward
        terminated = self.game.player.health <= 0
        truncated = not terminated and self.game.steps >= self.length
        info = self._family_info()
        info.update(
            player_action=action,
            action_success=command is not None and action_success,
            eval_success=command is not None and eval_success,
        )
        return StepOutcome(reward=reward, terminated=terminated, truncated=truncated, info=info)

    def _family_info(self) -> dict[str, Any]:
        info = super()._family_info()
        info["obs_caption"], info["inventory_caption"], info["status_caption"] = ellm_lines(self.game_state())
        return info

    def expert(self) -> EllmExpert:
        return EllmExpert(self)


#: The stock commands the Crafter expert plays, as ELLM actions ("Do" depends on what is in front).
_STOCK_TO_ELLM = {
    "Noop": "do nothing",
    "Move West": "move left",
    "Move East": "move right",
    "Move North": "move up",
    "Move South": "move down",
    "Sleep": "sleep",
    "Place Table": "place crafting table",
}
_DO_ON_OBJECT = {
    objects.Plant: "eat plant",
    objects.Zombie: "attack zombie",
    objects.Skeleton: "attack skeleton",
    objects.Cow: "attack cow",
}
_DO_ON_MATERIAL = {"tree": "chop tree", "water": "drink water", "grass": "chop grass"}


class EllmExpert(CrafterExpert):
    """The Crafter expert, its commands said with ELLM's action names."""

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        command = self.ellm_action(self._choose())
        if self.env.action_mode == "discrete":
            return self.env.discrete_commands().index(command)
        return command

    def ellm_action(self, command: str) -> str:
        if command != "Do":
            return _STOCK_TO_ELLM.get(command, command.lower())
        player = self._player
        material, obj = player.world[(player.pos[0] + player.facing[0], player.pos[1] + player.facing[1])]
        if obj is not None:
            return _DO_ON_OBJECT.get(type(obj), "do nothing")
        if material in ("stone", "coal", "iron", "diamond"):
            return f"mine {material}"
        return _DO_ON_MATERIAL.get(material, "do nothing")
