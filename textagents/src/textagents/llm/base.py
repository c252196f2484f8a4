"""The one interface every LLM backend implements: ``generate``, ``chat`` and ``score``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from textagents.llm.accounting import TokenUsage

#: How a local seq2seq model computes its decoder's cross-attention over a context's candidates
#: (``TransformersBackend``'s ``cross_attention``).
CROSS_ATTENTION = ("auto", "per_prompt", "per_candidate")

Message = Mapping[str, str]
PENALTIES = ("frequency_penalty", "presence_penalty")


class ContextOverflowError(ValueError):
    """A request whose prompt does not fit the model's context (llama.cpp's ``n_ctx``, a local model's
    positions, a server's maximum context length)."""


@dataclass(frozen=True)
class Sampling:
    """Decoding settings shared by every backend; ``temperature == 0`` means greedy; ``max_tokens=None``: no
    limit but the model's context (as OpenAI's API when a request names none). ``frequency_penalty`` and
    ``presence_penalty`` (in [-2, 2]) are OpenAI's: the logit of a token already generated is lowered by
    ``frequency_penalty`` times its count plus ``presence_penalty``."""

    max_tokens: int | None = 64
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        for name in PENALTIES:
            if not -2 <= getattr(self, name) <= 2:
                raise ValueError(f"{name} must be in [-2, 2], got {getattr(self, name)}")

    @classmethod
    def of(cls, **kwargs: Any) -> Sampling:
        """Sampling from keyword arguments; a string ``stop`` becomes a one-element tuple."""
        unknown = sorted(set(kwargs) - set(cls.__dataclass_fields__))
        if unknown:
            raise TypeError(f"unknown sampling argument(s) {unknown}; valid: {sorted(cls.__dataclass_fields__)}")
        stop = kwargs.get("stop")
        if isinstance(stop, str):
            kwargs["stop"] = (stop,)
        elif stop is not None:
            kwargs["stop"] = tuple(stop)
        return cls(**kwargs)

    def as_dict(self) -> dict[str, Any]:
        """The settings; penalties only when set, so that cache and recording keys made before they existed
        still match."""
        settings = {**asdict(self), "stop": list(self.stop)}
        return {k: v for k, v in settings.items() if k not in PENALTIES or v}

    def penalties(self) -> dict[str, float]:
        """The penalties that are set, by their OpenAI names."""
        return {name: getattr(self, name) for name in PENALTIES if getattr(self, name)}


def truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any stop string."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=len(text))
    return text[:cut]


@runtime_checkable
class LLMBackend(Protocol):
    """A language model.

    ``generate(prompts, **sampling)`` completes each prompt; ``chat(messages, **sampling)`` answers one
    conversation (a list of ``{"role", "content"}``); ``score(contexts, candidates)`` returns, for each
    context, the sum of the log-probabilities of each of its candidates' tokens given the context
    (lamorel's semantics). ``usage`` counts tokens and requests.
    """

    model_name: str
    usage: TokenUsage

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]: ...

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str: ...

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]: ...


def chat_batch(backend: LLMBackend, conversations: Sequence[Sequence[Message]], **sampling: Any) -> list[str]:
    """One answer per conversation: in one batched call when the backend has ``chat_batch`` (the local
    transformers model generates them together), else one ``chat`` call after another."""
    batched = getattr(backend, "chat_batch", None)
    if batched is not None:
        return batched(conversations, **sampling)
    return [backend.chat(messages, **sampling) for messages in conversations]


def chat_fitting(
    backend: LLMBackend, messages: Sequence[Message], keep: int, **sampling: Any
) -> tuple[str, list[Message]]:
    """The answer to ``messages`` and the messages it was asked with: when they do not fit the model's context,
    the oldest exchanges after the first ``keep`` messages are left out, two messages (a question and its
    answer) at a time, until they do; the last message is always kept. ``ContextOverflowError`` when even the
    first ``keep`` and the last do not fit."""
    asked = list(messages)
    while True:
        try:
            return backend.chat(asked, **sampling), asked
        except ContextOverflowError:
            if len(asked) - keep <= 1:
                raise
            asked = [*asked[:keep], *asked[min(keep + 2, len(asked) - 1) :]]


def transcript(messages: Sequence[Message]) -> str:
    """A conversation as plain ``role: content`` lines ending with ``assistant:`` (models with no template)."""
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"


def check_score_inputs(contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> None:
    """Errors naming the bad input for ``score``: one candidate list per context, strings, non-empty context."""
    if isinstance(contexts, str):
        raise TypeError("score(contexts, candidates) takes a list of contexts, got one string")
    if len(contexts) != len(candidates):
        raise ValueError(f"score got {len(contexts)} contexts but {len(candidates)} candidate lists")
    for index, (context, options) in enumerate(zip(contexts, candidates, strict=True)):
        if not isinstance(context, str) or not context:
            raise ValueError(f"context {index} must be a non-empty string, got {context!r}")
        if isinstance(options, str) or not all(isinstance(c, str) and c for c in options):
            raise ValueError(f"candidates of context {index} must be a list of non-empty strings, got {options!r}")
