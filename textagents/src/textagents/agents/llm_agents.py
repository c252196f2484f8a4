"""The two LLM agents: one generates a command (and is parsed to an admissible one), one scores every
admissible command (GLAM) and picks from the resulting distribution."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from textagents.agents.base import admissible_commands
from textagents.agents.parsing import MATCH_KINDS, ParsedCommand, candidate_lines, parse_command
from textagents.agents.prompts import PromptBuilder
from textagents.llm.base import LLMBackend, Sampling


class GenerationAgent:
    """Prompt (env text + mission + history) -> generate -> parse to an admissible command.

    Outputs that name no admissible command are matched fuzzily or replaced by a fallback (``"random"``:
    a seeded random admissible command, ``"first"``, or a command of your own); ``stats`` counts each kind
    of match and ``misses`` the decisions that were not an exact or contained match — an invalid output
    never reaches the env and never ends the episode. With ``multi_step=True`` (LLM-Personalize's
    planner) the later lines of an output are a plan, played while each step is admissible, before the
    model is asked again.
    """

    uid = "llm-generate"

    def __init__(
        self,
        backend: LLMBackend,
        prompt_builder: PromptBuilder,
        *,
        use_chat: bool = False,
        sampling: Mapping[str, Any] | None = None,
        fallback: str = "random",
        multi_step: bool = False,
        seed: int | None = None,
    ):
        self.backend = backend
        self.prompts = prompt_builder
        self.use_chat = use_chat
        default = {"max_tokens": 32, "temperature": 0.0, "stop": () if multi_step else ("\n",)}
        self.sampling = Sampling.of(**{**default, **dict(sampling or {})})
        self.fallback = fallback
        self.multi_step = multi_step
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.plan: deque[str] = deque()
        self.stats: Counter[str] = Counter({kind: 0 for kind in (*MATCH_KINDS, "planned")})
        self.last: ParsedCommand | None = None

    @property
    def params(self) -> dict[str, Any]:
        return {
            "model": self.backend.model_name,
            "prompt": type(self.prompts).__name__,
            "use_chat": self.use_chat,
            "sampling": self.sampling.as_dict(),
            "fallback": self.fallback,
            "multi_step": self.multi_step,
            "seed": self.seed,
        }

    @property
    def misses(self) -> int:
        return self.stats["fuzzy"] + self.stats["fallback"]

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.prompts.reset(obs, info)
        self.plan.clear()

    def _fallback_command(self, admissible: list[str]) -> str:
        if self.fallback == "random":
            return admissible[int(self.rng.integers(len(admissible)))]
        if self.fallback == "first":
            return admissible[0]
        return self.fallback

    def act(self, obs: Any, info: dict[str, Any]) -> str:
        admissible = admissible_commands(info)
        planned = self._next_planned(admissible)
        if planned is not None:
            self.stats["planned"] += 1
            self.prompts.record(planned)
            return planned
        prompt = self.prompts.build(obs, info)
        settings = self.sampling.as_dict()
        if self.use_chat:
            output = self.backend.chat(prompt.messages(), **settings)
        else:
            output = self.backend.generate([prompt.text], **settings)[0]
        parsed = parse_command(output, admissible, fallback=self._fallback_command(admissible))
        self.stats[parsed.kind] += 1
        self.last = parsed
        if self.multi_step:
            self.plan.extend(candidate_lines(output)[1:])
        self.prompts.record(parsed.command)
        return parsed.command

    def _next_planned(self, admissible: list[str]) -> str | None:
        """The next step of the current plan when it names an admissible command; else the plan is dropped."""
        if not self.plan:
            return None
        step = parse_command(self.plan.popleft(), admissible)
        if step.kind in ("exact", "contained"):
            return step.command
        self.plan.clear()
        return None


class ScoreError(ValueError):
    """A backend's ``score`` answer that no policy can be made of (not one number per candidate, NaN, +inf,
    or every candidate at -inf)."""


def checked_scores(answer: Any, commands: list[str], model: str) -> np.ndarray:
    """The scores of ``commands`` in ``answer`` (what ``backend.score`` returned for one context), or a
    ScoreError saying what was wrong; -inf is a valid score (probability 0) while another is finite."""
    try:
        scores = np.asarray(answer[0], dtype=np.float64)
    except (TypeError, ValueError, IndexError, KeyError):
        scores = None
    if scores is None or scores.shape != (len(commands),):
        raise ScoreError(
            f"{model}: score() returned {str(answer)[:200]!r}; expected one list of {len(commands)} numbers"
        )
    unusable = np.isnan(scores) | np.isposinf(scores)
    if unusable.any() or np.isneginf(scores).all():
        bad = {c: s for c, s in zip(commands, scores.tolist(), strict=True) if not np.isfinite(s)}
        raise ScoreError(f"{model}: score() gave no usable policy: non-finite scores {bad}")
    return scores


class ScoringAgent:
    """GLAM's policy: a softmax over ``backend.score(prompt, admissible commands)``; greedy or sampled.

    ``temperature`` divides the scores before the softmax; ``last_distribution`` holds the policy of the
    latest decision (command -> probability). A backend answer that gives no policy (None, the wrong
    count, NaN or +inf scores) raises a ``ScoreError`` instead of picking a command anyway.
    """

    uid = "llm-score"

    def __init__(
        self,
        backend: LLMBackend,
        prompt_builder: PromptBuilder,
        *,
        greedy: bool = True,
        temperature: float = 1.0,
        seed: int | None = None,
    ):
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.backend = backend
        self.prompts = prompt_builder
        self.greedy = greedy
        self.temperature = temperature
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.last_distribution: dict[str, float] = {}

    @property
    def params(self) -> dict[str, Any]:
        return {
            "model": self.backend.model_name,
            "prompt": type(self.prompts).__name__,
            "greedy": self.greedy,
            "temperature": self.temperature,
            "seed": self.seed,
        }

    def reset(self, obs: Any, info: dict[str, Any]) -> None:
        self.prompts.reset(obs, info)

    def distribution(self, obs: Any, info: dict[str, Any]) -> dict[str, float]:
        """The policy over the admissible commands now (builds the prompt, so it advances the history)."""
        admissible = admissible_commands(info)
        prompt = self.prompts.build(obs, info)
        candidates = [self.prompts.candidate_prefix + c for c in admissible]
        answer = self.backend.score([prompt.text], [candidates])
        scores = checked_scores(answer, admissible, self.backend.model_name)
        probs = np.exp((scores - scores.max()) / self.temperature)  # shifted first: no inf / inf at any temperature
        probs /= probs.sum()
        return dict(zip(admissible, probs.tolist(), strict=True))

    def act(self, obs: Any, info: dict[str, Any]) -> str:
        self.last_distribution = self.distribution(obs, info)
        commands = list(self.last_distribution)
        probs = np.fromiter(self.last_distribution.values(), dtype=np.float64)
        index = int(np.argmax(probs)) if self.greedy else int(self.rng.choice(len(commands), p=probs))
        self.prompts.record(commands[index])
        return commands[index]
