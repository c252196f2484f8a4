"""Record every LLM request and its answer to a JSONL file, and replay them later with no model.

``RecordingBackend(backend, path)`` wraps any backend: each ``generate`` prompt, ``chat`` conversation and
``score`` context becomes one line ``{"key", "kind", "model", "request", "response", "usage"}``; ``key`` is
the sha256 of the model, the request and its sampling (the response cache's key). Lines are appended with
one ``write`` on an ``O_APPEND`` descriptor under an exclusive lock and fsynced, so threads and processes
can record into one file; a line cut by a kill is skipped (and counted) on reading.

A single request the model refused because it did not fit its context is recorded too, with ``"refused":
"context_overflow"`` in place of a response, so that a run which then asked a shorter one (``chat_fitting``)
replays the same way.

``ReplayBackend(path)`` answers the recorded requests in the order they were recorded (a request asked more
often than recorded gets its last answer again), raises ``ContextOverflowError`` for a recorded refusal and
``ReplayMissError``, naming the request's hash and the nearest recorded prompt, for anything else. Usage
(tokens, requests) is replayed as recorded, so a replayed run reports the same accounting. This is how a run
with a large API model is re-run offline, how tests drive the real prompt and parse path without a model, and
how users share LLM outputs.
"""

from __future__ import annotations

import difflib
import json
import os
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textagents.jsonl import append_lines, read_jsonl
from textagents.llm.accounting import TokenUsage
from textagents.llm.base import ContextOverflowError, LLMBackend, Message, Sampling, chat_batch
from textagents.llm.cache import ResponseCache

_NEAREST_POOL = 5000  # recorded prompts compared for the "nearest" hint of a miss
#: A recorded request's ``refused`` value when the model's context could not hold it.
CONTEXT_OVERFLOW = "context_overflow"


class ReplayMissError(KeyError):
    """A request that the replay file does not hold."""

    def __str__(self) -> str:
        return str(self.args[0])


def request_key(model: str, request: dict[str, Any]) -> str:
    return ResponseCache.key({"model": model, **request})


def _generate_request(prompt: str, settings: Sampling) -> dict[str, Any]:
    return {"kind": "generate", "prompt": prompt, **settings.as_dict()}


def _chat_request(messages: Sequence[Message], settings: Sampling) -> dict[str, Any]:
    return {"kind": "chat", "messages": [dict(m) for m in messages], **settings.as_dict()}


def _score_request(context: str, candidates: Sequence[str]) -> dict[str, Any]:
    return {"kind": "score", "context": context, "candidates": list(candidates)}


def _prompt_text(request: dict[str, Any]) -> str:
    if request["kind"] == "chat":
        return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in request["messages"])
    return str(request.get("prompt", request.get("context", "")))


class RecordingBackend:
    """``backend`` with every request and response appended to ``path`` (see the module docstring)."""

    def __init__(self, backend: LLMBackend, path: str | os.PathLike[str]):
        self.backend = backend
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.model_name = backend.model_name

    @property
    def usage(self) -> TokenUsage:
        return self.backend.usage

    def _line(self, request: dict[str, Any], **outcome: Any) -> str:
        """The recording's line for ``request`` and what came of it (a response and its usage, or a refusal)."""
        record = {"key": request_key(self.model_name, request), "kind": request["kind"], "model": self.model_name}
        return json.dumps({**record, "request": request, **outcome}, ensure_ascii=False) + "\n"

    def _call(self, requests: list[dict[str, Any]], call: Callable[[], list[Any]]) -> list[Any]:
        before = self.usage.as_dict()
        try:
            responses = call()
        except ContextOverflowError as error:
            if len(requests) == 1:  # in a batch, which request did not fit is unknown
                append_lines(self.path, [self._line(requests[0], refused=CONTEXT_OVERFLOW, message=str(error))])
            raise
        after = self.usage.as_dict()
        spent = {k: after[k] - before[k] for k in ("prompt_tokens", "completion_tokens", "requests")}
        unspent = dict.fromkeys(spent, 0)
        lines = [  # the batch's cost counted once, on its first request
            self._line(request, response=response, usage=spent if index == 0 else unspent)
            for index, (request, response) in enumerate(zip(requests, responses, strict=True))
        ]
        append_lines(self.path, lines)
        return responses

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        settings = Sampling.of(**sampling)
        requests = [_generate_request(p, settings) for p in prompts]
        return self._call(requests, lambda: self.backend.generate(prompts, **sampling))

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        request = _chat_request(messages, Sampling.of(**sampling))
        return self._call([request], lambda: [self.backend.chat(messages, **sampling)])[0]

    def chat_batch(self, conversations: Sequence[Sequence[Message]], **sampling: Any) -> list[str]:
        settings = Sampling.of(**sampling)
        requests = [_chat_request(m, settings) for m in conversations]
        return self._call(requests, lambda: chat_batch(self.backend, conversations, **sampling))

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        requests = [_score_request(c, options) for c, options in zip(contexts, candidates, strict=True)]
        return self._call(requests, lambda: self.backend.score(contexts, candidates))


