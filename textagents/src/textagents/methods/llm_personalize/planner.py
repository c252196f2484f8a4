"""LLM-Personalize's planner in the loop, and the paper's two baselines, on Housekeep-Text episodes.

- ``planner`` (LLM-Personalize, zero-shot or fine-tuned): ask for a plan with the paper's prompt, parse it,
  play its steps one by one as env commands, ask again when it is used up, until ``mission complete``, the
  env's end, or the command budget.
- ``sayplan`` (SayPlan-style iterative replanning): the same planner, but a step that fails stops the plan
  and the next prompt reports the failure (the env's feedback) so that the planner can correct itself.
- ``saycan``: one command at a time, the admissible command with the highest LLM score (summed log-prob)
  after the same prompt as plain text (``scoring_context``: no chat template, so that any backend that
  scores, a recording included, sees the same context): the admissible list is the affordance.

Unparseable steps and failed commands are counted, never fatal. Episodes are played in lockstep so that
the planning calls of all of them go to the model as one batch (``chat_batch``); a batch's sampling seed is
``seed`` plus the round number, so a run is reproducible for the same episodes.

``play`` returns per episode every planning call (messages, answer, parsed steps, what each step did and why
it failed, the original's per-plan score) so that imitation and self-training can build their datasets from
it, and the episode's metrics (LLM-Personalize's ``success_rate`` among them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from textagents.llm.base import LLMBackend, chat_batch
from textagents.methods.llm_personalize.plan_parser import MAX_STEPS, MISSION_COMPLETE, parse_plan
from textenvs.envs.housekeep.prompts import SYSTEM_PROMPT, planner_prompt

#: The paper's sampling (temperature 1, top_p 0.9, at most 256 new tokens). Its frequency and presence
#: penalties (0.2) are not part of ``Sampling`` and are not applied.
PAPER_SAMPLING = {"temperature": 1.0, "top_p": 0.9, "max_tokens": 256}
VARIANTS = ("planner", "sayplan", "saycan")
#: Why a played step did not succeed: no regex matched, a name or command the env does not admit now, or
#: an admissible command that failed (e.g. placing with empty hands).
FAILURE_CAUSES = ("unparseable", "not_admissible", "failed")
_FEEDBACK_CHARS = 300  # SayPlan's failure feedback is cut here: the env lists every valid command


@dataclass
class PlanningCall:
    """One call: the messages sent, the answer, and per parsed step the command played and its outcome."""

    messages: list[dict[str, str]]
    answer: str
    steps: list[str]
    played: list[tuple[str | None, bool]] = field(default_factory=list)  # (command, succeeded)
    failures: list[str] = field(default_factory=list)  # a FAILURE_CAUSES entry per step that did not succeed
    correct_before: frozenset[str] = frozenset()  # objects on a correct receptacle when the call was made
    correct_after: frozenset[str] = frozenset()
    moves: tuple[tuple[str, str, str], ...] = ()  # (object, receptacle before, receptacle after) it changed
    discovered: int = 0  # objects + receptacles the robot first saw during this call

    @property
    def raised_correct_count(self) -> bool:
        return len(self.correct_after) > len(self.correct_before)

    @property
    def score(self) -> int:
        """The original's per-plan score: objects discovered + receptacles discovered + 10 x newly correct."""
        return self.discovered + 10 * len(self.correct_after - self.correct_before)

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

    def failure_counts(self) -> Counter[str]:
        return Counter(cause for call in self.calls for cause in call.failures)


def _snapshot(env: Any) -> tuple[frozenset[str], dict[str, str], int]:
    """The correctly placed objects, every object's receptacle ("held" in a hand) by name, and how many
    objects and receptacles the robot knows."""
    world = env.unwrapped.world
    places = {
        name: "held" if at < 0 else world.receptacles[at].name
        for name, at in zip(world.object_names, world.location, strict=True)
    }
    correct = frozenset(n for i, n in enumerate(world.object_names) if world.is_correct(i))
    robot = world.robots[0]
    return correct, places, len(robot.known_objects) + len(robot.known_receptacles)


