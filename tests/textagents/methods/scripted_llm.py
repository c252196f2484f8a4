"""A chat backend that answers from a script, for the background-knowledge tests."""

from __future__ import annotations

from textagents.llm.accounting import TokenUsage


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
