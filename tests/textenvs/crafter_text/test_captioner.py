"""Captions against SmartPlay's and ELLM's recorded output, and on hand-built states for every style."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from textenvs.envs.crafter_text import balrog_contexts, caption, ellm_lines

from .states import make_state

#: A camp: tree 2 west, water 2 north 1 east, cow 2 south, a table at the view's south-east corner, and
#: stone just outside the view (5 east).
CAMP = {(-2, 0): "tree", (1, -2): "water", (0, 2): "cow", (4, 3): "table", (5, 0): "stone"}
CAMP_INVENTORY = {"food": 5, "energy": 8, "sapling": 1, "wood": 3, "wood_pickaxe": 1}


@pytest.fixture(scope="module")
def golden(data_dir):
    with gzip.open(data_dir / "crafter_text" / "captions.json.gz", "rt") as f:
        return json.load(f)


def test_every_golden_state_matches_smartplay_and_ellm(golden):
    samples = golden["samples"]
    assert len(samples) == 379
    smartplay = [i for i, s in enumerate(samples) if caption(s, "smartplay") != s["smartplay"]]
    ellm = [i for i, s in enumerate(samples) if caption(s, "ellm") != "\n".join(x for x in s["ellm"] if x)]
    assert smartplay == [] and ellm == []


def test_golden_ellm_lines_match_one_by_one(golden):
    for sample in golden["samples"][:50]:
        assert list(ellm_lines(sample)) == sample["ellm"]


def test_golden_id_table_is_ours(golden):
    from textenvs.envs.crafter_text.constants import ID_TO_ITEM

    assert list(ID_TO_ITEM) == golden["id_to_item"]


def test_smartplay_caption_of_a_hand_built_camp():
    state = make_state(CAMP, inventory=CAMP_INVENTORY, action="move_left")
    assert caption(state) == (
        "You took action move_west.\n\n"
        "You see:\n"
        "- water 3 steps to your north-east\n"
        "- grass 1 steps to your west\n"
        "- tree 2 steps to your west\n"
        "- table 7 steps to your south-east\n"
        "- cow 2 steps to your south\n\n"
        "You face grass at your front.\n\n"
        "Your status:\n- health: 9/9\n- food: 5/9\n- drink: 9/9\n- energy: 8/9\n\n"
        "Your inventory:\n- sapling: 1\n- wood: 3\n- wood_pickaxe: 1"
    )


def test_smartplay_nearest_instance_and_tie_break():
    # two trees at distance 2 (west and north) and one at 3: the westmost of the nearest is reported
    state = make_state({(0, -2): "tree", (-2, 0): "tree", (3, 0): "tree"}, facing=(0, -1))
    assert "- tree 2 steps to your west\n" in caption(state)
    assert caption(state).count("tree") == 1


def test_smartplay_right_after_reset_sleeping_and_dead():
    state = make_state(sleeping=True)
    assert caption(state) == (
        "You are sleeping, and will not be able take actions until energy is full.\n\n\n\n"
        "You see:\n- grass 1 steps to your west\n\nYou face grass at your front.\n\n"
        "Your status:\n- health: 9/9\n- food: 9/9\n- drink: 9/9\n- energy: 9/9\n\n"
        "You have nothing in your inventory."
    )
    dead = caption(make_state(inventory={"health": 0}, action="do"))
    assert dead.startswith("You took action do.You died.\n\n\n\nYou see:")


def test_near_the_map_edge_each_style_behaves_like_its_original():
    # two cells from the west edge the sliced view is empty: SmartPlay fails, BALROG sees nothing
    west = make_state(player_pos=(2, 30))
    assert caption(west, "smartplay") == "Error, you are out of the map."
    assert balrog_contexts(west)[0] == "You see nothing away from you.\n\nYou face nothing at your front."
    assert ellm_lines(west)[0] == "you see grass. you are targeting grass."
    # on the east edge, facing east, the target lies outside the clipped view: both fail
    east = make_state(player_pos=(63, 30), facing=(1, 0))
    assert caption(east, "smartplay") == "Error, you are out of the map."
    assert balrog_contexts(east)[0] == "Error, you are out of the map."
    assert ellm_lines(east)[0] == "you see grass."
    # near the south edge BALROG checks the target with x and y swapped and misses the stone ahead
    south = make_state({(1, 0): "stone"}, player_pos=(30, 62), facing=(1, 0))
    assert "You face stone at your front." in caption(south, "smartplay")
    assert balrog_contexts(south)[0].endswith("You face nothing at your front.")


def test_ellm_caption_of_a_hand_built_camp():
    state = make_state(CAMP, inventory=CAMP_INVENTORY, action="move_left")
    assert caption(state, "ellm") == (
        "you see cow, crafting table, grass, tree, and water. you are targeting grass.\n"
        "you have in your inventory plant, wood, wood_pickaxe.\n"
        "you feel hungry, sleepy."
    )


@pytest.mark.parametrize(
    ("things", "facing", "first_line"),
    [
        ({}, (0, 1), "you see grass. you are targeting grass."),
        ({(0, 1): "table"}, (0, 1), "you see crafting table, and grass. you are targeting table."),
        ({(1, 0): "cow"}, (1, 0), "you see cow, and grass. you are targeting cow."),
        ({(0, 1): "lava"}, (0, 1), "you see grass, and lava."),
        ({(0, 1): "arrow", (2, 2): "sand"}, (0, 1), "you see grass. you are targeting arrow."),
    ],
)
def test_ellm_first_line(things, facing, first_line):
    assert ellm_lines(make_state(things, facing=facing))[0] == first_line


def test_ellm_on_sand_alone_sees_nothing_and_feels_fine():
    state = make_state(ground="sand")
    assert ellm_lines(state) == ("you see .", "", "")
    assert caption(state, "ellm") == "you see ."


def test_ellm_lists_every_low_vital():
    state = make_state(inventory={"health": 3, "food": 8, "drink": 0, "energy": 1})
    assert ellm_lines(state)[2] == "you feel hurt, hungry, thirsty, sleepy."


def test_balrog_contexts_of_a_hand_built_camp():
    state = make_state(CAMP, inventory=CAMP_INVENTORY, action="move_left")
    long_term, short_term = balrog_contexts(state)
    assert long_term == (
        "You see:\n"
        "- tree 2 steps west\n"
        "- cow 2 steps south\n"
        "- water 2 steps north and 1 step east\n"
        "- table 3 steps south and 4 steps east\n\n"
        "You face nothing at your front."
    )
    assert short_term == (
        "Your status:\n- health: 9/9\n- food: 5/9\n- drink: 9/9\n- energy: 8/9\n\n"
        "Your inventory:\n- sapling: 1\n- wood: 3\n- wood_pickaxe: 1"
    )
    assert caption(state, "balrog") == f"{long_term}\n\n{short_term}"


def test_balrog_shows_only_the_edge_of_water_and_ranks_by_the_first_offset():
    lake = {(dx, dy): "water" for dx in (2, 3, 4) for dy in (-3, -2, -1)}
    # a tree 1 north and 4 west is written before a tree 3 west, and ranked by its "1 step north"
    state = make_state({**lake, (-4, -1): "tree", (-3, 0): "tree"}, facing=(1, 0))
    long_term, _ = balrog_contexts(state)
    assert "- water 1 step north and 2 steps east" in long_term
    assert "- tree 1 step north and 4 steps west" in long_term
    assert long_term.count("tree") == 1
    interior_only = make_state({**lake, (3, -2): "tree"})
    assert "water 1 step north and 2 steps east" in balrog_contexts(interior_only)[0]


def test_balrog_faces_a_shown_thing_and_says_when_nothing_is_seen():
    state = make_state({(0, 1): "stone"})
    long_term, _ = balrog_contexts(state)
    assert long_term == "You see:\n- stone 1 step south\n\nYou face stone at your front."
    assert balrog_contexts(make_state(ground="sand"))[0] == (
        "You see nothing away from you.\n\nYou face nothing at your front."
    )


def test_captions_are_pure_functions_of_the_state():
    state = make_state(CAMP, inventory=CAMP_INVENTORY)
    before = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in state.items()}
    reordered = {**state, "inventory": dict(reversed(list(state["inventory"].items())))}
    for style in ("smartplay", "ellm", "balrog"):
        assert caption(state, style) == caption(reordered, style) == caption(state, style)
    assert np.array_equal(state["semantic"], before["semantic"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"player_pos": (10, 10)}, "does not hold the player"),
        ({"semantic": np.zeros((4,), np.uint8)}, "2-D map"),
        ({"inventory": {"health": 9}}, "lacks the vitals"),
    ],
)
def test_bad_states_raise_naming_the_problem(change, message):
    with pytest.raises(ValueError, match=message):
        caption({**make_state(), **change})


def test_unknown_ids_and_styles_raise():
    state = make_state()
    state["semantic"][0, 0] = 40
    with pytest.raises(ValueError, match=r"unknown ids \[40\]"):
        caption(state)
    with pytest.raises(ValueError, match="'smartplay', 'ellm', 'balrog'"):
        caption(make_state(), "minecraft")
