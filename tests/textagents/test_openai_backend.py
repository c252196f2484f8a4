"""Retries, errors and token accounting of the OpenAI backend against a scripted loopback server."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.textagents.json_reply import send_json
from textagents.llm import LLMRequestError, OpenAIBackend

COMPLETION = {
    "id": "cmpl-1",
    "object": "text_completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "text": " go right", "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
}


class ScriptedServer(ThreadingHTTPServer):
    """Answers each POST with the next (status, body) of ``script``; records request bodies."""

    def __init__(self, script):
        super().__init__(("127.0.0.1", 0), _Scripted)
        self.script = list(script)
        self.requests = []

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Scripted(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        status, body = self.server.script.pop(0)
        send_json(self, body, status)


@pytest.fixture
def scripted(loopback_servers):
    return lambda script: loopback_servers(ScriptedServer, script)


def error(message):
    return {"error": {"message": message, "type": "x", "param": None, "code": None}}


def test_429_and_5xx_are_retried_with_exponential_backoff(scripted):
    server = scripted([(429, error("slow down")), (503, error("busy")), (500, error("oops")), (200, COMPLETION)])
    waits = []
    backend = OpenAIBackend("m", base_url=server.url, backoff_s=0.5, sleep=waits.append)
    assert backend.generate(["Action:"], max_tokens=3, stop="\n") == [" go right"]
    assert waits == [0.5, 1.0, 2.0]
    assert server.requests[-1]["stop"] == ["\n"] and server.requests[-1]["max_tokens"] == 3
    assert backend.usage.as_dict() | {"requests": 1} == {
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "total_tokens": 9,
        "requests": 1,
        "cache_hits": 0,
    }


def test_max_tokens_none_is_left_to_the_server(scripted):
    server = scripted([(200, COMPLETION)])
    assert OpenAIBackend("m", base_url=server.url).generate(["Action:"], max_tokens=None) == [" go right"]
    assert "max_tokens" not in server.requests[-1]


def test_retries_give_up_with_a_clear_error(scripted):
    server = scripted([(500, error("down"))] * 3)
    backend = OpenAIBackend("m", base_url=server.url, max_retries=2, sleep=lambda s: None)
    with pytest.raises(LLMRequestError, match="still failing after 2 retries"):
        backend.generate(["x"])
    assert len(server.requests) == 3


def test_client_errors_fail_at_once_with_the_servers_message(scripted):
    server = scripted([(400, error("max_tokens is too large"))])
    backend = OpenAIBackend("m", base_url=server.url, sleep=lambda s: pytest.fail("4xx must not be retried"))
    with pytest.raises(LLMRequestError, match=r"HTTP 400.*max_tokens is too large"):
        backend.generate(["x"])


def test_missing_key_for_openai_itself_is_explained(monkeypatch):
    monkeypatch.delenv("MY_API_KEY", raising=False)
    with pytest.raises(LLMRequestError, match=r"\$MY_API_KEY"):
        OpenAIBackend("gpt-4o", api_key_env="MY_API_KEY")


def test_score_requires_prompt_logprobs(scripted):
    server = scripted([(200, COMPLETION)])
    with pytest.raises(LLMRequestError, match="no prompt log-probs"):
        OpenAIBackend("m", base_url=server.url).score(["Action:"], [[" go right"]])
    assert server.requests[0] | {"prompt": None} == {
        "model": "m",
        "prompt": None,
        "echo": True,
        "logprobs": 1,
        "max_tokens": 0,
        "temperature": 0.0,
    }
