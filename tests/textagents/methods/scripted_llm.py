"""A chat backend that answers from a script, for the background-knowledge tests."""

from __future__ import annotations

from textagents.llm.accounting import TokenUsage


class Scripted:
    """Answers each chat with the next scripted answer and keeps the messages it was asked."""

    model_name = "scripted"

    def __init__(self, answers):
        self.answers, self.asked, self.usage = list(answers), [], TokenUsage()

    def chat(self, messages, **sampling):
        self.asked.append([dict(m) for m in messages])
        return self.answers.pop(0)
