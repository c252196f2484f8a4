"""The floor plans on a known scene: the 128x128 ``image`` observation and the labelled ``render()`` frame,
checked pixel by pixel where the robot, the objects and the receptacles must be drawn."""

from __future__ import annotations

import numpy as np
import pytest

from textenvs.envs.housekeep import floor_plan_view as view
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.renderer import (
    CORRECT_RGB,
    MISPLACED_RGB,
    RECEPTACLE_RGB,
    ROBOT_RGB,
    UNVISITED_RGB,
    FloorPlan,
)

from .test_world import SCENE, _episode

BED, SHELF_9, SHELF_13 = "bedroom 0 bed 11", "bedroom 0 shelf 9", "bedroom 0 shelf 13"
WHITE = (255, 255, 255)
PICK_HAIR_DRYER = ("go to hair dryer 1", "look at hair dryer 1", "pick up hair dryer 1")


def _env() -> HousekeepTextEnv:
    """The robot at the bathtub; a hair dryer misplaced on the bed, a plate on a shelf (correct)."""
    env = HousekeepTextEnv(scenes=[SCENE], obs_mode="text+pixels", render_mode="rgb_array")
    env.reset(seed=0, options={"episode": _episode({"hair_dryer_1": BED, "plate_1": SHELF_9})})
    return env


def _play(env: HousekeepTextEnv, commands) -> np.ndarray:
    obs = None
    for command in commands:
        obs, _, _, _, info = env.step(command)
        assert info["action_succeeded"], (command, info["feedback"])
    return obs["image"]


def _position(env: HousekeepTextEnv, name: str) -> tuple[float, float]:
    return next(r.position for r in env.world.receptacles if r.name == name)


class _Obs:
    """Pixels of the ``image`` observation: (row, col) of receptacles, of the first object right of one,
    and of a robot standing at one (drawn one robot width left of it)."""

    def __init__(self, env: HousekeepTextEnv):
        self.env, self.pixel = env, FloorPlan(env.world).projection.pixel

    def receptacle(self, name: str) -> tuple[int, int]:
        return self.pixel(_position(self.env, name))

    def object_on(self, name: str) -> tuple[int, int]:
        row, col = self.receptacle(name)
        return row, col + 4

    def robot_beside(self, name: str) -> tuple[int, int]:
        row, col = self.receptacle(name)
        return row, col - 8


def test_observation_has_the_contract_shape_and_the_render_is_larger():
    env = _env()
    image = env.step("look at bedroom 0")[0]["image"]
    assert image.shape == (128, 128, 3) and image.dtype == np.uint8 and env.observation_space["image"].contains(image)
    frame = env.render()
    assert frame.shape == (view.VIEW_HEIGHT, view.VIEW_WIDTH, 3) == (768, 1024, 3) and frame.dtype == np.uint8


def test_observation_shows_known_objects_receptacles_and_the_robot_with_what_it_holds():
    env = _env()
    at = _Obs(env)
    image = env.render_image()
    # Nothing is known yet: the bedroom is grey and its objects are not drawn; the robot stands by the bathtub.
    assert tuple(image[at.object_on(BED)]) == tuple(UNVISITED_RGB)
    assert tuple(image[at.object_on(SHELF_9)]) == tuple(UNVISITED_RGB)
    row, col = at.robot_beside("bathroom 0 bathtub 14")
    assert tuple(image[row, col]) == tuple(image[row - 2, col + 2]) == tuple(ROBOT_RGB)
    assert tuple(image[row - 3, col]) == tuple(image[row, col + 3]) == WHITE
    assert tuple(image[at.receptacle("bathroom 0 bathtub 14")]) == tuple(RECEPTACLE_RGB)

    image = _play(env, ["go to bedroom 0"])
    assert tuple(image[at.receptacle(BED)]) == tuple(RECEPTACLE_RGB)
    assert tuple(image[at.object_on(BED)]) == tuple(MISPLACED_RGB)
    assert tuple(image[at.object_on(SHELF_9)]) == tuple(CORRECT_RGB)
    assert tuple(image[at.object_on(SHELF_13)]) not in (tuple(CORRECT_RGB), tuple(MISPLACED_RGB))

    image = _play(env, PICK_HAIR_DRYER)
    row, col = at.robot_beside(BED)
    assert tuple(image[row, col]) == tuple(MISPLACED_RGB)  # the held object, in the robot's centre
    assert tuple(image[row - 2, col]) == tuple(ROBOT_RGB) and tuple(image[row - 3, col]) == WHITE
    assert tuple(image[at.object_on(BED)]) not in (tuple(CORRECT_RGB), tuple(MISPLACED_RGB))

    image = _play(env, ["go to " + SHELF_13, "look at " + SHELF_13, f"place hair dryer 1 on {SHELF_13}"])
    assert tuple(image[at.object_on(SHELF_13)]) == tuple(CORRECT_RGB)
    assert tuple(image[at.robot_beside(SHELF_13)]) == tuple(ROBOT_RGB)  # empty-handed


