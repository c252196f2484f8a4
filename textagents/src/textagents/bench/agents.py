"""The agents a suite can name (its ``kind``): their options, the env each plays, and how each is built.

Heavy resources (an LLM, a trained SB3 model) are loaded once per worker process and shared by its
episodes; the agent itself is built fresh for every episode, seeded by the episode's seed.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import gymnasium as gym

from textagents.agents.base import Agent


@dataclass(frozen=True)
class NoOptions:
    """This kind takes no options."""


@dataclass(frozen=True)
class SB3Options:
    """``run``: a ``textagents train`` run directory (relative to the suite file); ``deterministic``: play
    the policy's most likely actions (False: sample them, seeded by the episode's seed)."""

    run: str
    deterministic: bool = True


@dataclass(frozen=True)
class LLMOptions:
    """``model``: a local transformers model directory (or a downloaded model's name, e.g.
    ``smollm2-135m-instruct``), or the model's name at ``base_url`` (an OpenAI-compatible server, key read
    from ``api_key_env``); ``temperature`` 0 is greedy. ``llm_record``: append every LLM request and answer
    to this JSONL file; ``llm_replay``: answer from such a file, with no model (paths relative to the
    suite file)."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    device: str = "cpu"
    llm_record: str | None = None
    llm_replay: str | None = None


@dataclass(frozen=True)
class GenerationOptions(LLMOptions):
    """Also ``max_tokens`` per output, ``use_chat`` (the chat endpoint) and ``multi_step``: the later lines of
    an output are a plan, played before the model is asked again (LLM-Personalize's planner)."""

    max_tokens: int = 32
    use_chat: bool = False
    multi_step: bool = False


@dataclass(frozen=True, kw_only=True)
class FewShotOptions(GenerationOptions):
    """Also ``dataset``: a ``textenvs dataset create`` folder (relative to the suite file) whose first ``k``
    episodes the prompt shows as demonstrations, all within ``token_budget`` estimated tokens (3 characters
    each): demonstrations that do not fit are cut, and the prompt says so."""

    dataset: str
    k: int = 3
    token_budget: int = 2048


@dataclass(frozen=True)
class AgentKind:
    """How a suite's agent of this kind is configured (``options``, a frozen dataclass), the env it plays
    (``make_env(env_id, kwargs, options)``) and the agent of one episode (``build(env, options, seed)``).
    ``unconfigured(options)`` says why the agent cannot run here (it is then skipped with that notice);
    ``describe(options)`` what the agent uses (its files, its model and where its prompts go), for the plan;
    ``cannot_play(env_id, kwargs, options)`` why it cannot play that env (the suite is then refused)."""

    name: str
    summary: str
    options: type
    make_env: Callable[[str, dict[str, Any], Any], gym.Env]
    build: Callable[[gym.Env, Any, int], Agent]
    unconfigured: Callable[[Any], str | None] = lambda options: None
    describe: Callable[[Any], str] = lambda options: "nothing to load"
    cannot_play: Callable[[str, dict[str, Any], Any], str | None] = lambda env_id, kwargs, options: None

    def option_names(self) -> list[str]:
        return [f.name for f in fields(self.options)]


def _text_env(env_id: str, kwargs: dict[str, Any], options: Any) -> gym.Env:
    from textagents.agents.motion import make_for_llm

    return make_for_llm(env_id, **kwargs)


def _native_env(env_id: str, kwargs: dict[str, Any], options: Any) -> gym.Env:
    import textenvs  # noqa: F401  (registers the ids)

    return gym.make(env_id, **kwargs)


def _random(env: gym.Env, options: NoOptions, seed: int) -> Agent:
    from textagents.agents import RandomAgent

    return RandomAgent(seed=seed)


def _expert(env: gym.Env, options: NoOptions, seed: int) -> Agent:
    from textagents.agents import ExpertAgent

    return ExpertAgent(env)


