"""A textenvs id as an OpenEnv environment: in process, and served on loopback to OpenEnv's clients, an
episode plays end to end with the same observations and rewards as the env itself."""

from __future__ import annotations

import socket
import threading
import time

import gymnasium as gym
import pytest

import textenvs  # noqa: F401  (registers the ids)

pytest.importorskip("openenv", reason="the OpenEnv adapter is the extra textagents[openenv]")

from openenv.core import GenericEnvClient

from textagents.hub.openenv_env import (
    TextEnvsAction,
    TextEnvsClient,
    TextEnvsEnvironment,
    create_app,
)

ENV_ID = "BabyAI-Text-GoToObjS4-v0"


def expert_episode(seed: int) -> list[tuple[str, str, float, bool]]:
    """(command, text after it, reward, done) of the expert's episode on ``seed``."""
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=seed)
    expert = env.unwrapped.expert()
    expert.reset(obs, info)
    steps, done = [], False
    while not done:
        command = expert.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(command)
        done = terminated or truncated
        steps.append((command, obs["text"], float(reward), done))
    return steps


def test_environment_plays_an_episode_in_process():
    env = TextEnvsEnvironment(ENV_ID)
    with pytest.raises(RuntimeError, match="call reset before step"):
        env.step(TextEnvsAction(command="go forward"))
    first = env.reset(seed=3)
    reference = gym.make(ENV_ID).reset(seed=3)[0]
    assert (first.text, first.mission, first.done) == (reference["text"], reference["mission"], False)
    assert "go forward" in first.admissible_commands
    garbage = env.step(TextEnvsAction(command="rm -rf / ; jump"))
    assert garbage.invalid_action and "is not a valid command" in garbage.feedback and garbage.reward == 0.0
    env.reset(seed=3)
    steps = expert_episode(3)
    for command, text, reward, done in steps:
        obs = env.step(TextEnvsAction(command=command))
        assert (obs.text, obs.reward, obs.done) == (text, reward, done)
    assert obs.success and obs.episode_metrics["success"] is True
    assert env.state.step_count == len(steps) and env.state.episode_return == pytest.approx(steps[-1][2])
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(TextEnvsAction(command="go forward"))


@pytest.fixture
def served_url():
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(ENV_ID, max_sessions=2), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the OpenEnv server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=20)
    sock.close()


def test_typed_and_generic_clients_play_an_episode_over_the_server(served_url):
    steps = expert_episode(5)
    with TextEnvsClient(base_url=served_url).sync() as client:
        first = client.reset(seed=5)
        assert first.observation.text == gym.make(ENV_ID).reset(seed=5)[0]["text"] and not first.done
        for command, text, reward, done in steps:
            result = client.step(TextEnvsAction(command=command))
            assert (result.observation.text, result.reward, result.done) == (text, reward, done)
        assert result.observation.success and result.observation.episode_metrics["steps"] == len(steps)
        state = client.state()
        assert (state.env_id, state.seed, state.step_count, state.done) == (ENV_ID, 5, len(steps), True)
    with GenericEnvClient(base_url=served_url).sync() as generic:
        generic.reset(seed=5)
        result = generic.step({"command": "\u0433\u043e forward"})
        assert result.observation["invalid_action"] and result.reward == 0.0 and not result.done
        result = generic.step({"command": steps[0][0]})
        assert result.observation["text"] == steps[0][1]


def test_unknown_env_id_fails_when_the_app_is_made():
    with pytest.raises(ValueError, match="Unknown environment id 'BabyAI-Text-Nope-v0'"):
        create_app("BabyAI-Text-Nope-v0")


def test_serve_command_refuses_an_unknown_id(capsys):
    from textagents.cli import main

    assert main(["openenv-serve", "BabyAI-Text-Nope-v0"]) == 2
    assert "Unknown environment id 'BabyAI-Text-Nope-v0'" in capsys.readouterr().err
