"""Any textenvs id as an OpenEnv environment (``pip install "textagents[openenv]"``).

OpenEnv (PyPI ``openenv``) serves environments over HTTP and WebSocket (``/reset``, ``/step``, ``/state``,
``/schema``, ``/health``, ``/ws``) to typed or generic clients; TRL's ``GRPOTrainer`` and other trainers
talk to it. Here:

- ``TextEnvsEnvironment(env_id, **env_kwargs)``: OpenEnv's ``Environment`` over ``gym.make(env_id)``
  (text commands for every family, ``make_for_llm``); ``reset(seed=...)`` and ``step(TextEnvsAction(command))``
  return a ``TextEnvsObservation``: the env's text, mission, admissible commands, feedback, flags and, on the
  last step, ``episode_metrics``; reward and done as OpenEnv carries them.
- ``create_app(env_id)``: the FastAPI app OpenEnv's server makes for it (one env per WebSocket session);
  ``serve(env_id, host, port)`` runs it (``textagents openenv-serve ENV_ID``).
- ``TextEnvsClient(base_url=...)``: the typed client; OpenEnv's ``GenericEnvClient`` works too, with
  ``{"command": "go forward"}`` actions and plain-dict observations.

Commands are data: an unknown one is the env's invalid no-op (``invalid_action``, ``feedback``), never an
error. Only the text parts of an observation travel (no pixels).
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import Field

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.http_server import create_app as _create_openenv_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError('the OpenEnv adapter needs the openenv package: pip install "textagents[openenv]"') from error

from textagents.agents.motion import make_for_llm
from textagents.agents.prompts import mission_of, text_of
from textenvs.trajectories.record import plain


class TextEnvsAction(Action):
    """One text command (``info["admissible_commands"]`` lists the valid ones)."""

    command: str = Field(..., description="the command, e.g. 'go forward'")


class TextEnvsObservation(Observation):
    """What the env shows after a reset or a step (text parts only)."""

    text: str = Field(default="", description="the env's text observation")
    mission: str = Field(default="", description="the goal, '' for envs without one")
    admissible_commands: list[str] = Field(default_factory=list, description="the commands valid now")
    feedback: str = Field(default="", description="what the env says about the last command")
    invalid_action: bool = Field(default=False, description="the last command named no valid command")
    success: bool = Field(default=False)
    progression: float = Field(default=0.0, description="progress towards the goal, in [0, 1]")
    truncated: bool = Field(default=False, description="the episode ended on its step limit")
    episode_metrics: dict[str, Any] | None = Field(default=None, description="the family's metrics, last step")


class TextEnvsState(State):
    """The episode's id, step count, env id, seed and return so far."""

    env_id: str = ""
    seed: int | None = None
    episode_return: float = 0.0
    done: bool = False


class TextEnvsEnvironment(Environment):
    """OpenEnv's ``Environment`` over one textenvs env; ``env_kwargs`` go to ``gym.make``."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session gets its own instance, nothing is shared

    def __init__(self, env_id: str, **env_kwargs: Any):
        super().__init__()
        self.env_id = env_id
        self.env = make_for_llm(env_id, **env_kwargs)
        self._state = TextEnvsState(env_id=env_id)
        self._started = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextEnvsObservation:
        """Reset with ``seed``; other keyword arguments are the env's reset ``options`` (a family's documented
        keys; any other raises ``ValueError`` naming the valid ones)."""
        obs, info = self.env.reset(seed=seed, options=kwargs or None)
        self._state = TextEnvsState(episode_id=episode_id, step_count=0, env_id=self.env_id, seed=seed)
        self._started = True
        return observation(obs, info, reward=0.0, done=False)

    def step(self, action: TextEnvsAction, timeout_s: float | None = None, **kwargs: Any) -> TextEnvsObservation:
        if not self._started:
            raise RuntimeError(f"{self.env_id}: call reset before step")
        if self._state.done:
            raise RuntimeError(f"{self.env_id}: the episode is over; call reset to start another")
        obs, reward, terminated, truncated, info = self.env.step(action.command)
        self._state.step_count += 1
        self._state.episode_return += float(reward)
        self._state.done = bool(terminated or truncated)
        return observation(obs, info, reward=float(reward), done=self._state.done, truncated=bool(truncated))

    @property
    def state(self) -> TextEnvsState:
        return self._state

    def close(self) -> None:
        self.env.close()


def observation(
    obs: Any, info: dict[str, Any], reward: float, done: bool, truncated: bool = False
) -> TextEnvsObservation:
    """A textenvs ``(obs, info)`` as a ``TextEnvsObservation``."""
    metrics = info.get("episode_metrics")
    return TextEnvsObservation(
        text=text_of(obs),
        mission=mission_of(obs),
        admissible_commands=list(info.get("admissible_commands") or []),
        feedback=str(info.get("feedback", "")),
        invalid_action=bool(info.get("invalid_action", False)),
        success=bool(info.get("success", False)),
        progression=float(info.get("progression", 0.0)),
        truncated=truncated,
        episode_metrics=plain(metrics) if metrics is not None else None,
        reward=reward,
        done=done,
    )


def create_app(env_id: str, max_sessions: int = 8, **env_kwargs: Any) -> Any:
    """OpenEnv's FastAPI app serving ``env_id``, one env per session, at most ``max_sessions`` at once."""
    make_for_llm(env_id, **env_kwargs).close()  # an unknown id or bad kwargs fail here, not per session
    return _create_openenv_app(
        functools.partial(TextEnvsEnvironment, env_id, **env_kwargs),
        TextEnvsAction,
        TextEnvsObservation,
        env_name=env_id,
        max_concurrent_envs=max_sessions,
        state_cls=TextEnvsState,
    )


def serve(env_id: str, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 8) -> None:
    """Serve ``env_id`` with uvicorn until interrupted."""
    import uvicorn

    app = create_app(env_id, max_sessions=max_sessions)
    print(f"serving {env_id} (OpenEnv) at http://{host}:{port}; Ctrl-C stops", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


class TextEnvsClient(EnvClient[TextEnvsAction, TextEnvsObservation, TextEnvsState]):
    """Typed OpenEnv client of a served textenvs id: ``TextEnvsClient(base_url=url).sync()`` for blocking
    ``reset(seed=...)`` / ``step(TextEnvsAction(command=...))`` / ``state()``."""

    def _step_payload(self, action: TextEnvsAction) -> dict[str, Any]:
        return {"command": action.command}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TextEnvsObservation]:
        fields = {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done")}
        obs = TextEnvsObservation.model_validate({k: v for k, v in fields.items() if v is not None})
        return StepResult(observation=obs, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> TextEnvsState:
        return TextEnvsState.model_validate(payload)