@functools.lru_cache(maxsize=4)
def _trained_run(run: str):
    from textagents.sb3.agent import TrainedRun

    return TrainedRun.load(run)


def _sb3_env(env_id: str, kwargs: dict[str, Any], options: SB3Options) -> gym.Env:
    return _trained_run(options.run).make_env(env_id, **kwargs)


def _sb3(env: gym.Env, options: SB3Options, seed: int) -> Agent:
    from textagents.sb3.agent import SB3Agent

    return SB3Agent(_trained_run(options.run), deterministic=options.deterministic, seed=seed)


def _sb3_unconfigured(options: SB3Options) -> str | None:
    from textagents.sb3.agent import missing_files

    missing = missing_files(Path(options.run))
    return f"the run directory {options.run} has no {' or '.join(missing)}" if missing else None


def space_difference(trained: gym.Space, other: gym.Space) -> str:
    """How ``other`` differs from ``trained``: the keys a Dict space lacks or adds, else both spaces."""
    if isinstance(trained, gym.spaces.Dict) and isinstance(other, gym.spaces.Dict) and trained.keys() != other.keys():
        lacks, adds = sorted(set(trained.keys()) - set(other.keys())), sorted(set(other.keys()) - set(trained.keys()))
        return " and ".join([*([f"lacks {lacks}"] if lacks else []), *([f"has {adds} too"] if adds else [])])
    return f"is {other} instead of {trained}"[:300]


def _sb3_cannot_play(env_id: str, kwargs: dict[str, Any], options: SB3Options) -> str | None:
    run = _trained_run(options.run)
    trained, env = run.make_env(), run.make_env(env_id, **kwargs)
    try:
        for what in ("observation_space", "action_space"):
            if getattr(env, what) != getattr(trained, what):
                difference = space_difference(getattr(trained, what), getattr(env, what))
                return f"the model of {options.run} was trained on {run.config.env_id}; {env_id}'s {what} {difference}"
    finally:
        env.close()
        trained.close()
    return None


def _sb3_describe(options: SB3Options) -> str:
    return f"the trained run {options.run} (config.json now, weights when it plays)"


def _llm_describe(options: LLMOptions) -> str:
    if options.llm_replay is not None:
        return f"answers replayed from {options.llm_replay} (no model)"
    if options.base_url is None:
        return f"the local model {options.model} on {options.device}"
    from textagents.llm.openai_backend import server_address

    key = "set" if os.environ.get(options.api_key_env) else "not set: no key is sent"
    return (
        f"the model {options.model!r} at {options.base_url}: prompts and the key in ${options.api_key_env} "
        f"({key}) go to {server_address(options.base_url)}"
    )


def _backend(model: str, base_url: str | None, api_key_env: str, device: str):
    if base_url is not None:
        from textagents.llm import OpenAIBackend

        return OpenAIBackend(model, base_url=base_url, api_key_env=api_key_env)
    from textagents.llm.transformers_backend import TransformersBackend

    return TransformersBackend(model, device=device)


@functools.lru_cache(maxsize=2)
def _llm_backend(options: LLMOptions):
    from textagents.llm.record import wrap_backend

    def make():
        return _backend(options.model, options.base_url, options.api_key_env, options.device)

    return wrap_backend(make, record=options.llm_record, replay=options.llm_replay)


def _generation_agent(env: gym.Env, options: GenerationOptions, seed: int) -> Agent:
    from textagents.agents import GenerationAgent, prompt_builder_for

    sampling = {"temperature": options.temperature, "max_tokens": options.max_tokens, "seed": seed}
    return GenerationAgent(
        _llm_backend(options),
        prompt_builder_for(env),
        use_chat=options.use_chat,
        sampling=sampling,
        multi_step=options.multi_step,
        seed=seed,
    )


def _scoring_agent(env: gym.Env, options: LLMOptions, seed: int) -> Agent:
    from textagents.agents import ScoringAgent, prompt_builder_for

    greedy = options.temperature == 0
    return ScoringAgent(
        _llm_backend(options),
        prompt_builder_for(env),
        greedy=greedy,
        temperature=1.0 if greedy else options.temperature,
        seed=seed,
    )


