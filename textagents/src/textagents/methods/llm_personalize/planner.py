"""LLM-Personalize's planner in the loop: ask for a plan with the paper's prompt, parse it, play its steps one
by one as env commands, ask again when it is used up, until ``mission complete``, the env's end, or the
command budget. Unparseable steps and failed commands are counted, never fatal.

``rollout`` returns every planning call (the prompt's messages, the answer, the parsed steps, what each step
did) so that imitation and self-training can build their datasets from it, and the episode's metrics
(LLM-Personalize's ``success_rate`` among them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textagents.llm.base import LLMBackend
from textagents.methods.llm_personalize.plan_parser import MAX_STEPS, MISSION_COMPLETE, parse_plan
from textenvs.envs.housekeep.prompts import chat_messages

#: The paper's sampling (temperature 1, top_p 0.9, at most 256 new tokens). Its frequency and presence
#: penalties (0.2) are not part of ``Sampling`` and are not applied.
PAPER_SAMPLING = {"temperature": 1.0, "top_p": 0.9, "max_tokens": 256}


@dataclass
class PlanningCall:
    """One call: the messages sent, the answer, and per parsed step the command played and its outcome."""

    messages: list[dict[str, str]]
    answer: str
    steps: list[str]
    played: list[tuple[str | None, bool]] = field(default_factory=list)  # (command, succeeded)
    correct_before: frozenset[str] = frozenset()  # objects on a correct receptacle when the call was made
    correct_after: frozenset[str] = frozenset()
    moves: tuple[tuple[str, str, str], ...] = ()  # (object, receptacle before, receptacle after) it changed

    @property
    def raised_correct_count(self) -> bool:
        return len(self.correct_after) > len(self.correct_before)

    @property
    def dedup_key(self) -> tuple:
        """The paper's de-duplication key: the objects moved, their receptacles before and after, and the set
        of correctly placed objects before."""
        return (self.moves, self.correct_before)


@dataclass
class Rollout:
    calls: list[PlanningCall]
    metrics: dict[str, Any]

    @property
    def parse_rate(self) -> float:
        played = [command for call in self.calls for command, _ in call.played]
        return sum(c is not None for c in played) / len(played) if played else 0.0

    @property
    def step_success_rate(self) -> float:
        played = [ok for call in self.calls for _, ok in call.played]
        return sum(played) / len(played) if played else 0.0


def _snapshot(env: Any) -> tuple[frozenset[str], dict[str, str]]:
    """The correctly placed objects and every object's receptacle ("held" in a hand), by name."""
    world = env.unwrapped.world
    places = {
        name: "held" if at < 0 else world.receptacles[at].name
        for name, at in zip(world.object_names, world.location, strict=True)
    }
    return frozenset(n for i, n in enumerate(world.object_names) if world.is_correct(i)), places


def rollout(
    env: Any,
    backend: LLMBackend,
    *,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    sampling: dict[str, Any] | None = None,
    max_steps_per_plan: int = MAX_STEPS,
    command_budget: int = 150,
) -> Rollout:
    """Play one episode of a Housekeep-Text env (``text_style="llm_personalize"``) with the planner."""
    settings = {**PAPER_SAMPLING, **(sampling or {}), "seed": seed}
    obs, info = env.reset(seed=seed, options=options)
    calls: list[PlanningCall] = []
    commands, done = 0, False
    while not done and commands < command_budget:
        messages = chat_messages(obs["text"], plan="")[:2]  # system and user: the paper's prompt
        answer = backend.chat(messages, **settings)
        parsed = parse_plan(answer, max_steps=max_steps_per_plan)
        correct_before, before = _snapshot(env)
        call = PlanningCall(messages, answer, [s.text for s in parsed.steps], correct_before=correct_before)
        calls.append(call)
        settings["seed"] += 1
        for step in parsed.steps:
            if done or commands >= command_budget:
                break
            command = step.command
            obs, _, terminated, truncated, info = env.step(command if command is not None else step.text)
            commands += 1
            call.played.append((command, bool(info["action_succeeded"]) and not info["invalid_action"]))
            done = terminated or truncated or command == MISSION_COMPLETE
        call.correct_after, after = _snapshot(env)
        call.moves = tuple((name, before[name], after[name]) for name in sorted(before) if before[name] != after[name])
        if not parsed.steps:  # nothing to play: the answer still costs a command, as an invalid one
            obs, _, terminated, truncated, info = env.step(answer[:200])
            commands += 1
            done = terminated or truncated
    metrics = info.get("episode_metrics") or env.unwrapped.episode_metrics()
    return Rollout(calls, metrics)


def evaluate(
    env: Any, backend: LLMBackend, scenes: Sequence[str], indices: Sequence[int], **kwargs: Any
) -> dict[str, Any]:
    """LLM-Personalize's success rate per scene (mean over ``indices``) and the planner's parse and step rates."""
    per_scene: dict[str, list[Rollout]] = {}
    for scene in scenes:
        per_scene[scene] = [
            rollout(env, backend, seed=index, options={"scene": scene, "episode_index": index}, **kwargs)
            for index in indices
        ]
    everything = [r for runs in per_scene.values() for r in runs]
    return {
        **{
            f"success_rate/{scene}": _mean([r.metrics["success_rate"] for r in runs])
            for scene, runs in per_scene.items()
        },
        "success_rate": _mean([r.metrics["success_rate"] for r in everything]),
        "parse_rate": _mean([r.parse_rate for r in everything]),
        "step_success_rate": _mean([r.step_success_rate for r in everything]),
        "planning_calls": _mean([len(r.calls) for r in everything]),
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
