"""ELLM's Housekeep question: does an object belong on a receptacle? The yes/no prompt, its answer parser and
``PlacementJudge``, which asks an LLM (any backend) and caches the answer per (object, receptacle).

The prompt has the original's structure (``text_housekeep/lm.py``): a sentence saying the robot can pick
objects up and put them elsewhere and must tell whether an item goes in/on a receptacle, three worked
questions answered on the same line (one "No.", two "Yes."), then the question for the pair, ending with
":" so that the answer is the next word. The original's text has no license: the wording and examples here
are ours. Names are ELLM's: the object's category ("tennis ball") and the receptacle's room type and
category ("bathroom bottom cabinet").

The original never generated an answer: it read the log-probabilities of " Yes" and " No" among the top 5
of the first answer token, renormalised them over the two and said yes when P(yes) > its threshold.
``method="score"`` does the same with ``LLMBackend.score`` (the two candidates' full log-probabilities,
one forward per pair); ``method="generate"`` (for a backend that cannot score) generates a few greedy tokens
and parses them, counting answers that say neither (treated as no).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from textagents.llm.base import LLMBackend

PREFIX = (
    "You are a household robot: you can pick objects up and put them down somewhere else. For each question, "
    "say whether the item belongs in/on the receptacle.\n"
    "Does a muddy boot belong in/on the dining room table: No.\n"
    "Does a frying pan belong in/on the kitchen cabinet: Yes.\n"
    "Does a bath towel belong in/on the bathroom shelf: Yes.\n"
)
#: What ``method="score"`` compares: the answer words as the examples write them, after the ":".
CANDIDATES = (" Yes", " No")
#: ``method="generate"``: a few greedy tokens are enough for "Yes." (the original asked for 2).
SAMPLING = {"max_tokens": 3, "temperature": 0.0, "stop": ["\n"]}
METHODS = ("score", "generate")
_FIRST_WORD = re.compile(r"^[\W_]*([a-z]+)")


def placement_prompt(obj: str, receptacle: str) -> str:
    """The question for one pair, e.g. ``placement_prompt("tennis ball", "bedroom chair")``."""
    return f"{PREFIX}Does a {obj} belong in/on the {receptacle}:"


def parse_yes_no(answer: str) -> bool | None:
    """True for an answer whose first word is yes, False for no, None for anything else (empty, "maybe",
    "I think yes"): leading spaces, quotes and punctuation are skipped, case is ignored."""
    match = _FIRST_WORD.match(answer.lower())
    word = match.group(1) if match else ""
    return True if word == "yes" else False if word == "no" else None


@dataclass(frozen=True)
class Judgement:
    """One answer about a pair: ``yes``; with ``method="score"`` ``p_yes``, P(" Yes") renormalised over the
    two answers; with ``method="generate"`` the ``answer`` text and whether it ``parsed`` as yes or no."""

    yes: bool
    p_yes: float | None = None
    answer: str | None = None
    parsed: bool = True


def p_yes(yes_logprob: float, no_logprob: float) -> float:
    """P(yes) of the two answers' log-probabilities, renormalised over the two (the original's rule)."""
    return 1.0 / (1.0 + math.exp(no_logprob - yes_logprob))


@dataclass
class PlacementJudge:
    """Whether ``backend`` says an object belongs on a receptacle, cached per (object, receptacle).

    ``method``: ``"score"`` (yes when ``p_yes > threshold``, as the original) or ``"generate"``. Counts the
    pairs sent to the LLM (``calls``), the answers taken from the cache and the generated answers that said
    neither yes nor no (``unparseable``; judged no).
    """

    backend: LLMBackend
    method: str = "score"
    threshold: float = 0.5
    cache: dict[tuple[str, str], Judgement] = field(default_factory=dict)
    calls: int = 0
    cache_hits: int = 0
    unparseable: int = 0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not 0 <= self.threshold < 1:
            raise ValueError(f"threshold must be in [0, 1), got {self.threshold}")

    def says_yes(self, obj: str, receptacle: str) -> bool:
        """The (cached) answer for one pair."""
        return self.judge([(obj, receptacle)])[0].yes

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        """The answers for ``pairs``: those not cached yet are asked in one backend call."""
        missing = list(dict.fromkeys(p for p in pairs if p not in self.cache))
        self.cache_hits += len(pairs) - len(missing)
        if missing:
            prompts = [placement_prompt(obj, receptacle) for obj, receptacle in missing]
            self.calls += len(missing)
            self.cache.update(zip(missing, self._ask(prompts), strict=True))
        return [self.cache[p] for p in pairs]

    def _ask(self, prompts: list[str]) -> list[Judgement]:
        if self.method == "score":
            scores = self.backend.score(prompts, [list(CANDIDATES)] * len(prompts))
            probabilities = [p_yes(yes, no) for yes, no in scores]
            return [Judgement(p > self.threshold, p_yes=p) for p in probabilities]
        judgements = []
        for answer in self.backend.generate(prompts, **SAMPLING):
            said = parse_yes_no(answer)
            self.unparseable += said is None
            judgements.append(Judgement(bool(said), answer=answer, parsed=said is not None))
        return judgements