@functools.lru_cache(maxsize=4)
def _demonstrations(dataset: str, k: int):
    from textagents.agents.few_shot import load_demonstrations

    return load_demonstrations(dataset, k)


def _few_shot_agent(env: gym.Env, options: FewShotOptions, seed: int) -> Agent:
    from textagents.agents import prompt_builder_for
    from textagents.agents.few_shot import FewShotAgent

    sampling = {"temperature": options.temperature, "max_tokens": options.max_tokens, "seed": seed}
    return FewShotAgent(
        _llm_backend(options),
        prompt_builder_for(env),
        _demonstrations(options.dataset, options.k)[1],
        token_budget=options.token_budget,
        dataset=options.dataset,
        use_chat=options.use_chat,
        sampling=sampling,
        multi_step=options.multi_step,
        seed=seed,
    )


def _few_shot_unconfigured(options: FewShotOptions) -> str | None:
    if not Path(options.dataset).is_dir():
        return f"no dataset folder {options.dataset}: make one with `textenvs dataset create`"
    return _llm_unconfigured(options)


def _few_shot_cannot_play(env_id: str, kwargs: dict[str, Any], options: FewShotOptions) -> str | None:
    if options.token_budget < 1:
        return f"token_budget must be >= 1, got {options.token_budget}"
    try:
        recorded_on = _demonstrations(options.dataset, options.k)[0]
    except (ValueError, OSError, ImportError) as error:
        return f"its demonstrations cannot be read: {error}"
    if recorded_on != env_id:
        return f"the demonstrations in {options.dataset} were recorded on {recorded_on}, not {env_id}"
    return None


def _few_shot_describe(options: FewShotOptions) -> str:
    return f"{_llm_describe(options)}; {options.k} demonstrations from {options.dataset}"


def _llm_unconfigured(options: LLMOptions) -> str | None:
    if options.llm_replay is not None:
        if options.llm_record is not None:
            return "llm_record and llm_replay are both set: record a run or replay one"
        return None if Path(options.llm_replay).is_file() else f"no LLM recording at {options.llm_replay}"
    if options.model is None:
        return (
            "no model configured: pass --model PATH (a local transformers model) or --base-url URL --model NAME "
            "(an OpenAI-compatible server)"
        )
    if options.base_url is None:
        from textagents.llm.models import ModelNotFoundError, resolve_model

        try:
            resolve_model(options.model)
        except ModelNotFoundError as error:
            return f"{error} (for a server's model, give --base-url too)"
    return None


AGENT_KINDS: dict[str, AgentKind] = {
    kind.name: kind
    for kind in (
        AgentKind("random", "a uniformly random admissible command", NoOptions, _text_env, _random),
        AgentKind("expert", "the family's expert (oracle policy)", NoOptions, _native_env, _expert),
        AgentKind(
            "sb3",
            "a trained Stable-Baselines3 run",
            SB3Options,
            _sb3_env,
            _sb3,
            _sb3_unconfigured,
            _sb3_describe,
            _sb3_cannot_play,
        ),
        AgentKind(
            "llm-generate",
            "an LLM generates a command, parsed to an admissible one",
            GenerationOptions,
            _text_env,
            _generation_agent,
            _llm_unconfigured,
            _llm_describe,
        ),
        AgentKind(
            "llm-score",
            "an LLM scores every admissible command (GLAM, lamorel-style)",
            LLMOptions,
            _text_env,
            _scoring_agent,
            _llm_unconfigured,
            _llm_describe,
        ),
        AgentKind(
            "llm-few-shot",
            "llm-generate with k episodes of a textenvs dataset as demonstrations",
            FewShotOptions,
            _text_env,
            _few_shot_agent,
            _few_shot_unconfigured,
            _few_shot_describe,
            _few_shot_cannot_play,
        ),
    )
}
