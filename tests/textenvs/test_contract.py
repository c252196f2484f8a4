"""The contract kit over every registered id (plus the corridor fixture env), the way minigrid's tests do."""

from __future__ import annotations

from pathlib import Path

import pytest

import textenvs
from textenvs import testing as kit

from .corridor_env import CORRIDOR_ID

REPO_ROOT = str(Path(__file__).resolve().parents[2])

#: Keyword arguments that keep each family's episodes short enough for the kit's checks.
TEST_KWARGS: dict[str, dict] = {
    "babyai_text": {"max_steps": 50, "tile_size": 8},
    "crafter_text": {"length": 50},
    "fastsim": {"max_steps": 50},
}


def _params() -> list:
    params = [pytest.param(CORRIDOR_ID, {}, id=CORRIDOR_ID)]
    for entry in textenvs.ENV_TABLE:
        missing = entry.missing_requirements()
        marks = [pytest.mark.skip(reason=f"needs {missing}: pip install 'textenvs[{entry.extra}]'")] if missing else []
        params.append(pytest.param(entry.id, TEST_KWARGS.get(entry.family, {}), id=entry.id, marks=marks))
    return params


PARAMS = _params()


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_gymnasium_check_env(env_id, kwargs):
    kit.check_gymnasium_api(env_id, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_info_keys_and_episode_metrics(env_id, kwargs):
    kit.check_info_keys(env_id, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_garbage_actions_are_noops(env_id, kwargs):
    kit.check_garbage_actions(env_id, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_rejected_reset_recovers(env_id, kwargs):
    kit.check_rejected_reset_recovers(env_id, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_obs_modes_agree(env_id, kwargs):
    kit.check_obs_modes_agree(env_id, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_render_modes(env_id, kwargs):
    kit.check_render_modes(env_id, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_vector_env_of_two(env_id, kwargs):
    kit.check_vector_env(env_id, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), PARAMS)
def test_expert_plays_an_episode(env_id, kwargs):
    kit.check_expert_episode(env_id, **kwargs)


def test_determinism_across_processes():
    """One pair of subprocesses hashes a seeded rollout of every id (cheaper than a pair per id)."""
    ids = [f"tests.textenvs.corridor_env:{CORRIDOR_ID}"]
    kwargs = {}
    for entry in textenvs.ENV_TABLE:
        if not entry.missing_requirements():
            ids.append(entry.id)
            kwargs[entry.id] = TEST_KWARGS.get(entry.family, {})
    kit.check_determinism_across_processes(ids, kwargs=kwargs, env={"PYTHONPATH": REPO_ROOT})
