"""``FastsimNavEnv``: one libfastsim robot navigating a maze, with text and pixel observations."""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from textenvs.core.text_env import StepOutcome, TextEnv
from textenvs.envs.fastsim.captioner import Captioner
from textenvs.envs.fastsim.expert import WavefrontExpert
from textenvs.envs.fastsim.metrics import EpisodeTracker
from textenvs.envs.fastsim.renderer import image_shape, render_frame
from textenvs.envs.fastsim.simulator import COLLISION, HIT_WALL, RobotBatch, World, load_world

#: Upper bound of the text's length (the longest description is well under half of it).
TEXT_MAX_LENGTH = 1024
_STAND_STILL = np.zeros((1, 2))


#: The keys of ``reset(options=...)``: the robot's starting pose.
RESET_OPTIONS = ("pose",)


def reset_pose(options: dict[str, Any]) -> np.ndarray | None:
    """The ``pose`` reset option as float32 (x, y, theta), None for the layout's start; a ValueError when it
    is not three real numbers finite in float32 (the simulator's precision)."""
    pose = options.get("pose")
    if pose is None:
        return None
    try:
        raw = np.asarray(pose)
    except ValueError:  # a ragged sequence
        raw = None
    if raw is not None and raw.shape == (3,) and raw.dtype.kind in "iuf":
        with np.errstate(over="ignore"):  # beyond float32's range becomes inf, refused below
            values = raw.astype(np.float32)
        if np.isfinite(values).all():
            return values
    raise ValueError(f"reset option pose={pose!r} must be three finite numbers (x, y, theta)")


def nan_rows(wheels: np.ndarray) -> np.ndarray:
    """Which rows of wheel speeds hold a NaN: invalid actions, on which the robot stands still."""
    return np.isnan(wheels).any(axis=-1)


def sensor_space(world: World) -> spaces.Box:
    """fastsim_gym's observation: laser distances in [0, range], then the left and right bumpers (0/1)."""
    layout = world.layout
    n_lasers = len(layout.laser_angles_deg)
    high = np.array([layout.laser_range] * n_lasers + [1.0, 1.0], np.float32)
    return spaces.Box(np.zeros_like(high), high, dtype=np.float32)


def wheel_space(world: World) -> spaces.Box:
    speed = world.layout.max_speed
    return spaces.Box(-speed, speed, (2,), np.float32)


