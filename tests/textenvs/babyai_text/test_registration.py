"""The id table: static, complete against minigrid's registry, and helpful on unknown names."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import minigrid  # noqa: F401  (registers minigrid's BabyAI ids)
import pytest

import textenvs
from textenvs.envs.babyai_text import BabyAITextEnv, make_level
from textenvs.envs.babyai_text.registration import BKRL_LEVELS, GLAM_LEVELS, MINIGRID_LEVELS


def test_static_level_table_equals_minigrids_registry():
    registered = sorted(i for i in gym.registry if i.startswith("BabyAI-") and not i.startswith("BabyAI-Text-"))
    assert sorted(MINIGRID_LEVELS.values()) == registered
    for name, minigrid_id in MINIGRID_LEVELS.items():
        assert minigrid_id.startswith(f"BabyAI-{name}-v")


def test_every_level_has_an_id():
    ids = set(textenvs.registered_ids("babyai_text"))
    expected = {f"BabyAI-Text-{name}-v0" for name in (*MINIGRID_LEVELS, *GLAM_LEVELS, *BKRL_LEVELS)}
    assert ids == expected
    assert len(ids) == len(MINIGRID_LEVELS) + 6 + 17
    assert "BabyAI-Text-GoToLocal-PurpleKey-S30-v0" in ids and "BabyAI-Text-MixedTestLocal-v0" in ids


def test_import_textenvs_does_not_import_minigrid():
    code = "import sys, textenvs; assert 'minigrid' not in sys.modules, 'minigrid imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("make", [make_level, lambda name: BabyAITextEnv(level=name)])
def test_unknown_level_lists_the_closest_ids(make):
    with pytest.raises(ValueError, match="GoToLocl") as error:
        make("GoToLocl")
    assert "BabyAI-Text-GoToLocal-v0" in str(error.value)


def test_task_kind_per_instance_needs_a_mixed_level():
    with pytest.raises(ValueError, match="MixedTrainLocal, MixedTestLocal"):
        BabyAITextEnv(level="GoToLocal", task_kind_per_instance=True)


def test_bad_pixel_options_name_the_valid_ones():
    with pytest.raises(ValueError, match="'agent', 'full'"):
        BabyAITextEnv(pixel_view="top")
    with pytest.raises(ValueError, match="tile_size"):
        BabyAITextEnv(tile_size=0)
