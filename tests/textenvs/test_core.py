"""The contract's shared pieces: spaces, commands, TextEnv edges, registration and make_vec."""

from __future__ import annotations

import re
import string

import gymnasium as gym
import numpy as np
import pytest

import textenvs
from textenvs.core import CommandVocabulary, EnvEntry, make_vec, normalize_command
from textenvs.core.registration import LazyEntryPoint, register_envs, unknown_id_error

from .corridor_env import CORRIDOR_ID, CorridorEnv


def test_normalize_command():
    assert normalize_command("  Turn   LEFT. ") == "turn left"
    assert normalize_command("pick up!") == "pick up"


@pytest.mark.parametrize("look_alike", ["PIC\u212a UP", "pick\u00a0up", "pick \u0443p", "p\u0131ck up"])
def test_unicode_look_alikes_name_no_command(look_alike: str):
    # the Kelvin sign lower-cases to an ASCII "k" and \s matches a no-break space: neither may fold
    assert CommandVocabulary(["pick up", "drop"]).parse(look_alike) is None


def test_vocabulary_parses_case_and_aliases():
    vocab = CommandVocabulary(["Move West", "Do"], aliases={"move_left": "Move West"})
    assert vocab.parse("move west") == "Move West"
    assert vocab.parse("MOVE_LEFT") == "Move West"
    assert vocab.parse("move") is None
    with pytest.raises(ValueError, match="duplicate"):
        CommandVocabulary(["a", "a"])
    with pytest.raises(ValueError, match="unknown command"):
        CommandVocabulary(["a"], aliases={"b": "c"})


@pytest.mark.parametrize(("kwarg", "value"), [("obs_mode", "rgb"), ("action_mode", "continuous")])
def test_bad_mode_names_value_and_choices(kwarg, value):
    with pytest.raises(ValueError, match=rf"{kwarg}='{value}'.*'text'"):
        CorridorEnv(**{kwarg: value})


def test_text_mode_never_renders():
    env = CorridorEnv(obs_mode="text")
    env.render_image = lambda: pytest.fail("text mode rendered an image")
    obs, _ = env.reset(seed=0)
    env.step("go right")
    assert set(obs) == {"mission", "text", "position"}


def test_pixels_mode_has_image_and_mission_only():
    obs, _ = CorridorEnv(obs_mode="pixels").reset(seed=0)
    assert set(obs) == {"mission", "image", "position"}
    assert obs["image"].shape == (8, 40, 3)


def test_discrete_mode_indexes_the_command_list():
    env = CorridorEnv(action_mode="discrete")
    assert env.action_space == gym.spaces.Discrete(3)
    env.reset(seed=0)
    start = env.position
    _, _, _, _, info = env.step(1)
    assert env.position == start + 1 and not info["invalid_action"]
    _, _, _, _, info = env.step(7)
    assert info["invalid_action"] and "0..2" in info["feedback"]


def test_invalid_text_command_costs_a_step_and_lists_valid_commands():
    env = CorridorEnv(max_steps=1)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("jump")
    assert info["invalid_action"] and truncated and not terminated and reward == 0
    assert "'jump' is not a valid command" in info["feedback"]
    assert "go left, go right, wait" in info["feedback"]


@pytest.mark.parametrize(
    ("options", "message"),
    [({"pose": 1}, "unknown reset option\\(s\\) 'pose'; valid options: none"), ([("seed", 1)], "must be a dict")],
)
def test_bad_reset_options_are_refused_before_the_env_changes(options, message):
    env = CorridorEnv()
    env.reset(seed=3)
    before = (env.position, env.np_random.bit_generator.state)
    with pytest.raises(ValueError, match=message):
        env.reset(seed=4, options=options)
    assert (env.position, env.np_random.bit_generator.state) == before


def test_overlong_text_fails_loudly():
    env = CorridorEnv()
    env.describe = lambda: "x" * 81
    with pytest.raises(ValueError, match=r"81 characters.*at most 80"):
        env.reset(seed=0)


