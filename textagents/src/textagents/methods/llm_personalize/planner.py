"""LLM-Personalize's planner in the loop, and the paper's two baselines, on Housekeep-Text episodes.

- ``planner`` (LLM-Personalize, zero-shot or fine-tuned): ask for a plan with the paper's prompt, parse it,
  take its steps one by one, ask again when it is used up, as the original's ``load_next_state_llm_planner``
  (``cos_eor/policy/hie_policy.py``) does: a step that does not parse, names something the episode does
  not have, or goes to an object or receptacle the robot has not seen is skipped without acting; the
  episode ends at ``mission complete``, at a plan with no step, after more than ``fail_threshold`` skipped
  steps in a row, at the env's end, or when a new plan is needed after more than ``command_budget`` steps
  (skipped ones count: the original's ``prompt_threshold``).
- ``sayplan`` (SayPlan-style iterative replanning): the same planner, but a step that fails or is skipped
  stops the plan and the next prompt reports the failure (the env's feedback) so that the planner can
  correct itself.
- ``saycan``: one command at a time, the admissible command with the highest LLM score (summed log-prob)
  after the same prompt as plain text (``scoring_context``: no chat template, so that any backend that
  scores, a recording included, sees the same context): the admissible list is the affordance.

Episodes are played in lockstep so that the planning calls of all of them go to the model as one batch
(``chat_batch``); a batch's sampling seed is ``seed`` plus the round number, so a run is reproducible for
the same episodes.

``play`` returns per episode every planning call (messages, answer, parsed steps, what each step did and why
it failed, the original's per-plan score) so that imitation and self-training can build their datasets from
it, and the episode's metrics (LLM-Personalize's ``success_rate`` among them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from textagents.llm.base import LLMBackend, chat_batch
from textagents.methods.llm_personalize.answer_log import AnswerLog, question_digest
from textagents.methods.llm_personalize.plan_parser import (
    MAX_STEPS,
    MISSION_COMPLETE,
    PROMPT_PREFIX,
    PlanStep,
    parse_plan,
)
from textenvs.core.commands import invalid_command_feedback
from textenvs.envs.housekeep.commands import GO_TO, parse
from textenvs.envs.housekeep.expert import format_plan
from textenvs.envs.housekeep.prompts import SYSTEM_PROMPT, planner_prompt

#: The paper's sampling (``single.llm_model.openai.sampling_params`` of ``igib_v2_nav_sp.yaml``). Its stop
#: is YAML's single-quoted ``'\n'``: a backslash and an ``n``, not a newline, so plans keep their lines.
PAPER_SAMPLING = {
    "temperature": 1.0,
    "top_p": 0.9,
    "max_tokens": 256,
    "frequency_penalty": 0.2,
    "presence_penalty": 0.2,
    "stop": ("\\n",),
}
FAIL_THRESHOLD = 30  # the original's ``fail_threshold``: skipped steps in a row that end an episode
COMMAND_BUDGET = 150  # its ``prompt_threshold``
VARIANTS = ("planner", "sayplan", "saycan")
#: Why a step did not succeed: skipped without acting because no pattern matched (``unparseable``) or
#: because it names something the episode does not have or goes where the robot has not been
#: (``not_admissible``), or played and failed (``failed``, e.g. placing with empty hands).
FAILURE_CAUSES = ("unparseable", "not_admissible", "failed")
_FEEDBACK_CHARS = 300  # SayPlan's failure feedback is cut here: the env lists every valid command

Pair = list[dict[str, str]]


@dataclass
class PlanningCall:
    """One call: the messages sent, the answer, its parsed steps' text and, per step taken, the command
    played (None for an unparseable step) and whether it succeeded."""

    messages: list[dict[str, str]]
    answer: str
    steps: list[str]
    played: list[tuple[str | None, bool]] = field(default_factory=list)  # (command, succeeded) per step taken
    failures: list[str] = field(default_factory=list)  # a FAILURE_CAUSES entry per step that did not succeed
    correct_before: frozenset[str] = frozenset()  # objects on a correct receptacle when the call was made
    correct_after: frozenset[str] = frozenset()
    #: (object, receptacle before, receptacle after) of each object the call moved, in the order of their
    #: first move ("held" in the hand); an object put back where it was is still listed, as in the original.
    moves: tuple[tuple[str, str, str], ...] = ()
    discovered: int = 0  # objects + receptacles the robot first saw during this call

    @property
    def raised_correct_count(self) -> bool:
        return len(self.correct_after) > len(self.correct_before)

    @property
    def score(self) -> int:
        """The original's per-plan score: objects discovered + receptacles discovered + 10 x the change in the
        number of correctly placed objects (``annotate_gpt3_pair.ipynb``, ``diff_correct_loc``)."""
        return self.discovered + 10 * (len(self.correct_after) - len(self.correct_before))

    @property
    def dedup_key(self) -> tuple:
        """The original's de-duplication key: the first moved object with its receptacles before and after,
        and the set of correctly placed objects before."""
        return (self.moves[0] if self.moves else None, self.correct_before)

    def succeeded_steps(self) -> list[str]:
        """The raw text of the steps that were played and succeeded, ``mission complete`` left out (the
        original logs it as skipped)."""
        taken = zip(self.steps, self.played, strict=False)
        return [text for text, (command, ok) in taken if ok and command != MISSION_COMPLETE]


#: What the original's self-training selection did with a planning call, in the order its rule decides:
#: the correct count lowered, unchanged with no step parsed, unchanged with nothing moved, unchanged though
#: objects moved, raised but no step succeeded (only ``mission complete``), raised but a call with the same
#: ``dedup_key`` came first, or kept.
SELECTION_OUTCOMES = (
    "lowered",
    "unparsed",
    "moved_nothing",
    "moved_unchanged",
    "no_succeeded_step",
    "duplicate",
    "kept",
)


def selection_outcome(call: PlanningCall, seen: set[tuple]) -> str:
    """Which of ``SELECTION_OUTCOMES`` the original's selection gives ``call``, given the ``dedup_key``s
    kept so far (``seen``, updated when the call is kept)."""
    if not call.raised_correct_count:
        if len(call.correct_after) < len(call.correct_before):
            return "lowered"
        if all(command is None for command, _ in call.played):
            return "unparsed"
        return "moved_unchanged" if call.moves else "moved_nothing"
    if not call.succeeded_steps():
        return "no_succeeded_step"
    if call.dedup_key in seen:
        return "duplicate"
    seen.add(call.dedup_key)
    return "kept"


def self_training_selection(calls: Iterable[PlanningCall]) -> list[tuple[str, Pair | None]]:
    """The original's self-training data (``experiments/annotate_gpt3_pair.ipynb``), with each call's
    ``selection_outcome``: the calls that raised the number of correctly placed objects, the first of each
    ``dedup_key``, each as the prompt it logged (without the ``step 1:`` that the model was sent after it)
    and its succeeded steps' raw text as the plan; None for the calls left out."""
    seen: set[tuple] = set()
    selection: list[tuple[str, Pair | None]] = []
    for call in calls:
        outcome = selection_outcome(call, seen)
        if outcome != "kept":
            selection.append((outcome, None))
            continue
        system, user = call.messages[:2]
        prompt = user["content"].removesuffix(PROMPT_PREFIX)
        answer = {"role": "assistant", "content": format_plan(call.succeeded_steps())}
        selection.append((outcome, [dict(system), {"role": "user", "content": prompt}, answer]))
    return selection


