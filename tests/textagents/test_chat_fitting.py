"""``chat_fitting``: a conversation that does not fit the model's context is asked without its oldest exchanges."""

from __future__ import annotations

import pytest

from tests.textagents.methods.scripted_llm import ContextLimited
from textagents.llm.base import ContextOverflowError, chat_fitting


def _messages(*contents: str) -> list[dict[str, str]]:
    roles = ["system"] + ["user", "assistant"] * len(contents)
    return [{"role": role, "content": content} for role, content in zip(roles, contents, strict=False)]


def test_a_conversation_that_fits_is_asked_whole():
    backend = ContextLimited(["ok"], context_chars=100)
    messages = _messages("s", "q1", "a1", "q2")
    assert chat_fitting(backend, messages, 1) == ("ok", messages) and backend.refused == 0


def test_the_oldest_exchanges_are_left_out_two_messages_at_a_time_until_it_fits():
    messages = _messages("system", "q1" * 10, "a1" * 10, "q2" * 10, "a2" * 10, "q3")
    backend = ContextLimited(["ok"], context_chars=len("system") + 40 + 2)
    answer, asked = chat_fitting(backend, messages, 1)
    assert answer == "ok" and asked == [messages[0], *messages[3:]] and backend.refused == 1
    backend = ContextLimited(["ok"], context_chars=len("system") + 2)
    assert chat_fitting(backend, messages, 1)[1] == [messages[0], messages[-1]] and backend.refused == 2


def test_an_odd_remainder_keeps_the_last_message_and_what_cannot_fit_is_refused():
    messages = _messages("system", "q1" * 10, "a1" * 10)
    backend = ContextLimited(["ok"], context_chars=len("system") + 20)
    assert chat_fitting(backend, messages, 1)[1] == [messages[0], messages[-1]]
    with pytest.raises(ContextOverflowError):
        chat_fitting(ContextLimited(["ok"], context_chars=5), messages, 1)
