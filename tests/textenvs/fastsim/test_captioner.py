"""The text and the trajectory annotation in the paper's terms, checked against the paper's own example."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from textenvs.envs.fastsim.captioner import Captioner, annotate_trajectory, area_info, near_objects
from textenvs.envs.fastsim.simulator import load_world

#: The annotated trajectory printed in language-grounded QD's few-shot prompt
#: (get_trajectory_description.py): (pos with y flipped, semantics, colour), as its annotator produced them.
PAPER_EXAMPLE = [
    ((20.8, 49.2), ["to the north  of fridge"], "pink"),
    ((56.3, 58.7), [], "pink"),
    ((91.1, 75.6), [], "orange"),
    ((97.4, 118.4), ["to the north west of statue"], "orange"),
    ((65.1, 146.1), ["to the north  of fan"], "red"),
    ((33.1, 160.7), ["to the south east of cabinet"], "red"),
    ((25.7, 121.6), [], "yellow"),
    ((60.5, 101.7), ["on bathtub"], "yellow"),
    ((93.5, 114.1), ["to the north west of statue"], "orange"),
    ((65.6, 142.8), ["on fan"], "red"),
    ((35.5, 163.3), ["to the south east of cabinet"], "red"),
]


@pytest.fixture(scope="module")
def household(data_dir: Path):
    return load_world("household", data_dir)


@pytest.mark.parametrize(("pos", "semantics", "colour"), PAPER_EXAMPLE)
def test_annotation_matches_the_papers_example(household, pos, semantics, colour):
    px, py = pos[0], 200 - pos[1]
    assert list(near_objects(household.layout, px, py)) == semantics
    assert area_info(household, int(px), int(py))[0] == colour


def test_annotated_trajectory_samples_every_40th_step_and_the_last(household):
    # the paper's example positions, in real units (y down), one every 40 steps
    real = np.array([[x * 3, (200 - y) * 3] for (x, y), _, _ in PAPER_EXAMPLE])
    positions = np.repeat(real, 40, axis=0)[:400]
    entries = annotate_trajectory(household, positions)
    assert [e["timestep"] for e in entries] == [*range(0, 400, 40), 399]
    for entry, (pos, semantics, colour) in zip(entries, PAPER_EXAMPLE[:10], strict=False):
        assert entry["pos"] == pytest.approx(list(pos))
        assert list(entry["semantics"]) == semantics and entry["colors"][0] == colour
    assert set(entries[0]["colors"][1]) == {"right", "left", "down", "up"}


def test_area_info_finds_the_neighbouring_colours(household):
    colour, sides = area_info(household, 100, 100)  # orange tile, centre tile of the apartment
    assert colour == "orange"
    assert sides["up"][0] in {"green", "black"} and sides["left"][0] in {"yellow", "black"}


def test_description_names_tile_objects_goal_lasers_and_bumpers(household):
    pose = np.array([60.5 * 3, (200 - 101.7) * 3, 0.0], np.float32)  # on the bathtub, facing east
    sensors = np.array([100, 35.2, 12.0, 1, 0], np.float32)
    text = Captioner(household).describe(pose.tolist(), sensors.tolist(), hit_wall=True)
    assert "on a yellow tile, on bathtub" in text and "facing east" in text
    assert "The goal is" in text and "to the north" in text
    assert (
        "45 degrees to the right: nothing within range; ahead: a wall at 35; 45 degrees to the left: a wall at 12"
        in text
    )
    assert "Your left bumper is pressed." in text and "bumped into a wall" in text
    assert "  " not in text  # the paper's double spaces stay in the annotation only


def test_hardmaze_text_uses_regions_instead_of_tiles(data_dir: Path):
    world = load_world("hardmaze", data_dir)
    text = Captioner(world).describe([60.0, 450.0, 0.785], [100.0, 100.0, 100.0, 0.0, 0.0], False)
    assert text.startswith("You are at (20.0, 50.0) in the south-west part of the maze, facing south-east.")


def test_description_names_the_objects_the_papers_function_finds_near(household):
    # the captioner looks objects up by map cell: it must find exactly what near_objects finds, in order,
    # including on cell borders and just inside or outside the 30-pixel radius
    captioner = Captioner(household)
    rng = np.random.default_rng(0)
    borders = [(float(i), float(j)) for i in range(0, 201, 10) for j in range(0, 201, 10)]
    rims = [
        (ox + 29.999 * np.cos(a), oy + 29.999 * np.sin(a))
        for _, (ox, oy) in household.layout.objects
        for a in (0, 1, 2, 3)
    ]
    points = [*rng.uniform(0, 200, size=(3000, 2)).tolist(), *borders, *rims]
    found = 0
    for px, py in points:
        x, y = px / captioner.scale, py / captioner.scale
        text = captioner.describe([x, y, 0.0], [100.0, 100.0, 100.0, 0.0, 0.0], False)
        phrases = [
            " ".join(p.split()) for p in near_objects(household.layout, x * captioner.scale, y * captioner.scale)
        ]
        listed = text.split(" tile", 1)[1].split(", facing", 1)[0]
        assert listed == (
            "" if not phrases else ", " + (", ".join(phrases[:-1]) + " and " if phrases[1:] else "") + phrases[-1]
        )
        found += bool(phrases)
    assert found > 300