def selection_counts(outcomes: Iterable[tuple[str, str]], scenes: Sequence[str]) -> dict[str, int]:
    """A self-training round's diagnostics from each call's (scene, ``selection_outcome``): the pairs kept
    per scene (``pairs/SCENE``) and the calls of each outcome, in all (``selection/OUTCOME``) and per scene
    (``selection/SCENE/OUTCOME``)."""
    counts = Counter(outcomes)
    result = {f"pairs/{scene}": counts[scene, "kept"] for scene in scenes}
    result |= {f"selection/{o}": sum(counts[s, o] for s in scenes) for o in SELECTION_OUTCOMES}
    result |= {f"selection/{s}/{o}": counts[s, o] for s in scenes for o in SELECTION_OUTCOMES}
    return result


def self_training_pairs(calls: Iterable[PlanningCall]) -> list[Pair]:
    """The pairs ``self_training_selection`` keeps, in the calls' order."""
    return [pair for _, pair in self_training_selection(calls) if pair is not None]


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


@dataclass(frozen=True)
class PlanRules:
    """How plans are read and taken: ``parser`` (``plan_parser.PARSERS``), at most ``max_steps`` steps per
    plan, ``command_budget`` steps per episode, ``fail_threshold`` skipped steps in a row."""

    parser: str = "original"
    max_steps: int = MAX_STEPS
    command_budget: int = COMMAND_BUDGET
    fail_threshold: int = FAIL_THRESHOLD


