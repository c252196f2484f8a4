"""Benchmark suites: the YAML format, its validation before any episode runs, and the plan of episodes.

A suite (``benchmarks/suites/*.yaml``; ``docs/bench.md`` describes every key)::

    name: default
    seeds: {start: 0, count: 10}     # or a list of ints; the default for every env
    max_steps: 100000                # safety limit per episode (envs end their own episodes)
    envs:
      - id: BabyAI-Text-GoToLocal-v0
        kwargs: {max_steps: 64}      # checked against the env's constructor
        seeds: [0, 1, 2]             # optional, overrides the suite's
        name: GoToLocal-64           # optional, needed when an id appears twice
    agents:
      - {name: random, kind: random}
      - {name: ppo, kind: sb3, run: ../baselines/ppo, envs: [BabyAI-Text-GoToRedBallGrey-v0]}
    prices:                          # optional: per model name, money per 1,000 tokens (the report's cost)
      gpt-4o-mini: {prompt_per_1k: 0.00015, completion_per_1k: 0.0006}

Every other key of an agent is an option of its kind (``textagents bench kinds`` lists them).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from collections.abc import Collection
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from textagents.bench.agents import AGENT_KINDS, LLMOptions
from textagents.bench.costs import PRICE_KEYS
from textagents.bench.typecheck import describe, matches, parameter_hints
from textagents.llm.key_hosts import key_host_refusal
from textagents.llm.openai_backend import check_api_key_env, server_address
from textenvs.core.messages import short_repr, type_and_repr
from textenvs.core.registration import LazyEntryPoint, accepted_kwargs, load_attr
from textenvs.data import YAMLInputError, parse_yaml, read_yaml_bytes

SUITE_KEYS = ("name", "description", "seeds", "max_steps", "envs", "agents", "prices")
ENV_KEYS = ("id", "name", "kwargs", "seeds")
AGENT_KEYS = ("name", "kind", "envs")


#: Agent and env names become folder names (trajectories) and CSV cells.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


class SuiteError(ValueError):
    """A suite that cannot run; the message names the file, the key and what is valid."""


@dataclass(frozen=True)
class EnvConfig:
    name: str
    id: str
    kwargs: dict[str, Any]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class AgentConfig:
    name: str
    kind: str
    options: Any
    envs: tuple[str, ...] | None = None

    def plays(self, env: EnvConfig) -> bool:
        return self.envs is None or env.name in self.envs


@dataclass(frozen=True)
class EpisodeTask:
    """One episode to play: what a worker needs, as plain picklable data."""

    agent: AgentConfig
    env: EnvConfig
    seed: int
    max_steps: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.agent.name, self.env.name, self.seed)


@dataclass(frozen=True)
class Suite:
    path: Path
    sha256: str
    name: str
    description: str
    max_steps: int
    envs: tuple[EnvConfig, ...]
    agents: tuple[AgentConfig, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    prices: dict[str, dict[str, float]] = field(default_factory=dict)

    def tasks(self) -> list[EpisodeTask]:
        """Every episode, env by env, agent by agent, seed by seed (so a worker's env cache stays warm)."""
        return [
            EpisodeTask(agent, env, seed, self.max_steps)
            for env in self.envs
            for agent in self.agents
            if agent.plays(env)
            for seed in env.seeds
        ]


def unknown_choice(what: str, value: Any, valid: list[str] | tuple[str, ...]) -> str:
    """``unknown <what> 'x' (did you mean 'y'?); valid: ...``"""
    close = difflib.get_close_matches(str(value), list(valid), n=3)
    hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    return f"unknown {what} {short_repr(value)}{hint}; valid: {', '.join(valid)}"


class _Checker:
    """Collects the location of each value so errors read ``file: envs[2].kwargs.max_steps: ...``."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, problem: str) -> SuiteError:
        return SuiteError(f"{self.path}: {where}: {problem}")

    def mapping(self, value: Any, where: str, valid: tuple[str, ...] | None, required: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a mapping, got {type_and_repr(value)}")
        if valid is not None:
            for key in value:
                if key not in valid:
                    raise self.fail(f"{where}.{key}" if where else key, unknown_choice("key", key, valid))
        for key in required:
            if key not in value:
                raise self.fail(where or "top level", f"missing required key {key!r}")
        return value

    def typed(self, value: Any, hint: Any, where: str) -> Any:
        if not matches(value, hint):
            raise self.fail(where, f"expected {describe(hint)}, got {type_and_repr(value)}")
        return value

    def name(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not NAME.fullmatch(value):
            raise self.fail(
                where,
                f"expected a name of letters, digits and . _ + - (not starting with one), got {short_repr(value)}",
            )
        return value

    def seeds(self, value: Any, where: str) -> tuple[int, ...]:
        if isinstance(value, dict):
            self.mapping(value, where, ("start", "count"), ("count",))
            start = self.typed(value.get("start", 0), int, f"{where}.start")
            count = self.typed(value["count"], int, f"{where}.count")
            if count < 1:
                raise self.fail(f"{where}.count", f"must be >= 1, got {count}")
            return tuple(range(start, start + count))
        self.typed(value, list[int], where)
        if not value or len(set(value)) != len(value):
            raise self.fail(where, f"expected a non-empty list of distinct ints, got {short_repr(value)}")
        return tuple(value)


def _check_env(check: _Checker, raw: Any, index: int, default_seeds: tuple[int, ...]) -> EnvConfig:
    import textenvs  # noqa: F401  (registers the ids)

    where = f"envs[{index}]"
    raw = check.mapping(raw, where, ENV_KEYS, ("id",))
    env_id = check.typed(raw["id"], str, f"{where}.id")
    known = sorted(i for i in gym.registry if gym.registry[i].entry_point is not None)
    if env_id not in gym.registry:
        close = difflib.get_close_matches(env_id, known, n=3)
        hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
        raise check.fail(
            f"{where}.id", f"unknown env id {short_repr(env_id)}{hint}; `textenvs list` shows the valid ids"
        )
    kwargs = check.mapping(raw.get("kwargs", {}), f"{where}.kwargs", None)
    entry_point = gym.spec(env_id).entry_point
    try:
        if isinstance(entry_point, LazyEntryPoint):
            factory = load_attr(entry_point.path)
        elif isinstance(entry_point, str):
            factory = load_env_creator(entry_point)
        else:
            factory = entry_point
    except ImportError as error:
        raise check.fail(f"{where}.id", str(error)) from error
    valid = accepted_kwargs(factory)
    hints = parameter_hints(factory)
    for key, value in kwargs.items():
        if valid is not None and key not in valid:
            raise check.fail(f"{where}.kwargs.{key}", unknown_choice(f"kwarg of {env_id}", key, valid))
        check.typed(value, hints.get(key, Any), f"{where}.kwargs.{key}")
    seeds = check.seeds(raw["seeds"], f"{where}.seeds") if "seeds" in raw else default_seeds
    name = check.name(raw.get("name", env_id), f"{where}.name")
    return EnvConfig(name=name, id=env_id, kwargs=dict(kwargs), seeds=seeds)


def _check_agent(
    check: _Checker,
    raw: Any,
    index: int,
    env_names: list[str],
    overrides: dict[str, Any],
    allowed_hosts: Collection[str],
) -> AgentConfig:
    where = f"agents[{index}]"
    raw = check.mapping(raw, where, None, ("name", "kind"))
    name = check.name(raw["name"], f"{where}.name")
    kind_name = check.typed(raw["kind"], str, f"{where}.kind")
    if kind_name not in AGENT_KINDS:
        raise check.fail(f"{where}.kind", unknown_choice("agent kind", kind_name, list(AGENT_KINDS)))
    kind = AGENT_KINDS[kind_name]
    valid = (*AGENT_KEYS, *kind.option_names())
    check.mapping(raw, where, valid)
    envs = None
    if "envs" in raw:
        envs = tuple(check.typed(raw["envs"], list[str], f"{where}.envs"))
        for env in envs:
            if env not in env_names:
                raise check.fail(f"{where}.envs", unknown_choice("env name", env, env_names))
    hints = parameter_hints(kind.options)
    options = {}
    for option in fields(kind.options):
        if option.name in raw:
            options[option.name] = check.typed(raw[option.name], hints[option.name], f"{where}.{option.name}")
    missing = [f.name for f in fields(kind.options) if f.name not in options and _is_required(f)]
    if missing:
        raise check.fail(where, f"agent kind {kind_name!r} needs {', '.join(map(repr, missing))}")
    parsed = kind.options(**options)
    if isinstance(parsed, LLMOptions):
        recordings = {
            key: str((check.path.parent / options[key]).resolve())
            for key in ("llm_record", "llm_replay")
            if options.get(key) is not None
        }
        parsed = replace(parsed, **{**recordings, **{k: v for k, v in overrides.items() if v is not None}})
        _check_server(check, where, parsed, allowed_hosts)
    for folder in ("run", "dataset"):  # named relative to the suite file
        if folder in options:
            parsed = replace(parsed, **{folder: str((check.path.parent / options[folder]).resolve())})
    return AgentConfig(name=name, kind=kind_name, options=parsed, envs=envs)


def _check_server(check: _Checker, where: str, options: LLMOptions, allowed_hosts: Collection[str]) -> None:
    """The key's variable is named like an API key, the server's URL is http(s) and a key set in that variable
    goes only to this machine or ``allowed_hosts``: a suite cannot send any variable anywhere."""
    try:
        check_api_key_env(options.api_key_env)
    except ValueError as error:
        raise check.fail(f"{where}.api_key_env", str(error)) from error
    if options.base_url is not None:
        try:
            server_address(options.base_url)
        except ValueError as error:
            raise check.fail(f"{where}.base_url", str(error)) from error
        refusal = key_host_refusal(options.base_url, options.api_key_env, allowed_hosts)
        if refusal is not None:
            raise check.fail(f"{where}.base_url", refusal)


def _check_prices(check: _Checker, raw: Any) -> dict[str, dict[str, float]]:
    """``prices``: per model name (as its backend names it), ``prompt_per_1k`` and ``completion_per_1k``, the
    money 1,000 tokens cost: finite numbers >= 0."""
    prices = {}
    for model, price in check.mapping(raw, "prices", None).items():
        where = f"prices.{model}"
        check.typed(model, str, f"{where} (a model name)")
        check.mapping(price, where, PRICE_KEYS, PRICE_KEYS)
        for key in PRICE_KEYS:
            value = check.typed(price[key], float, f"{where}.{key}")
            if not (math.isfinite(value) and value >= 0):
                raise check.fail(f"{where}.{key}", f"must be a finite number >= 0, got {short_repr(value)}")
        prices[model] = {key: float(price[key]) for key in PRICE_KEYS}
    return prices


def _is_required(option: Any) -> bool:
    return option.default is MISSING and option.default_factory is MISSING


def load_suite(
    path: str | Path, llm_overrides: dict[str, Any] | None = None, allowed_hosts: Collection[str] = ()
) -> Suite:
    """Read and validate a suite: every env id, kwarg (name and type), agent kind and option is checked,
    and every env is built once, so that a bad suite fails here, before any episode. ``llm_overrides``
    (``model``, ``base_url``, ``api_key_env``, ``llm_record``, ``llm_replay``) fill in the LLM agents'
    options from the command line; an API key goes only to a loopback host or to ``allowed_hosts``
    (``key_hosts.normalise_host``'s form), which only the user names."""
    path = Path(path)
    if not path.is_file():
        raise SuiteError(f"{path}: no such suite file")
    check = _Checker(path)
    try:
        data = read_yaml_bytes(path)
        raw = parse_yaml(data, str(path))
    except YAMLInputError as error:
        raise SuiteError(str(error)) from error
    raw = check.mapping(raw, "", SUITE_KEYS, ("envs", "agents"))
    seeds = check.seeds(raw.get("seeds", {"count": 10}), "seeds")
    max_steps = check.typed(raw.get("max_steps", 100_000), int, "max_steps")
    if max_steps < 1:
        raise check.fail("max_steps", f"must be >= 1, got {max_steps}")
    prices = _check_prices(check, raw.get("prices", {}))
    if not isinstance(raw["envs"], list) or not raw["envs"]:
        raise check.fail("envs", "expected a non-empty list of envs")
    if not isinstance(raw["agents"], list) or not raw["agents"]:
        raise check.fail("agents", "expected a non-empty list of agents")
    envs = [_check_env(check, env, i, seeds) for i, env in enumerate(raw["envs"])]
    _unique(check, "envs", [e.name for e in envs], "env names (give each a distinct `name`)")
    names = [e.name for e in envs]
    agents = [_check_agent(check, a, i, names, llm_overrides or {}, allowed_hosts) for i, a in enumerate(raw["agents"])]
    _unique(check, "agents", [a.name for a in agents], "agent names")

    runnable, skipped = [], []
    for agent in agents:
        reason = AGENT_KINDS[agent.kind].unconfigured(agent.options)
        if reason:
            skipped.append((agent.name, reason))
        else:
            runnable.append(agent)
    if not runnable:
        raise SuiteError(f"{path}: no agent can run here: " + "; ".join(f"{n}: {r}" for n, r in skipped))
    _build_envs_once(check, envs, runnable)
    _check_agents_can_play(check, envs, runnable)
    return Suite(
        path=path.resolve(),
        sha256=hashlib.sha256(data).hexdigest(),
        name=check.typed(raw.get("name", path.stem), str, "name"),
        description=check.typed(raw.get("description", ""), str, "description"),
        max_steps=max_steps,
        envs=tuple(envs),
        agents=tuple(runnable),
        skipped=tuple(skipped),
        prices=prices,
    )


def _unique(check: _Checker, where: str, names: list[str], what: str) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise check.fail(where, f"repeated {what}: {', '.join(map(short_repr, repeated))}")


def _build_envs_once(check: _Checker, envs: list[EnvConfig], agents: list[AgentConfig]) -> None:
    """Build each env as the first agent that plays it would, to surface bad kwarg values now."""
    for index, env in enumerate(envs):
        players = [a for a in agents if a.plays(env)]
        if not players:
            continue
        kind = AGENT_KINDS[players[0].kind]
        try:
            kind.make_env(env.id, env.kwargs, players[0].options).close()
        except Exception as error:
            raise check.fail(f"envs[{index}] ({env.id})", f"{type(error).__name__}: {error}") from error


def _check_agents_can_play(check: _Checker, envs: list[EnvConfig], agents: list[AgentConfig]) -> None:
    """Every agent can play every env it is given (an SB3 model: the spaces it was trained on)."""
    for agent in agents:
        kind = AGENT_KINDS[agent.kind]
        for env in envs:
            reason = kind.cannot_play(env.id, env.kwargs, agent.options) if agent.plays(env) else None
            if reason:
                where = f"agent {short_repr(agent.name)} on env {short_repr(env.name)}"
                raise check.fail(where, f"{reason}: list the envs this agent can play in its `envs:`")
