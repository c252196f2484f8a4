"""BK-Pref's labelling: the LLM compares two windows of a random policy's (action, observation) snippets
(``pref_window`` consecutive steps, one snippet each, oldest first; the original's 5-step segments) and
says which shows more progress toward the mission (the original's ``label_preference.py``: a system prompt with
the environment's description and the answer format, one user message with snippets A and B, the rank
read from the ``[Rank]`` section). The prompts follow the original's structure in our words (its files
carry no license; ``prompt_source: original`` uses them); the snippets name the mission, which the
original's did not (it asked for common-sense progress without the goal).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from textagents.llm.base import LLMBackend, chat_batch
from textagents.methods.bk.config import SAMPLING
from textagents.methods.bk.environments import ENVIRONMENTS
from textagents.methods.bk.samples import Step
from textagents.methods.core.original_prompts import original_text

#: Our wording of the original's labelling request: compare two snippets, think, then rank in a fixed format.
SYSTEM = (
    "You judge the behaviour of an agent. Compare the two snippets of its behaviour shown to you and decide "
    "which one shows more progress. Judge from general knowledge of how this environment works. This is "
    "the environment:\n\n{environment}\n\n"
    "Each time, I will give you:\n\nSnippet A:\n...\n\nSnippet B:\n...\n\n"
    "{snippet} Answer with:\n"
    "- [Thoughts] A short summary of each snippet in the light of your knowledge of the environment. "
    "Consider 1) whether the action was valid and had an effect, 2) whether the behaviour is coherent, and "
    "3) whether it brings the agent closer to completing its mission.\n"
    "- [Rank] One of A > B, B > A or A = B (use A = B only when you really cannot tell).\n\n"
    "ANSWER FORMAT:\n```\n[Thoughts]\n...\n\n[Rank]\nA > B OR B > A OR A = B\n```\n"
)
#: What ``SYSTEM`` says a snippet holds: one step, or (``pref_window`` > 1) several.
SNIPPET_ONE_STEP = "A snippet gives the agent's mission, the action it just took and what it observes now."
SNIPPET_STEPS = (
    "A snippet gives several consecutive steps of the agent, oldest first: at each step its mission, the "
    "action it just took and what it observes then."
)
USER = "Snippet A:\n{a}\n\nSnippet B:\n{b}\n"
_ORIGINAL_FILES = {
    "system": "prompts/bk/preference_labeling/system.txt",
    "user": "prompts/bk/preference_labeling/user.txt",
}
#: Labels: the probability that snippet B is the better one.
A_BETTER, EQUAL, B_BETTER = 0.0, 0.5, 1.0
_RANK = re.compile(r"\[?\s*\brank\b\s*\]?\s*:?", re.IGNORECASE)
_COMPARISON = re.compile(r"\b([AB])\s*(>|<|=)\s*([AB])\b")
#: How many conversations go to the backend at once (one batched generation on a local model).
BATCH = 8


def prompts(source: str = "ours") -> dict[str, str]:
    """The system and user prompts: ``ours`` or the ``original``'s files (downloaded and checked), whose
    placeholders are renamed to ours."""
    if source == "ours":
        return {"system": SYSTEM, "user": USER}
    if source != "original":
        raise ValueError(f"prompt source must be 'ours' or 'original', got {source!r}")
    texts = {key: original_text(name) for key, name in _ORIGINAL_FILES.items()}
    texts["system"] = texts["system"].replace("{environment_description}", "{environment}")
    texts["user"] = texts["user"].replace("{desc_a}", "{a}").replace("{desc_b}", "{b}")
    return texts


def snippet_text(mission: str, action: str | None, observation: str, with_action: bool = True) -> str:
    """A snippet as the LLM and BK-Pref's scorer read it (without the action line unless ``with_action``)."""
    if not with_action:
        return f"Mission: {mission}\nObservation:\n{observation}"
    return f"Mission: {mission}\nAction: {action or 'none (the episode starts)'}\nObservation:\n{observation}"


def step_snippet(step: Step, with_action: bool = True) -> str:
    return snippet_text(step.mission, step.action, step.observation, with_action)


def window_text(steps: Sequence[Step], with_action: bool = True) -> str:
    """What the LLM is shown of a window: one step's snippet alone, several numbered in order (as the
    original's ``utils/caption.py:43-48`` numbers its segment's steps)."""
    if len(steps) == 1:
        return step_snippet(steps[0], with_action)
    return "\n\n".join(f"Step {i}:\n{step_snippet(step, with_action)}" for i, step in enumerate(steps, 1))


def parse_preference(answer: str) -> float | None:
    """``A_BETTER``, ``B_BETTER`` or ``EQUAL`` from the comparisons (``A > B``, ``B < A``, ``A = B`` ...) after
    the answer's last ``[Rank]`` marker (the whole answer when it has none); None when there is no
    comparison or they contradict each other."""
    markers = list(_RANK.finditer(answer))
    section = answer[markers[-1].end() :] if markers else answer
    labels = set()
    for left, sign, right in _COMPARISON.findall(section):
        if left == right:
            return None
        if sign == "=":
            labels.add(EQUAL)
        else:
            better = left if sign == ">" else right
            labels.add(A_BETTER if better == "A" else B_BETTER)
    return labels.pop() if len(labels) == 1 else None


@dataclass(frozen=True)
class PreferenceLabel:
    """One labelled pair: the snippets, the LLM's answer and its label (None: unparseable)."""

    a: str
    b: str
    answer: str
    label: float | None


def label_pairs(
    backend: LLMBackend,
    family: str,
    pairs: Sequence[tuple[str, str]],
    *,
    prompt_source: str = "ours",
    steps: int = 1,
    sampling: dict[str, Any] | None = None,
) -> list[PreferenceLabel]:
    """The LLM's label for each (snippet A, snippet B) of ``steps`` steps each, asked ``BATCH`` pairs at a
    time with ``sampling`` (None: ``SAMPLING``, the original's)."""
    if family not in ENVIRONMENTS:
        raise ValueError(f"no environment description for {family!r}; known: {sorted(ENVIRONMENTS)}")
    texts = prompts(prompt_source)
    snippet = SNIPPET_ONE_STEP if steps == 1 else SNIPPET_STEPS
    system = texts["system"].format(environment=ENVIRONMENTS[family], snippet=snippet)
    labels: list[PreferenceLabel] = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start : start + BATCH]
        conversations = [
            [{"role": "system", "content": system}, {"role": "user", "content": texts["user"].format(a=a, b=b)}]
            for a, b in chunk
        ]
        answers = chat_batch(backend, conversations, **(sampling or SAMPLING))
        labels.extend(
            PreferenceLabel(a, b, answer, parse_preference(answer))
            for (a, b), answer in zip(chunk, answers, strict=True)
        )
    return labels