def _places(world: Any) -> dict[str, str]:
    """Every object's receptacle ("held" in a hand), by name."""
    return {
        name: "held" if at < 0 else world.receptacles[at].name
        for name, at in zip(world.object_names, world.location, strict=True)
    }


def _snapshot(env: Any) -> tuple[frozenset[str], dict[str, str], int]:
    """The correctly placed objects, every object's receptacle, and how many objects and receptacles the
    robot knows."""
    world = env.unwrapped.world
    correct = frozenset(n for i, n in enumerate(world.object_names) if world.is_correct(i))
    robot = world.robots[0]
    return correct, _places(world), len(robot.known_objects) + len(robot.known_receptacles)


def planner_messages(observation: str, previous_steps: str = "") -> list[dict[str, str]]:
    """The planner's prompt for an ``llm_personalize`` observation as the original sends it: the system
    message, then the user message ending with ``step 1:``."""
    user = planner_prompt(observation, previous_steps, first_step=False) + PROMPT_PREFIX
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def skip_cause(world: Any, step: PlanStep) -> str | None:
    """Why the original would skip ``step`` in Housekeep ``world`` without acting, or None: no pattern
    matched; a name its key translation does not know (here: that the episode does not have, or of the
    wrong kind); ``go to`` an object or receptacle not observed yet (``postprocess``,
    ``llm_planner.py:53-59``)."""
    if step.command is None:
        return "unparseable"
    command = parse(step.command, world.names, world.parsed)
    if command is None:
        return "not_admissible"
    if command.verb == GO_TO and not world.is_known(world.robots[0], command.target):
        return "not_admissible"
    return None