class _Episode:
    """One episode being played: its env, last observation, calls and command count."""

    def __init__(self, env: Any, seed: int, options: dict[str, Any] | None, command_budget: int):
        self.env = env
        self.obs, self.info = env.reset(seed=seed, options=options)
        self.command_budget = command_budget
        self.calls: list[PlanningCall] = []
        self.commands = 0
        self.done = False
        self.previous_steps = ""  # the prompt's prev_steps_msg (SayPlan's failure feedback)

    @property
    def active(self) -> bool:
        return not self.done and self.commands < self.command_budget

    def messages(self) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": planner_prompt(self.obs["text"], self.previous_steps)},
        ]

    def step(self, text: str, command: str | None, call: PlanningCall) -> bool:
        """Play one step; True when it succeeded."""
        self.obs, _, terminated, truncated, self.info = self.env.step(command if command is not None else text)
        self.commands += 1
        ok = bool(self.info["action_succeeded"]) and not self.info["invalid_action"]
        call.played.append((command, ok))
        if not ok:
            cause = "unparseable" if command is None else "not_admissible" if self.info["invalid_action"] else "failed"
            call.failures.append(cause)
        self.done = terminated or truncated or command == MISSION_COMPLETE
        return ok

    def play_plan(self, messages: list[dict[str, str]], answer: str, max_steps: int, stop_on_failure: bool) -> None:
        parsed = parse_plan(answer, max_steps=max_steps)
        call = PlanningCall(messages, answer, [s.text for s in parsed.steps])
        self._around(call, lambda: self._play_steps(call, parsed.steps, stop_on_failure))

    def _play_steps(self, call: PlanningCall, steps: Sequence[Any], stop_on_failure: bool) -> None:
        self.previous_steps = ""
        for step in steps:
            if not self.active:
                return
            if not self.step(step.text, step.command, call) and stop_on_failure:
                feedback = str(self.info.get("feedback", ""))[:_FEEDBACK_CHARS]
                self.previous_steps = f"The step '{step.text}' failed: {feedback}"
                return
        if not steps and self.active:  # nothing to play: the answer still costs a command, as an invalid one
            self.step(call.answer[:200], None, call)

    def play_command(self, messages: list[dict[str, str]], command: str) -> None:
        call = PlanningCall(messages, command, [command])
        self._around(call, lambda: self.step(command, command, call))

    def _around(self, call: PlanningCall, play: Callable[[], Any]) -> None:
        call.correct_before, before, known_before = _snapshot(self.env)
        play()
        call.correct_after, after, known_after = _snapshot(self.env)
        call.moves = tuple((name, before[name], after[name]) for name in sorted(before) if before[name] != after[name])
        call.discovered = known_after - known_before
        self.calls.append(call)

    def result(self) -> Rollout:
        metrics = self.info.get("episode_metrics") or self.env.unwrapped.episode_metrics()
        return Rollout(self.calls, metrics)


def scoring_context(messages: Sequence[dict[str, str]]) -> str:
    """SayCan's context: the system and user prompts as plain text; the user prompt ends with ``step 1: ``."""
    return "\n\n".join(m["content"] for m in messages)


def play(
    make_env: Callable[[], Any],
    backend: LLMBackend,
    jobs: Sequence[tuple[str, int]],
    *,
    variant: str = "planner",
    seed: int = 0,
    sampling: dict[str, Any] | None = None,
    max_steps_per_plan: int = MAX_STEPS,
    command_budget: int = 150,
) -> list[Rollout]:
    """Play the ``(scene, episode index)`` jobs of a Housekeep-Text env (``text_style="llm_personalize"``)
    with one of ``VARIANTS``; episode index i is reset with seed i."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown planner variant {variant!r}; valid: {list(VARIANTS)}")
    settings = {**PAPER_SAMPLING, **(sampling or {})}
    episodes = [
        _Episode(make_env(), index, {"scene": scene, "episode_index": index}, command_budget) for scene, index in jobs
    ]
    round_number = 0
    while active := [e for e in episodes if e.active]:
        conversations = [e.messages() for e in active]
        if variant == "saycan":
            candidates = [list(e.info["admissible_commands"]) for e in active]
            contexts = [scoring_context(m) for m in conversations]
            for episode, messages, options, scores in zip(
                active, conversations, candidates, backend.score(contexts, candidates), strict=True
            ):
                episode.play_command(messages, options[max(range(len(options)), key=scores.__getitem__)])
        else:
            answers = chat_batch(backend, conversations, **settings, seed=seed + round_number)
            for episode, messages, answer in zip(active, conversations, answers, strict=True):
                episode.play_plan(messages, answer, max_steps_per_plan, stop_on_failure=variant == "sayplan")
        round_number += 1
    results = [e.result() for e in episodes]
    for episode in episodes:
        episode.env.close()
    return results


def summarize(per_scene: dict[str, list[Rollout]]) -> dict[str, Any]:
    """LLM-Personalize's success rate per scene and overall, with the planner's parse rate, step success
    rate, per-plan score, planning calls per episode and the share of each failure cause among steps."""
    everything = [r for runs in per_scene.values() for r in runs]
    steps = sum(len(call.played) for r in everything for call in r.calls)
    failures = sum((r.failure_counts() for r in everything), Counter())
    calls = [call for r in everything for call in r.calls]
    return {
        **{
            f"success_rate/{scene}": _mean([r.metrics["success_rate"] for r in runs])
            for scene, runs in per_scene.items()
        },
        "success_rate": _mean([r.metrics["success_rate"] for r in everything]),
        "success_rate_std": _std([r.metrics["success_rate"] for r in everything]),
        "episodes": len(everything),
        "parse_rate": _mean([r.parse_rate for r in everything]),
        "step_success_rate": _mean([r.step_success_rate for r in everything]),
        "plan_score": _mean([call.score for call in calls]),
        "planning_calls": _mean([len(r.calls) for r in everything]),
        **{f"failed_steps/{cause}": failures[cause] / steps if steps else 0.0 for cause in FAILURE_CAUSES},
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _std(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = _mean(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
