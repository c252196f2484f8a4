"""A chat backend that answers from a script, for the background-knowledge tests."""

from __future__ import annotations

from textagents.llm.accounting import TokenUsage
from textagents.llm.base import ContextOverflowError


class Scripted:
    """Answers each chat with the next scripted answer (``default`` once they run out, if given) and keeps the
    messages and sampling settings it was asked with."""

    model_name = "scripted"

    def __init__(self, answers, default=None):
        self.answers, self.default, self.asked, self.sampling, self.usage = list(answers), default, [], [], TokenUsage()

    def chat(self, messages, **sampling):
        self.asked.append([dict(m) for m in messages])
        self.sampling.append(sampling)
        if not self.answers and self.default is not None:
            return self.default
        return self.answers.pop(0)


class ContextLimited(Scripted):
    """``Scripted`` with a context of ``context_chars`` characters: a conversation longer than that is refused
    as a local model refuses one longer than its context."""

    def __init__(self, answers, context_chars: int, default=None):
        super().__init__(answers, default)
        self.context_chars = context_chars
        self.refused = 0

    def chat(self, messages, **sampling):
        if sum(len(m["content"]) for m in messages) > self.context_chars:
            self.refused += 1
            raise ContextOverflowError(f"more than {self.context_chars} characters")
        return super().chat(messages, **sampling)
