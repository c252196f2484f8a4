"""``Housekeep-Text``: tidy a house by moving misplaced objects to where people expect them."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.spaces import check_choice
from textenvs.core.text_env import StepOutcome, TextEnv
from textenvs.envs.housekeep import captioner, commands
from textenvs.envs.housekeep.commands import MISSION_COMPLETE, Command
from textenvs.envs.housekeep.config import HousekeepConfig
from textenvs.envs.housekeep.episodes import Episode
from textenvs.envs.housekeep.expert import EXPERT_MODES, HousekeepExpert
from textenvs.envs.housekeep.floor_plan_view import LabelledFloorPlan
from textenvs.envs.housekeep.metrics import episode_metrics
from textenvs.envs.housekeep.renderer import IMAGE_SIZE, FloorPlan
from textenvs.envs.housekeep.reward import RewardRule, is_tidy
from textenvs.envs.housekeep.sampling import llm_personalize_origin
from textenvs.envs.housekeep.world import ActionResult, World

MAX_LOW_LEVEL_STEPS = 1000
MAX_COMMANDS = 150


class HousekeepTextEnv(TextEnv):
    """Housekeep (Kant et al. 2022) as a symbolic text environment, with LLM-Personalize's interface.

    ## Description
    A one-handed robot in one of Housekeep's 14 iGibson houses must find the 3-5 misplaced objects among
    7-10 objects and put each on a receptacle where at least 6 of 10 human annotators would expect it,
    then say ``mission complete``. The house is symbolic: rooms, receptacles at their real floor positions,
    objects on receptacles. Rooms are known from the start; a room's receptacles and the objects on them
    become known when the robot goes there.

    ## Action Space
    Text commands in LLM-Personalize's words: ``go to <room|receptacle|object>``, ``look at
    <receptacle|object>``, ``pick up <object>``, ``place <object> on <receptacle>``, ``mission complete``
    (names like ``living room 0``, ``bedroom 0 bottom cabinet 10``, ``tennis ball 1``; a planner's
    ``step 2:`` prefix is accepted). Pick/place need the target gone to and looked at. With
    ``action_mode="discrete"``: ``Discrete(n)`` where index i is the i-th of ``info["admissible_commands"]``
    now (an index past the list is an invalid no-op).

    ## Observation Space
    ``Dict(text, mission[, image])``: ``text`` is the robot's knowledge in ``text_style``
    (``"llm_personalize"``: the context of LLM-Personalize's planner prompt; ``"ellm"``: ELLM-style
    lists); ``image`` a 128x128 top-down floor plan of what the robot knows, without text (see
    ``renderer.FloorPlan``). ``render()`` with ``render_mode="rgb_array"`` returns the larger labelled floor
    plan of the whole house instead (``floor_plan_view``).

    ## Rewards
    ``reward_style="housekeep"`` (default): Housekeep's ``get_reward`` as its code pays it — -0.01 per
    low-level step; -2.5 for every pick of an object that sits on a correct receptacle, +2.5 for the first pick
    of any other object (0 later); +2.5 for a place that makes an object correct, -2.5 for any other place;
    +2.5 per low-level step while every object is correct and the hand is empty (the episode goes on until
    ``mission complete``); a failed pick or place pays ``fail_penalty`` (0 as in the original, whose -0.2 is
    never paid). ``reward_style="ellm"``: ELLM's variant (see ``reward.py``), which ends the episode once the
    house is tidy. The reward is ``reward_scale`` times the sum of the terms in ``info["reward_terms"]``.

    ## Starting State
    A generated episode (Housekeep's procedure, seeded), a replayed original episode file, or
    (``episode_source="llm_personalize"``) one of LLM-Personalize's 100 episodes per scene: the scene's
    original file where Housekeep distributes it, else episodes generated from (scene, index) alone
    (``info["episode_origin"]`` says which); ``split="train"|"test"`` then selects the paper's episodes
    (index mod 25 < 5 is test). ``info["episode_id"]`` names the episode.

    ## Episode End
    Terminated by ``mission complete`` (and, with ``reward_style="ellm"``, when every object is correct and the
    hand is empty); truncated after 1,000 low-level steps (0.25 m forward, 10 degree
    turns, 1 per look/pick/place) or 150 commands. ``info["episode_metrics"]``: see ``metrics.py``.

    ## Arguments
    ``scenes`` (scene names, default: the split's scenes), ``split`` (``train``/``val``/``test``; with
    ``llm_personalize`` episodes ``train``/``test``), ``episode_source`` (``generated``/``original``/
    ``llm_personalize``), ``objects_split`` (``seen``/``unseen``, for val/test),
    ``text_style``, ``reward_style`` (``housekeep``/``ellm``), ``fail_penalty`` (default 0; -0.2 is the value
    Housekeep's config intended), ``reward_scale`` (default 1; Housekeep trained with 0.1), ``expert_mode``
    (``efficient``: nearest correct receptacle, re-planned every command; ``faithful``: LLM-Personalize's
    demonstrator), ``max_steps``, ``max_commands``, ``data_dir``, plus ``obs_mode``, ``action_mode``,
    ``render_mode``. ``reset(options={"scene": name, "episode_index": i})`` picks an episode (the index
    into the scene's original file), ``reset(options={"episode": Episode(...)})`` plays a given one.

    ## Version History
    * v0: initial release; the reward follows Housekeep's code (per-step success bonus, no failure penalty,
      place +2.5 whenever it makes an object correct) and ELLM's variant is ``reward_style="ellm"``.
    """

    reset_options = ("episode", "scene", "episode_index")

    def __init__(
        self,
        scenes: list[str] | tuple[str, ...] | None = None,
        split: str = "train",
        episode_source: str = "generated",
        objects_split: str = "seen",
        text_style: str = "llm_personalize",
        reward_style: str = "housekeep",
        fail_penalty: float = 0.0,
        reward_scale: float = 1.0,
        expert_mode: str = "efficient",
        max_steps: int = MAX_LOW_LEVEL_STEPS,
        max_commands: int = MAX_COMMANDS,
        data_dir: str | None = None,
        obs_mode: str = "text",
        action_mode: str = "text",
        render_mode: str | None = None,
    ):
        self.config = HousekeepConfig.create(scenes, split, episode_source, objects_split, text_style, data_dir)
        self.reward_rule = RewardRule(reward_style, fail_penalty, reward_scale)
        self.expert_mode = check_choice("expert_mode", expert_mode, EXPERT_MODES)
        self.split, self.episode_source, self.objects_split = split, episode_source, objects_split
        self.text_style, self.data_dir = text_style, self.config.data_dir
        self.annotations = self.config.annotations
        self.scenes = self.config.scenes
        self.max_steps = int(max_steps)
        self.max_commands = int(max_commands)
        self._action_count = self.config.admissible_bound()
        text_bound = self.config.text_bound()
        super().__init__(
            vocabulary=None,
            text_max_length=text_bound,
            image_shape=(IMAGE_SIZE, IMAGE_SIZE),
            obs_mode=obs_mode,
            action_mode=action_mode,
            render_mode=render_mode,
        )
        self.world: World | None = None
        self.episode: Episode | None = None
        self._floor_plan: FloorPlan | None = None
        self._labelled_plan: LabelledFloorPlan | None = None
        self._text_view: captioner.TextView | None = None
        self._admissible_cache: tuple[int, list[str]] | None = None
        # the canonical text of each valid command text seen in this episode (names are fixed per world)
        self._canonical_texts: dict[str, str] = {}

    # ----------------------------------------------------------------- episodes
    def _reset_world(self, options: dict[str, Any]) -> dict[str, Any]:
        self.episode = self.config.choose_episode(self.np_random, options)
        scene = self.config.scene(self.episode.scene)
        self.world = World(scene, self.episode, self.annotations, [self.episode.robot_start])
        self._floor_plan = self._labelled_plan = None
        self._text_view = captioner.TextView(self.world, 0, self.text_style)
        self._admissible_cache = None
        self._canonical_texts = {}
        return self._family_info()

    def _family_info(self) -> dict[str, Any]:
        world, episode = self.world, self.episode
        info = {"scene": world.scene.name, "episode_id": episode.episode_id, "steps": world.steps}
        if self.episode_source == "llm_personalize":
            info["episode_origin"] = llm_personalize_origin(episode.scene)
        return {**info, "commands": world.commands}

    # ----------------------------------------------------------------- commands
    def parse_command(self, text: str) -> str | None:
        canonical = self._canonical_texts.get(text)
        if canonical is None:
            world = self.world
            command = commands.parse(text, world.names, world.parsed) if world is not None else None
            if command is None:
                return None
            canonical = self._canonical_texts[text] = self._canonical(command)
        return canonical

    def _canonical(self, command: Command) -> str:
        if command.verb == MISSION_COMPLETE:
            return MISSION_COMPLETE
        if command.verb == commands.PLACE:
            return f"place {self.world.name(command.target)} on {self.world.name(command.destination)}"
        return f"{command.verb} {self.world.name(command.target)}"

    def discrete_commands(self) -> list[str]:
        return self.admissible_commands()

    def discrete_action_count(self) -> int:
        return self._action_count

    def admissible_commands(self) -> list[str]:
        world = self.world
        if world is None:
            return []
        if self._admissible_cache is None or self._admissible_cache[0] != world.version:
            self._admissible_cache = (world.version, world.admissible_commands(0))
        return list(self._admissible_cache[1])

    # ----------------------------------------------------------------- dynamics
    def _step_world(self, command: Any) -> StepOutcome:
        world = self.world
        if command is None:
            world.steps += 1
            world.commands += 1
            return self._outcome(None, 1, False, "")
        parsed = commands.parse(command, world.names, world.parsed)
        result = world.execute(0, parsed)
        return self._outcome(result, result.steps, parsed.verb == MISSION_COMPLETE, result.feedback)

    def _outcome(self, result: ActionResult | None, steps: int, terminated: bool, feedback: str) -> StepOutcome:
        world, rule = self.world, self.reward_rule
        terms = rule.terms(result, steps, world)
        terminated = terminated or (rule.ends_on_success and is_tidy(world))
        truncated = not terminated and (world.steps >= self.max_steps or world.commands >= self.max_commands)
        info = {
            "scene": world.scene.name,
            "steps": world.steps,
            "commands": world.commands,
            "action_succeeded": result is not None and result.success,
            "reward_terms": terms,
        }
        return StepOutcome(rule.total(terms), terminated, truncated, feedback, info)

    # ----------------------------------------------------------------- views
    def describe(self) -> str:
        return self._text_view.describe()

    def mission(self) -> str:
        return captioner.MISSION

    def render_image(self) -> np.ndarray:
        if self._floor_plan is None:
            self._floor_plan = FloorPlan(self.world)
        return self._floor_plan.draw(self.world)

    def render(self) -> str | np.ndarray | None:
        """``rgb_array``: the labelled floor plan, ``VIEW_HEIGHT`` x ``VIEW_WIDTH`` (not the ``image`` shape)."""
        if self.render_mode != "rgb_array":
            return super().render()
        if self._labelled_plan is None:
            self._labelled_plan = LabelledFloorPlan(self.world)
        return self._labelled_plan.draw(self.world)

    def success(self) -> bool:
        return is_tidy(self.world)

    def progression(self) -> float:
        """The fraction of initially misplaced objects that are on a correct receptacle now."""
        misplaced = len(self.world.misplaced_at_start)
        return self.world.rearranged_count / misplaced if misplaced else 1.0

    def episode_metrics(self) -> dict[str, Any]:
        return episode_metrics(self.world)

    def expert(self) -> HousekeepExpert:
        return HousekeepExpert(self, mode=self.expert_mode)
