"""``FastsimVectorEnv``: N robots of one world stepped by one kernel call (Gymnasium ``VectorEnv``)."""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from textenvs.core.spaces import OBS_MODES, check_choice, image_space, text_space
from textenvs.core.text_env import MISSION_MAX_LENGTH, check_reset_options
from textenvs.core.vector import autoreset_choice, restart_in_same_step
from textenvs.envs.fastsim.captioner import Captioner
from textenvs.envs.fastsim.env import (
    RESET_OPTIONS,
    TEXT_MAX_LENGTH,
    nan_rows,
    reset_pose,
    sensor_space,
    wheel_space,
)
from textenvs.envs.fastsim.metrics import EpisodeTracker
from textenvs.envs.fastsim.renderer import image_shape, render_frame
from textenvs.envs.fastsim.simulator import COLLISION, HIT_WALL, RobotBatch, load_world


class FastsimVectorEnv(VectorEnv):
    """``num_envs`` fastsim robots in one world, stepped together; each behaves exactly as one
    ``FastsimNavEnv`` (same observations, rewards and infos). ``autoreset_mode`` as Gymnasium's
    ``SyncVectorEnv``: ``NEXT_STEP`` (the default) or ``SAME_STEP`` (the last observation and info in
    ``final_obs`` / ``final_info``).

    Observations batch the single env's: ``sensors`` float32[n, 5], ``mission`` and ``text`` tuples of
    strings, ``image`` uint8[n, H, W, 3]. Infos are arrays over the robots: ``robot_pos`` float32[n, 3],
    ``collision``, ``hit_wall``, ``success``, ``invalid_action`` bool[n], ``progression`` float64[n]; on
    an episode's last step ``bd``, ``trajectory_annotation`` and ``episode_metrics`` with their ``_key``
    masks. ``obs_mode="pixels"`` skips the text; for raw speed step a ``RobotBatch`` directly.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": ["ansi", "rgb_array"],
        "render_fps": 30,
    }

    def __init__(
        self,
        num_envs: int,
        layout: str = "hardmaze",
        max_steps: int = 400,
        obs_mode: str = "text",
        render_mode: str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ):
        self.obs_mode = check_choice("obs_mode", obs_mode, OBS_MODES)
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_choice(autoreset_mode)}
        if render_mode is not None:
            check_choice("render_mode", render_mode, tuple(self.metadata["render_modes"]))
        self.render_mode = render_mode
        self.world = load_world(layout, data_dir)
        self.num_envs = num_envs
        self.robots = RobotBatch(self.world, num_envs)
        self.captioner = Captioner(self.world)
        self.tracker = EpisodeTracker(self.world, num_envs, max_steps)
        self._autoreset = np.zeros(num_envs, bool)
        single: dict[str, spaces.Space] = {
            "sensors": sensor_space(self.world),
            "mission": text_space(MISSION_MAX_LENGTH),
        }
        if obs_mode != "pixels":
            single["text"] = text_space(TEXT_MAX_LENGTH)
        if obs_mode != "text":
            single["image"] = image_space(*image_shape(self.world))
        self.single_observation_space = spaces.Dict(single)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.single_action_space = wheel_space(self.world)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        pose = reset_pose(check_reset_options(options, RESET_OPTIONS))
        super().reset(seed=seed if not isinstance(seed, list) else seed[0])
        self.robots.reset(pose=pose)
        for r in range(self.num_envs):
            self.tracker.reset(r, *self._position(r))
        self._autoreset[:] = False
        stopped = np.zeros(self.num_envs, bool)
        return self._observation(), self._info(stopped, stopped)

    def step(self, actions: Any) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        restarting = self._autoreset.copy()
        if restarting.any():
            self.robots.reset(mask=restarting)
        wheels = np.array(actions, np.float64).reshape(self.num_envs, 2)
        invalid = nan_rows(wheels) & ~restarting
        wheels[invalid] = 0.0  # the robot stands still, as FastsimNavEnv's invalid action
        self.robots.step(wheels, mask=~restarting)
        rewards = np.zeros(self.num_envs)
        truncated = np.zeros(self.num_envs, bool)
        for r in range(self.num_envs):
            if restarting[r]:
                self.tracker.reset(r, *self._position(r))
            else:
                rewards[r] = self.tracker.record(r, *self._position(r))
                truncated[r] = self.tracker.truncated(r)
        terminated = np.zeros(self.num_envs, bool)
        batch = self._observation(), self._info(truncated, invalid)
        if self.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP:
            self._autoreset = truncated.copy()
        else:
            batch = restart_in_same_step(batch, truncated, self._restart)
        return batch[0], rewards, terminated, truncated, batch[1]

    def _restart(self, rows: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        """``rows``' robots back at the start, and every robot's observation and info after (``SAME_STEP``)."""
        mask = np.zeros(self.num_envs, bool)
        mask[rows] = True
        self.robots.reset(mask=mask)
        for r in rows:
            self.tracker.reset(r, *self._position(r))
        stopped = np.zeros(self.num_envs, bool)
        return self._observation(), self._info(stopped, stopped)

    def _position(self, row: int) -> tuple[float, float]:
        return float(self.robots.state[row, 0]), float(self.robots.state[row, 1])

    def _observation(self) -> dict[str, Any]:
        obs: dict[str, Any] = {
            "sensors": self.robots.sensors.copy(),
            "mission": (self.world.layout.mission,) * self.num_envs,
        }
        if self.obs_mode != "pixels":
            obs["text"] = self._texts(obs["sensors"])
        if self.obs_mode != "text":
            obs["image"] = np.stack([self._frame(r) for r in range(self.num_envs)])
        return obs

    def _info(self, ended: np.ndarray, invalid: np.ndarray) -> dict[str, Any]:
        state = self.robots.state
        info: dict[str, Any] = {
            "robot_pos": state.copy(),
            "collision": self.robots.flags[:, COLLISION].copy(),
            "hit_wall": self.robots.flags[:, HIT_WALL].copy(),
            "success": np.array(self.tracker.reached),
            "progression": np.array([self.tracker.progression(r, *self._position(r)) for r in range(self.num_envs)]),
            "invalid_action": invalid,
        }
        if ended.any():
            rows = np.flatnonzero(ended)
            bd = np.zeros((self.num_envs, 2))
            bd[rows] = state[rows, :2]
            annotations = np.full(self.num_envs, None, dtype=object)
            metrics = np.full(self.num_envs, None, dtype=object)
            for r in rows:
                annotations[r] = self.tracker.annotation(r)
                metrics[r] = self.tracker.episode_metrics(r, *self._position(r))
            info.update(bd=bd, trajectory_annotation=annotations, episode_metrics=metrics)
            info.update(_bd=ended.copy(), _trajectory_annotation=ended.copy(), _episode_metrics=ended.copy())
        return info

    def _texts(self, sensors: np.ndarray) -> tuple[str, ...]:
        state, sensors, hit_wall = self.robots.state.tolist(), sensors.tolist(), self.robots.flags[:, HIT_WALL].tolist()
        return tuple(self.captioner.describe(state[r], sensors[r], hit_wall[r]) for r in range(self.num_envs))

    def _frame(self, row: int) -> np.ndarray:
        return render_frame(self.world, self.robots.state[row], self.robots.lasers[row])

    def render(self) -> tuple[Any, ...] | None:
        if self.render_mode == "rgb_array":
            return tuple(self._frame(r) for r in range(self.num_envs))
        if self.render_mode == "ansi":
            return self._texts(self.robots.sensors)
        return None
