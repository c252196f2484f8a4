"""Crafter's symbolic view for SB3: the local window of the semantic map, padded outside the world."""

from __future__ import annotations

import numpy as np

from textagents.sb3.wrappers import CRAFTER_VIEW, crafter_symbolic_observation
from textenvs.envs.crafter_text.constants import ID_TO_ITEM, INVENTORY_ITEMS, ITEM_TO_ID


def test_the_view_is_centred_on_the_player_and_padded_with_none_outside_the_world():
    semantic = np.full((6, 5), ITEM_TO_ID["grass"])
    semantic[0, 0], semantic[1, 0], semantic[0, 1] = ITEM_TO_ID["player"], ITEM_TO_ID["tree"], ITEM_TO_ID["water"]
    state = {"semantic": semantic, "player_pos": (0, 0), "inventory": {"health": 9, "wood": 3, "sapling": 0}}
    obs = crafter_symbolic_observation(state)
    assert obs["view"].shape == (*CRAFTER_VIEW, len(ID_TO_ITEM))
    assert (obs["view"].sum(-1) == 1).all()
    names = np.array(ID_TO_ITEM)[obs["view"].argmax(-1)]
    centre = (CRAFTER_VIEW[0] // 2, CRAFTER_VIEW[1] // 2)
    assert names[centre] == "player"
    assert names[centre[0] + 1, centre[1]] == "tree" and names[centre[0], centre[1] + 1] == "water"
    assert names[centre[0] - 1, centre[1]] == "None" and names[centre[0], centre[1] - 1] == "None"
    assert names[centre[0] + 4, centre[1] + 3] == "grass"
    expected = np.zeros(len(INVENTORY_ITEMS), np.float32)
    expected[INVENTORY_ITEMS.index("health")], expected[INVENTORY_ITEMS.index("wood")] = 1.0, 3 / 9
    np.testing.assert_allclose(obs["inventory"], expected)