def test_non_printable_text_fails_loudly():
    env = CorridorEnv()
    env.describe = lambda: "caf\u00e9"
    with pytest.raises(ValueError, match="printable"):
        env.reset(seed=0)


def test_text_spaces_are_printable():
    env = CorridorEnv()
    assert env.observation_space["text"].character_set == frozenset(string.printable)
    assert env.action_space.min_length == 0


def test_unknown_kwarg_names_valid_ones():
    with pytest.raises(TypeError, match=r"'max_step'.*did you mean 'max_steps'.*valid keyword arguments: max_steps"):
        gym.make(CORRIDOR_ID, max_step=3)


def test_missing_optional_dependency_names_the_extra():
    entry = EnvEntry("Nope-v0", "nowhere:Env", "nope", requires=("surely_not_installed_module",), extra="nope")
    with pytest.raises(ImportError, match=r"textenvs\[nope\]"):
        LazyEntryPoint(entry, entry.entry_point)()
    assert entry.missing_requirements() == ["surely_not_installed_module"]


def test_register_envs_is_idempotent():
    entry = EnvEntry("TestCorridorAgain-v0", "tests.textenvs.corridor_env:CorridorEnv", "test")
    register_envs([entry])
    register_envs([entry])
    assert gym.make("TestCorridorAgain-v0").unwrapped.max_steps == 12


def test_unknown_id_lists_closest():
    error = unknown_id_error("BabyAI-Text-GoToLocl-v0", ["BabyAI-Text-GoToLocal-v0", "Crafter-Text-v0"])
    assert "BabyAI-Text-GoToLocal-v0" in str(error) and "Crafter-Text-v0" not in str(error)


def test_unknown_id_error_claims_no_count_that_textenvs_list_would_contradict():
    """Counting gym.registry (Gymnasium's and minigrid's ids too) said 193 where `textenvs list` shows 130."""
    message = str(unknown_id_error("Nope-v0", gym.registry))
    assert "`textenvs list` shows every textenvs id." in message
    assert not re.search(r"\d+ ids", message), message


def test_registered_ids_are_unique_and_grouped_by_family():
    ids = textenvs.registered_ids()
    assert len(ids) == len(set(ids))
    for entry in textenvs.ENV_TABLE:
        assert entry.id in textenvs.registered_ids(entry.family)
        assert entry.id in gym.registry


def test_async_shared_memory_corrupts_text_regression():
    """Why make_vec forces shared_memory=False: Gymnasium writes Text into shared memory as '000…'."""
    raw = gym.make_vec(CORRIDOR_ID, 2, vectorization_mode="async", vector_kwargs={"shared_memory": True})
    try:
        obs, _ = raw.reset(seed=0)
        assert set(obs["text"][0]) == {"0"}, "Gymnasium fixed the shared-memory Text bug; revisit make_vec"
    finally:
        raw.close()
    vec = make_vec(CORRIDOR_ID, 2, vectorization_mode="async")
    try:
        obs, _ = vec.reset(seed=0)
        assert obs["text"][0].startswith("You are in cell")
        obs, *_ = vec.step(("go right", "wait"))
        assert all(t.startswith("You are in cell") for t in obs["text"])
    finally:
        vec.close()
    with pytest.raises(ValueError, match="shared_memory"):
        make_vec(CORRIDOR_ID, 2, vectorization_mode="async", vector_kwargs={"shared_memory": True})
    with pytest.raises(ValueError, match="vectorization_mode='threads'"):
        make_vec(CORRIDOR_ID, 2, vectorization_mode="threads")


def test_sync_vector_env_batches_text():
    vec = make_vec(CORRIDOR_ID, 2)
    obs, _ = vec.reset(seed=3)
    assert isinstance(obs["text"], tuple) and len(obs["text"]) == 2
    assert np.asarray(obs["position"]).shape == (2,)
    vec.close()


def test_is_printable_matches_the_charset():
    from textenvs.core.spaces import PRINTABLE, is_printable

    for code in range(300):
        assert is_printable(f"ab{chr(code)}c") == (chr(code) in PRINTABLE), code
    assert is_printable("") and is_printable(PRINTABLE)
