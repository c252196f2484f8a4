"""Several one-handed robots tidying one house: a PettingZoo ``ParallelEnv``.

Needs the ``multiagent`` extra (``pip install "textenvs[multiagent]"``); ``import textenvs`` never imports
this module. Each robot has its own hand, position and discoveries; objects are shared. Robots act in
agent order within a step, so when two robots pick up the same object at once the lower-numbered robot
gets it and the other's pick fails (deterministically).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from textenvs.core.commands import invalid_command_feedback
from textenvs.core.spaces import check_choice, check_text_fits, text_space
from textenvs.envs.housekeep import captioner, commands
from textenvs.envs.housekeep.config import HousekeepConfig
from textenvs.envs.housekeep.env import MAX_COMMANDS, MAX_LOW_LEVEL_STEPS
from textenvs.envs.housekeep.floor_plan_view import LabelledFloorPlan
from textenvs.envs.housekeep.metrics import episode_metrics
from textenvs.envs.housekeep.reward import RewardRule, is_tidy
from textenvs.envs.housekeep.world import World

COMMAND_MAX_LENGTH = 256


class HousekeepMultiRobotEnv(ParallelEnv):
    """Housekeep with ``n_robots`` robots (agents ``robot_0``, ``robot_1``, ...).

    Observations per agent: ``Dict(text, mission)`` (that robot's knowledge, as in ``HousekeepTextEnv``);
    actions: text commands. Rewards: each robot's commands earn the single-robot env's reward (the same
    ``reward_style``, ``fail_penalty`` and ``reward_scale``), the tidy-house terms judged after every robot
    has acted; ``info["reward_terms"]`` per robot. A robot is done when it says ``mission complete`` (with
    ``reward_style="ellm"`` every robot is done once the house is tidy); every
    robot is truncated after its own 1,000 low-level steps or 150 commands. Infos carry
    ``admissible_commands``, ``invalid_action``, ``feedback``, ``success``, ``progression``, and
    ``episode_metrics`` (house-wide) on each robot's last step. Arguments as ``HousekeepTextEnv``, plus
    ``n_robots``. ``render_mode="rgb_array"`` draws the labelled floor plan with every robot by its agent name.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "housekeep_multi_robot_v0",
        "render_modes": ["ansi", "rgb_array"],
        "render_fps": 4,
    }

    def __init__(
        self,
        n_robots: int = 2,
        scenes: list[str] | tuple[str, ...] | None = None,
        split: str = "train",
        episode_source: str = "generated",
        objects_split: str = "seen",
        text_style: str = "llm_personalize",
        reward_style: str = "housekeep",
        fail_penalty: float = 0.0,
        reward_scale: float = 1.0,
        max_steps: int = MAX_LOW_LEVEL_STEPS,
        max_commands: int = MAX_COMMANDS,
        data_dir: str | None = None,
        render_mode: str | None = None,
    ):
        if not isinstance(n_robots, int) or n_robots < 1:
            raise ValueError(f"n_robots must be a positive integer, got {n_robots!r}")
        if render_mode is not None:
            check_choice("render_mode", render_mode, tuple(self.metadata["render_modes"]))
        self.config = HousekeepConfig.create(scenes, split, episode_source, objects_split, text_style, data_dir)
        self.reward_rule = RewardRule(reward_style, fail_penalty, reward_scale)
        self.render_mode = render_mode
        self.max_steps = int(max_steps)
        self.max_commands = int(max_commands)
        self.possible_agents = [f"robot_{i}" for i in range(n_robots)]
        self.agents: list[str] = []
        observation = spaces.Dict({"mission": text_space(512), "text": text_space(self.config.text_bound())})
        self._observation_spaces = {agent: observation for agent in self.possible_agents}
        self._action_spaces = {agent: text_space(COMMAND_MAX_LENGTH) for agent in self.possible_agents}
        self._np_random: np.random.Generator | None = None
        self.world: World | None = None

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    # ----------------------------------------------------------------- API
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        episode = self.config.choose_episode(self._np_random, dict(options or {}))
        starts = [episode.robot_start] * len(self.possible_agents)
        self.world = World(self.config.scene(episode.scene), episode, self.config.annotations, starts)
        self.agents = list(self.possible_agents)
        style = self.config.text_style
        self._views = [captioner.TextView(self.world, i, style) for i in range(len(self.possible_agents))]
        self._robot_steps = [0] * len(self.possible_agents)
        self._robot_commands = [0] * len(self.possible_agents)
        self._floor_plan = None
        feedback = {agent: "" for agent in self.agents}
        invalid = {agent: False for agent in self.agents}
        return self._observations(), self._infos(feedback, invalid)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        world, rule = self.world, self.reward_rule
        terminations = {agent: False for agent in self.agents}
        feedback, invalid, played = {}, {}, {}
        for agent in self.agents:
            robot_id = self.possible_agents.index(agent)
            action = actions.get(agent)
            command = commands.parse(action, world.names, world.parsed) if isinstance(action, str) else None
            if command is None:
                played[agent] = (None, 1)
                feedback[agent] = invalid_command_feedback(action, world.admissible_commands(robot_id))
                invalid[agent] = True
            else:
                result = world.execute(robot_id, command)
                played[agent] = (result, result.steps)
                feedback[agent], invalid[agent] = result.feedback, False
                terminations[agent] = command.verb == commands.MISSION_COMPLETE
            self._robot_steps[robot_id] += played[agent][1]
            self._robot_commands[robot_id] += 1
        terms = {agent: rule.terms(result, steps, world) for agent, (result, steps) in played.items()}
        rewards = {agent: rule.total(agent_terms) for agent, agent_terms in terms.items()}
        tidy_end = rule.ends_on_success and is_tidy(world)
        truncations = {}
        for agent in self.agents:
            robot_id = self.possible_agents.index(agent)
            terminations[agent] = terminations[agent] or tidy_end
            over = self._robot_steps[robot_id] >= self.max_steps or self._robot_commands[robot_id] >= self.max_commands
            truncations[agent] = over and not terminations[agent]
        observations = self._observations()
        infos = self._infos(feedback, invalid)
        for agent, agent_terms in terms.items():
            infos[agent]["reward_terms"] = agent_terms
        metrics = None
        for agent in self.agents:
            if terminations[agent] or truncations[agent]:
                metrics = metrics or episode_metrics(world)
                infos[agent]["episode_metrics"] = metrics
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "ansi":
            return "\n\n".join(
                f"{a}:\n{captioner.describe(self.world, i, self.config.text_style)}"
                for i, a in enumerate(self.possible_agents)
            )
        if self.render_mode == "rgb_array":
            if self._floor_plan is None:
                self._floor_plan = LabelledFloorPlan(self.world)
            return self._floor_plan.draw(self.world, self.possible_agents)
        return None

    def close(self) -> None:
        """Nothing to release."""

    # ----------------------------------------------------------------- assembly
    def _observations(self) -> dict[str, dict[str, str]]:
        observations = {}
        for agent in self.agents:
            robot_id = self.possible_agents.index(agent)
            text = self._views[robot_id].describe()
            observations[agent] = {
                "mission": captioner.MISSION,
                "text": check_text_fits(text, self._observation_spaces[agent]["text"], "observation text"),
            }
        return observations

    def _infos(self, feedback: dict[str, str], invalid: dict[str, bool]) -> dict[str, dict[str, Any]]:
        world = self.world
        success = is_tidy(world)
        misplaced = len(world.misplaced_at_start)
        progression = world.rearranged_count / misplaced if misplaced else 1.0
        return {
            agent: {
                "admissible_commands": world.admissible_commands(self.possible_agents.index(agent)),
                "invalid_action": invalid[agent],
                "feedback": feedback[agent],
                "success": success,
                "progression": progression,
            }
            for agent in self.agents
        }