class FastsimNavEnv(TextEnv):
    """A two-wheeled robot with three lasers and two bumpers drives through a 2D maze to a goal.

    ## Description
    A clean reimplementation of libfastsim (sferes2) with fastsim_gym's settings, as used by novelty
    search and by language-grounded quality diversity (Salehi & Doncieux 2023), reproducing the C++ step
    by step (float32 physics, pixel-wise collisions, supercover laser rays). ``layout="hardmaze"`` is the
    deceptive hard maze; ``layout="household"`` is the paper's apartment with coloured floor tiles and
    twelve objects.

    ## Action Space
    ``Box(-4, 4, (2,), float32)``: left and right wheel displacements for this step (clipped to +-4,
    rounded to 0.1 first in the household layout, as the paper does). An action that is not two numbers,
    or holds a NaN, is invalid: the robot stands still (``move(0, 0)``) and ``info["invalid_action"]`` is True.

    ## Observation Space
    ``Dict``: ``"sensors"`` float32[5] (lasers at +45, 0, -45 degrees — right, front, left —, no hit => 100,
    clipped to [0, 100]; then left and right bumper), ``"mission"``, ``"text"`` (where the robot is in the
    paper's terms: tile colour, nearby objects with direction, heading, goal bearing, lasers, bumpers) and,
    with ``obs_mode`` pixels, ``"image"`` uint8[400, 400, 3] (top-down map, goal, robot, laser rays).

    ## Rewards
    1 on every step that ends with the robot within the goal's radius (3.5 units around (60, 60)), else 0.

    ## Starting State
    The robot at (60, 450) facing 45 degrees (south-east on the map, whose y axis points down); reset
    options may set ``{"pose": (x, y, theta)}``. There is no randomness.

    ## Episode End
    Truncation after ``max_steps`` steps (400); there is no termination, as in the paper's fixed-horizon
    evaluations. The last step's info holds ``bd`` (final x, y), ``trajectory_annotation`` (the paper's
    annotation of every 40th position plus the last) and ``episode_metrics`` (bd, fitness, reached_goal,
    task_solved — final distance < 42 —, final_distance_to_goal, steps).

    ## Info
    ``robot_pos`` [x, y, theta] (real units, y down), ``collision`` (libfastsim's flag: any collision since
    reset), ``hit_wall`` (this step's move was refused by a wall), plus the standard keys.

    ## Arguments
    ``layout`` ("hardmaze" | "household"), ``max_steps`` (400), ``obs_mode``, ``render_mode``,
    ``data_dir`` (where the maps are; default: textenvs' data lookup).

    ## Version History
    * v0: first version; matches libfastsim @ bc1cc8a on recorded traces.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 30}
    reset_options = RESET_OPTIONS

    def __init__(
        self,
        layout: str = "hardmaze",
        max_steps: int = 400,
        obs_mode: str = "text",
        render_mode: str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
    ):
        self.world = load_world(layout, data_dir)
        self.layout = self.world.layout
        self.robots = RobotBatch(self.world, 1)
        # the robot's rows of the batch's arrays (updated in place by every step) and its wheel speeds
        self._state, self._sensors, self._flags = self.robots.state[0], self.robots.sensors[0], self.robots.flags[0]
        self._wheels = np.zeros((1, 2))
        self.captioner = Captioner(self.world)
        self.tracker = EpisodeTracker(self.world, 1, max_steps)
        self.max_steps = max_steps
        super().__init__(
            vocabulary=None,
            text_max_length=TEXT_MAX_LENGTH,
            image_shape=image_shape(self.world),
            native_spaces={"sensors": sensor_space(self.world)},
            obs_mode=obs_mode,
            render_mode=render_mode,
            action_space=wheel_space(self.world),
        )

    # ----------------------------------------------------------------- the world
    def decode_action(self, action: Any) -> tuple[Any | None, str]:
        if type(action) is np.ndarray and action.shape == (2,) and action.dtype.kind == "f":
            self._wheels[0] = action  # the common case, without allocating; the same float64 values
            wheels = self._wheels
        else:
            try:
                # shaped as RobotBatch.step takes the actions of its one robot
                wheels = np.asarray(action, dtype=np.float64).reshape(1, 2)
            except (TypeError, ValueError):
                wheels = None
        if wheels is None or nan_rows(wheels)[0]:
            speed = self.layout.max_speed
            return (
                None,
                f"{action!r} is not a valid action; expected 2 wheel speeds (left, right) in [-{speed}, {speed}].",
            )
        return wheels, ""

    def _reset_world(self, options: dict[str, Any]) -> dict[str, Any]:
        self.robots.reset(pose=reset_pose(options))
        pose = self._state.tolist()
        self.tracker.reset(0, pose[0], pose[1])
        return self._family_info(pose)

    def _step_world(self, command: Any) -> StepOutcome:
        self.robots.step(_STAND_STILL if command is None else command)
        pose = self._state.tolist()
        x, y = pose[0], pose[1]
        reward = self.tracker.record(0, x, y)
        truncated = self.tracker.truncated(0)
        info = self._family_info(pose)
        if truncated:
            info["bd"] = [x, y]
            info["trajectory_annotation"] = self.tracker.annotation(0)
        return StepOutcome(reward, False, truncated, "", info)

    def _position(self) -> tuple[float, float]:
        x, y, _ = self._state.tolist()
        return x, y

    def _family_info(self, pose: list[float]) -> dict[str, Any]:
        flags = self._flags.tolist()
        return {"robot_pos": pose, "collision": flags[COLLISION], "hit_wall": flags[HIT_WALL]}

    # ----------------------------------------------------------------- views
    def native_observation(self) -> dict[str, Any]:
        return {"sensors": self._sensors.copy()}

    def mission(self) -> str:
        return self.layout.mission

    def describe(self) -> str:
        return self.captioner.describe(self._state.tolist(), self._sensors.tolist(), self._flags[HIT_WALL])

    def render_image(self) -> np.ndarray:
        return render_frame(self.world, self.robots.state[0], self.robots.lasers[0])

    def admissible_commands(self) -> list[str]:
        return []

    # ----------------------------------------------------------------- evaluation
    def success(self) -> bool:
        return self.tracker.reached[0]

    def progression(self) -> float:
        return self.tracker.progression(0, *self._position())

    def episode_metrics(self) -> dict[str, Any]:
        return self.tracker.episode_metrics(0, *self._position())

    def expert(self) -> WavefrontExpert:
        return WavefrontExpert(self.world)