def _disc_pixels(frame: np.ndarray, center: tuple[float, float]) -> tuple[tuple, tuple]:
    """The centre and the rim (one pixel inside the right edge) of an object's disc in a labelled frame."""
    x, y = (round(v) for v in center)
    return tuple(frame[y, x]), tuple(frame[y, x + view.OBJECT_RADIUS - 1])


def test_labelled_frame_marks_robot_objects_and_receptacles_where_they_are():
    env = _env()
    world = env.world
    plan = view.LabelledFloorPlan(world)
    hair_dryer, plate = world.object_names.index("hair dryer 1"), world.object_names.index("plate 1")
    centers = plan.object_centers(world)
    bed_x, bed_y = plan.point(_position(env, BED))
    assert centers[hair_dryer][1] == bed_y and centers[hair_dryer][0] > bed_x + view.RECEPTACLE_HALF[0]

    frame = env.render()
    assert tuple(frame[bed_y, bed_x]) == view.RECEPTACLE_FILL
    # Not found yet: rings (white inside, rimmed in the object's colour).
    assert _disc_pixels(frame, centers[hair_dryer]) == (WHITE, tuple(MISPLACED_RGB))
    assert _disc_pixels(frame, centers[plate]) == (WHITE, tuple(CORRECT_RGB))
    x, y = plan.point(_position(env, "bathroom 0 bathtub 14"))
    assert tuple(frame[y, x - view.ROBOT_STEP - 5]) == tuple(ROBOT_RGB)  # beside the bathtub, facing right

    _play(env, ["go to bedroom 0"])
    frame = env.render()
    assert _disc_pixels(frame, centers[hair_dryer]) == (tuple(MISPLACED_RGB),) * 2
    assert _disc_pixels(frame, centers[plate]) == (tuple(CORRECT_RGB),) * 2

    _play(env, PICK_HAIR_DRYER)
    frame = env.render()
    robot = world.robots[0]
    x, y = bed_x - view.ROBOT_STEP, bed_y
    behind = 5 * np.cos(robot.heading), 5 * np.sin(robot.heading)
    assert tuple(frame[round(y - behind[1]), round(x - behind[0])]) == tuple(ROBOT_RGB)
    held = _disc_pixels(frame, (x + view.ROBOT_RADIUS, y - view.ROBOT_RADIUS))
    assert held[0] == tuple(MISPLACED_RGB)  # the held hair dryer, at the robot's top right
    assert _disc_pixels(frame, centers[hair_dryer])[0] != tuple(MISPLACED_RGB)  # no longer on the bed


def test_same_state_same_images():
    commands = ["go to bedroom 0", *PICK_HAIR_DRYER]
    first, second = _env(), _env()
    images = [_play(env, commands) for env in (first, second)]
    assert np.array_equal(*images)
    frames = [first.render(), first.render(), second.render()]
    assert np.array_equal(frames[0], frames[1]) and np.array_equal(frames[0], frames[2])
    assert not np.array_equal(frames[0], _env().render())


def test_multi_robot_frame_draws_robots_at_one_place_side_by_side():
    pytest.importorskip("pettingzoo", reason="needs the multiagent extra: pip install 'textenvs[multiagent]'")
    from textenvs.envs.housekeep.multi_robot import HousekeepMultiRobotEnv

    env = HousekeepMultiRobotEnv(n_robots=2, scenes=[SCENE], render_mode="rgb_array")
    env.reset(seed=0, options={"episode": _episode({"hair_dryer_1": BED, "plate_1": SHELF_9})})
    frame = env.render()
    assert frame.shape == (view.VIEW_HEIGHT, view.VIEW_WIDTH, 3) and frame.dtype == np.uint8
    x, y = view.LabelledFloorPlan(env.world).point(_position(env, "bathroom 0 bathtub 14"))
    for slot in (1, 2):  # both start at the bathtub, facing right
        assert tuple(frame[y, x - slot * view.ROBOT_STEP - 5]) == tuple(ROBOT_RGB)