class _Episode:
    """One episode being played: its env, last observation, calls and the steps it has taken."""

    def __init__(self, env: Any, seed: int, options: dict[str, Any] | None, rules: PlanRules):
        self.env = env
        self.obs, self.info = env.reset(seed=seed, options=options)
        self.rules = rules
        self.calls: list[PlanningCall] = []
        self.steps_taken = 0  # played or skipped: the original's ``cur_step``
        self.skipped_in_a_row = 0
        self.done = False
        self.previous_steps = ""  # the prompt's prev_steps_msg (SayPlan's failure feedback)
        self.feedback = ""  # why the last step failed
        self._moved: list[str] = []  # objects moved during the current call, in the order of their first move

    def ready_to_plan(self) -> bool:
        """Whether the episode asks for a plan now. Past the budget the original's planner answers
        ``mission complete`` whatever the model says (``llm_planner.py:274-277``): the episode ends."""
        if self.steps_taken > self.rules.command_budget:
            self.done = True
        return not self.done

    def messages(self) -> list[dict[str, str]]:
        return planner_messages(self.obs["text"], self.previous_steps)

    def take(self, step: PlanStep, call: PlanningCall) -> bool:
        """Take one step: skip it or play it; True when it was played and succeeded."""
        self.steps_taken += 1
        cause = skip_cause(self.env.unwrapped.world, step)
        if cause is None:
            self.skipped_in_a_row = 0
            return self.act(step.command, call)
        self.skipped_in_a_row += 1
        call.played.append((step.command, False))
        call.failures.append(cause)
        self.feedback = invalid_command_feedback(step.command or step.text, self.admissible())
        return False

    def act(self, command: str, call: PlanningCall) -> bool:
        """Play ``command`` in the env; True when it succeeded."""
        world = self.env.unwrapped.world
        before = _places(world)
        self.obs, _, terminated, truncated, self.info = self.env.step(command)
        after = _places(world)
        self._moved += [name for name in after if after[name] != before[name] and name not in self._moved]
        ok = bool(self.info["action_succeeded"]) and not self.info["invalid_action"]
        self.feedback = str(self.info.get("feedback", ""))
        call.played.append((command, ok))
        if not ok:
            call.failures.append("not_admissible" if self.info["invalid_action"] else "failed")
        self.done = terminated or truncated or command == MISSION_COMPLETE
        return ok

    def admissible(self) -> list[str]:
        return list(self.info.get("admissible_commands", ()))

    def play_plan(self, messages: list[dict[str, str]], answer: str, stop_on_failure: bool) -> None:
        parsed = parse_plan(answer, max_steps=self.rules.max_steps, parser=self.rules.parser)
        call = PlanningCall(messages, answer, [s.text for s in parsed.steps])
        self._around(call, lambda: self._play_steps(call, parsed.steps, stop_on_failure))

    def _play_steps(self, call: PlanningCall, steps: Sequence[PlanStep], stop_on_failure: bool) -> None:
        self.previous_steps = ""
        if not steps:  # the original's planner has no next step: the episode ends (hie_policy.py:290)
            self.done = True
            return
        for step in steps:
            if self.skipped_in_a_row > self.rules.fail_threshold:
                self.done = True
            if self.done:
                return
            if not self.take(step, call) and stop_on_failure:
                self.previous_steps = f"The step '{step.text}' failed: {self.feedback[:_FEEDBACK_CHARS]}"
                return

    def play_command(self, messages: list[dict[str, str]], command: str) -> None:
        """SayCan: one admissible command, played as chosen."""
        call = PlanningCall(messages, command, [command])

        def play() -> None:
            self.steps_taken += 1
            self.skipped_in_a_row = 0
            self.act(command, call)

        self._around(call, play)

    def _around(self, call: PlanningCall, play: Callable[[], Any]) -> None:
        call.correct_before, before, known_before = _snapshot(self.env)
        self._moved = []
        play()
        call.correct_after, after, known_after = _snapshot(self.env)
        call.moves = tuple((name, before[name], after[name]) for name in self._moved)
        call.discovered = known_after - known_before
        self.calls.append(call)

    def result(self) -> Rollout:
        metrics = self.info.get("episode_metrics") or self.env.unwrapped.episode_metrics()
        return Rollout(self.calls, metrics)


def scoring_context(messages: Sequence[dict[str, str]]) -> str:
    """SayCan's context: the system and user prompts as plain text; the user prompt ends with ``step 1:``."""
    return "\n\n".join(m["content"] for m in messages)


def play(
    make_env: Callable[[], Any],
    backend: LLMBackend,
    jobs: Sequence[tuple[str, int]],
    *,
    variant: str = "planner",
    seed: int = 0,
    sampling: dict[str, Any] | None = None,
    rules: PlanRules | None = None,
    log: AnswerLog | None = None,
) -> list[Rollout]:
    """Play the ``(scene, episode index)`` jobs of a Housekeep-Text env (``text_style="llm_personalize"``)
    with one of ``VARIANTS``, sampling with ``PAPER_SAMPLING`` updated by ``sampling``; episode index i is
    reset with seed i. With ``log``, the answers logged there are replayed and every new one is logged as
    it comes (``answer_log.py``)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown planner variant {variant!r}; valid: {list(VARIANTS)}")
    settings = {**PAPER_SAMPLING, **(sampling or {})}
    rules = rules or PlanRules()
    episodes = [_Episode(make_env(), index, {"scene": scene, "episode_index": index}, rules) for scene, index in jobs]
    one_at_a_time = _answers_one_at_a_time(backend)
    round_number = 0
    while active := [(position, e) for position, e in enumerate(episodes) if e.ready_to_plan()]:
        positions = [position for position, _ in active]
        conversations = [e.messages() for _, e in active]
        if variant == "saycan":
            questions = [(scoring_context(m), e.admissible()) for m, (_, e) in zip(conversations, active, strict=True)]
            scored = _ask(log, round_number, positions, questions, partial(_score, backend), one_at_a_time=False)
            for (_, episode), messages, (_, options), scores in zip(
                active, conversations, questions, scored, strict=True
            ):
                episode.play_command(messages, options[max(range(len(options)), key=scores.__getitem__)])
        else:
            ask = partial(chat_batch, backend, **settings, seed=seed + round_number)
            answers = _ask(log, round_number, positions, conversations, ask, one_at_a_time)
            for (_, episode), messages, answer in zip(active, conversations, answers, strict=True):
                episode.play_plan(messages, answer, stop_on_failure=variant == "sayplan")
        round_number += 1
    results = [e.result() for e in episodes]
    for episode in episodes:
        episode.env.close()
    return results


def _score(backend: LLMBackend, questions: list[tuple[str, list[str]]]) -> list[list[float]]:
    """SayCan's scores of each (context, admissible commands) question, in one call."""
    return backend.score([context for context, _ in questions], [options for _, options in questions])