def read_records(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    """The records of a recording (answers and refusals) and the number of lines skipped (cut by a kill or
    corrupt)."""
    lines, skipped = read_jsonl(path)
    records = [
        r
        for r in lines
        if {"key", "kind", "request"} <= r.keys() and ("response" in r or r.get("refused") == CONTEXT_OVERFLOW)
    ]
    return records, skipped + len(lines) - len(records)


class ReplayBackend:
    """Serves the requests recorded in ``path`` with no model (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], model_name: str | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no LLM recording at {self.path} (record one with --llm-record FILE)")
        records, self.skipped_lines = read_records(self.path)
        if self.skipped_lines:
            warnings.warn(f"{self.path}: skipped {self.skipped_lines} unreadable line(s)", stacklevel=2)
        models = sorted({str(r.get("model")) for r in records})
        if model_name is None and len(models) > 1:
            raise ValueError(f"{self.path} holds several models {models}: name the one to replay (model_name=)")
        self.model_name = model_name or (models[0] if models else "replay")
        self.usage = TokenUsage()
        self._answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._refused: dict[str, str] = {}
        for record in records:
            if record.get("model") != self.model_name:
                continue
            if "response" in record:
                self._answers[record["key"]].append(record)
            else:
                self._refused[record["key"]] = str(record.get("message", CONTEXT_OVERFLOW))
        self._served: dict[str, int] = defaultdict(int)

    def __len__(self) -> int:
        return sum(len(v) for v in self._answers.values())

    def _answer(self, request: dict[str, Any]) -> Any:
        key = request_key(self.model_name, request)
        answers = self._answers.get(key)
        if not answers and key in self._refused:
            raise ContextOverflowError(f"{self.path} (recorded): {self._refused[key]}")
        if not answers:
            raise ReplayMissError(self._miss_message(key, request))
        index = self._served[key]
        self._served[key] += 1
        if index >= len(answers):  # asked more often than recorded: the last answer again
            self.usage.hit()
            return answers[-1]["response"]
        self.usage.add(**answers[index].get("usage", {"requests": 1}))
        return answers[index]["response"]

    def _miss_message(self, key: str, request: dict[str, Any]) -> str:
        text = _prompt_text(request)
        same_kind = [r for answers in self._answers.values() for r in answers[:1] if r["kind"] == request["kind"]]
        best, best_ratio = None, -1.0
        for record in same_kind[:_NEAREST_POOL]:
            ratio = difflib.SequenceMatcher(None, text, _prompt_text(record["request"]), autojunk=False).ratio()
            if ratio > best_ratio:
                best, best_ratio = record, ratio
        nearest = (
            f"; nearest recorded {request['kind']} request {best['key'][:12]} ({best_ratio:.0%} alike): "
            f"{_prompt_text(best['request'])[-200:]!r}"
            if best is not None
            else f"; the file has no {request['kind']} request at all"
        )
        return (
            f"{self.path}: no recorded answer for {request['kind']} request {key[:12]} "
            f"(prompt ending {text[-120:]!r}){nearest}"
        )

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        settings = Sampling.of(**sampling)
        return [self._answer(_generate_request(p, settings)) for p in prompts]

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        return self._answer(_chat_request(messages, Sampling.of(**sampling)))

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        return [self._answer(_score_request(c, options)) for c, options in zip(contexts, candidates, strict=True)]


def wrap_backend(
    make_backend: Callable[[], LLMBackend] | None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
) -> LLMBackend:
    """The backend a command uses: ``replay`` (no model is built), else ``make_backend()`` recorded into
    ``record`` when given. Every CLI's ``--llm-record`` / ``--llm-replay`` goes through here."""
    if replay is not None and record is not None:
        raise ValueError("give --llm-record or --llm-replay, not both")
    if replay is not None:
        return ReplayBackend(replay)
    if make_backend is None:
        raise ValueError("no model to run: give a model (--model / --base-url) or a recording to replay")
    backend = make_backend()
    return RecordingBackend(backend, record) if record is not None else backend