def _answers_one_at_a_time(backend: Any) -> bool:
    """Whether the model under ``backend``'s wrappers (recording, cache) answers one conversation per call
    (llama.cpp, an API): a round is then asked conversation by conversation, each answer logged as it comes."""
    while (inner := getattr(backend, "backend", None)) is not None:
        backend = inner
    return getattr(backend, "chat_batch", None) is None


def _ask(
    log: AnswerLog | None,
    round_number: int,
    positions: list[int],
    questions: list[Any],
    ask: Callable[[list[Any]], list[Any]],
    one_at_a_time: bool,
) -> list[Any]:
    """The answers to ``questions`` (asked in round ``round_number`` by the episodes at ``positions``);
    ``ask(questions)`` answers a list of them in one call. With a ``log``, the answers logged for the same
    questions are taken from it and only the others asked: all in one call, or one call each when
    ``one_at_a_time``; each call's answers are logged when it returns."""
    if log is None:
        return ask(questions)
    asked = [question_digest(question) for question in questions]
    answers = [log.get(round_number, p, digest) for p, digest in zip(positions, asked, strict=True)]
    missing = [i for i, answer in enumerate(answers) if answer is None]
    calls = [[i] for i in missing] if one_at_a_time else [missing] if missing else []
    for chosen in calls:
        for i, answer in zip(chosen, ask([questions[i] for i in chosen]), strict=True):
            answers[i] = answer
        log.put(round_number, {positions[i]: (asked[i], answers[i]) for i in chosen})
    return answers


def summarize(per_scene: dict[str, list[Rollout]]) -> dict[str, Any]:
    """LLM-Personalize's success rate per scene (mean, sample std, each episode's in the order played: a list
    that pairs planners evaluated on the same episodes) and overall, with the planner's parse rate, step
    success rate, per-plan score, planning calls per episode, the share of each failure cause among steps,
    and the objects put down per episode with the share of them put on a correct receptacle."""
    everything = [r for runs in per_scene.values() for r in runs]
    steps = sum(len(call.played) for r in everything for call in r.calls)
    failures = sum((r.failure_counts() for r in everything), Counter())
    calls = [call for r in everything for call in r.calls]
    by_scene = {scene: [r.metrics["success_rate"] for r in runs] for scene, runs in per_scene.items()}
    # each object a call put down (on a receptacle, not in the hand): on one of its correct receptacles or not
    placed = [float(name in call.correct_after) for call in calls for name, _, after in call.moves if after != "held"]
    return {
        **{f"success_rate/{scene}": _mean(values) for scene, values in by_scene.items()},
        **{f"success_rate_std/{scene}": _std(values) for scene, values in by_scene.items()},
        **{f"episode_success/{scene}": values for scene, values in by_scene.items()},
        "success_rate": _mean([r.metrics["success_rate"] for r in everything]),
        "success_rate_std": _std([r.metrics["success_rate"] for r in everything]),
        "episodes": len(everything),
        "parse_rate": _mean([r.parse_rate for r in everything]),
        "step_success_rate": _mean([r.step_success_rate for r in everything]),
        "plan_score": _mean([call.score for call in calls]),
        "planning_calls": _mean([len(r.calls) for r in everything]),
        **{f"failed_steps/{cause}": failures[cause] / steps if steps else 0.0 for cause in FAILURE_CAUSES},
        "placements": len(placed) / len(everything) if everything else 0.0,
        "placed_correctly": _mean(placed),
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _std(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = _mean(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
