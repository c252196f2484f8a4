"""``textagents serve``: an OpenAI-compatible HTTP server over a local ``transformers`` model.

Endpoints: ``GET /v1/models``, ``POST /v1/completions`` (``logprobs``, ``echo``, ``stream``),
``POST /v1/chat/completions`` (``logprobs``/``top_logprobs``, ``stream``). Standard library only
(``ThreadingHTTPServer``); one forward pass at a time (the backend's lock). Bound to 127.0.0.1 unless told
otherwise; optional bearer API key; request bodies over ``max_request_bytes`` get 413; malformed JSON or
bad fields get 400 with a message naming the problem, in OpenAI's error format.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from textagents.llm.base import Sampling
from textagents.llm.transformers_backend import Generated, TransformersBackend

MAX_LOGPROBS = 20


class RequestError(Exception):
    """A client error: the HTTP status and the message sent back."""

    def __init__(self, status: HTTPStatus, message: str, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.param = param


# ---------------------------------------------------------------------- request fields
def _field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise RequestError(HTTPStatus.BAD_REQUEST, f"'{name}' must be a number, got {value!r}", name)
    if not isinstance(value, kind):
        raise RequestError(HTTPStatus.BAD_REQUEST, f"'{name}' has the wrong type: {value!r}", name)
    return value


def sampling_of(body: dict[str, Any], max_tokens_limit: int, max_tokens_key: str = "max_tokens") -> Sampling:
    max_tokens = _field(body, max_tokens_key, int, None)
    if max_tokens is None:
        max_tokens = _field(body, "max_tokens", int, 16)
    if not 0 <= max_tokens <= max_tokens_limit:
        raise RequestError(HTTPStatus.BAD_REQUEST, f"'max_tokens' must be in 0..{max_tokens_limit}, got {max_tokens}")
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is not None and not (isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
        raise RequestError(HTTPStatus.BAD_REQUEST, f"'stop' must be a string or a list of strings, got {stop!r}")
    if _field(body, "n", int, 1) != 1:
        raise RequestError(HTTPStatus.BAD_REQUEST, "only n=1 is supported", "n")
    try:
        return Sampling.of(
            max_tokens=max_tokens,
            temperature=float(_field(body, "temperature", (int, float), 1.0)),
            top_p=float(_field(body, "top_p", (int, float), 1.0)),
            stop=stop or (),
            seed=_field(body, "seed", int, None),
        )
    except ValueError as error:
        raise RequestError(HTTPStatus.BAD_REQUEST, str(error)) from error


def _is_token_ids(value: Any) -> bool:
    return (
        isinstance(value, list) and bool(value) and all(isinstance(t, int) and not isinstance(t, bool) for t in value)
    )


def prompts_of(prompt: Any, vocabulary_size: int) -> list[str | list[int]]:
    """The request's prompts: a string, a list of strings, token ids, or a list of token-id lists."""
    if isinstance(prompt, str) or _is_token_ids(prompt):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt and all(isinstance(p, str) or _is_token_ids(p) for p in prompt):
        prompts = list(prompt)
    else:
        message = "'prompt' must be a string, a list of strings, a list of token ids or a list of such lists"
        raise RequestError(HTTPStatus.BAD_REQUEST, message, "prompt")
    for p in prompts:
        if not isinstance(p, str) and not all(0 <= t < vocabulary_size for t in p):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"token ids must be in 0..{vocabulary_size - 1}", "prompt")
    return prompts


def _error_body(status: HTTPStatus, message: str, param: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": status.value}}


# ---------------------------------------------------------------------- responses
class OpenAIEndpoints:
    """The API's logic, independent of HTTP: request dict -> response dict (or chunks when streaming)."""

    def __init__(self, backend: TransformersBackend, model_name: str, max_tokens_limit: int = 1024):
        self.backend = backend
        self.model_name = model_name
        self.max_tokens_limit = max_tokens_limit
        self.created = int(time.time())

    def models(self) -> dict[str, Any]:
        card = {"id": self.model_name, "object": "model", "created": self.created, "owned_by": "textagents"}
        return {"object": "list", "data": [card]}

    def _check_model(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if model is not None and model != self.model_name:
            raise RequestError(
                HTTPStatus.NOT_FOUND, f"model {model!r} is not served here; available: {self.model_name!r}", "model"
            )

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_model(body)
        prompts = prompts_of(body.get("prompt"), len(self.backend.tokenizer))
        sampling = sampling_of(body, self.max_tokens_limit)
        top = _field(body, "logprobs", int, None)
        if top is not None and not 0 <= top <= MAX_LOGPROBS:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"'logprobs' must be in 0..{MAX_LOGPROBS}", "logprobs")
        echo = bool(_field(body, "echo", bool, False))
        if echo and self.backend.seq2seq:
            raise RequestError(HTTPStatus.BAD_REQUEST, "echo is not supported for seq2seq models", "echo")
        wanted = 0 if top is None else max(top, 1)
        generated = self.backend.generate_detailed(prompts, sampling, logprobs=wanted)
        choices, prompt_tokens, completion_tokens = [], 0, 0
        for index, (prompt, completion) in enumerate(zip(prompts, generated, strict=True)):
            prompt_tokens += completion.prompt_tokens
            completion_tokens += len(completion.tokens)
            echoed = self.backend.prompt_logprobs(prompt, top=max(wanted, 1)) if echo else None
            choices.append(
                {
                    "index": index,
                    "text": (echoed.text if echoed is not None else "") + completion.text,
                    "logprobs": None if top is None else completion_logprobs(echoed, completion, top),
                    "finish_reason": completion.finish_reason,
                }
            )
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": choices,
            "usage": _usage(prompt_tokens, completion_tokens),
        }

    def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_model(body)
        messages = body.get("messages")
        valid = (
            isinstance(messages, list)
            and messages
            and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in messages
            )
        )
        if not valid:
            raise RequestError(
                HTTPStatus.BAD_REQUEST,
                "'messages' must be a non-empty list of {'role': str, 'content': str} objects",
                "messages",
            )
        sampling = sampling_of(body, self.max_tokens_limit, max_tokens_key="max_completion_tokens")
        want_logprobs = bool(_field(body, "logprobs", bool, False))
        top = _field(body, "top_logprobs", int, 0)
        if not 0 <= top <= MAX_LOGPROBS:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"'top_logprobs' must be in 0..{MAX_LOGPROBS}", "top_logprobs")
        prompt = self.backend.chat_prompt(messages)
        (completion,) = self.backend.generate_detailed([prompt], sampling, logprobs=max(top, 1) if want_logprobs else 0)
        logprobs = None
        if want_logprobs:
            content = []
            for token, logprob, alternatives in zip(
                completion.tokens, completion.token_logprobs, completion.top_logprobs, strict=True
            ):
                ranked = sorted((alternatives or {}).items(), key=lambda kv: -kv[1])[:top]
                content.append(
                    {
                        **_token_entry(token, logprob),
                        "top_logprobs": [_token_entry(t, lp) for t, lp in ranked],
                    }
                )
            logprobs = {"content": content}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": completion.text},
                    "logprobs": logprobs,
                    "finish_reason": completion.finish_reason,
                }
            ],
            "usage": _usage(completion.prompt_tokens, len(completion.tokens)),
        }


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _token_entry(token: str, logprob: float | None) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def completion_logprobs(echoed: Generated | None, completion: Generated, top: int) -> dict[str, Any]:
    """The legacy completions ``logprobs`` object: tokens, their log-probs, top alternatives, text offsets."""
    parts = [echoed, completion] if echoed is not None else [completion]
    tokens, token_logprobs, top_logprobs, offsets = [], [], [], []
    base = 0
    for part in parts:
        tokens += part.tokens
        token_logprobs += part.token_logprobs
        for alternatives in part.top_logprobs:
            ranked = sorted(alternatives.items(), key=lambda kv: -kv[1])[:top] if alternatives is not None else None
            top_logprobs.append(dict(ranked) if ranked is not None else None)
        offsets += [base + o for o in part.offsets()]
        base += len(part.text)
    return {"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top_logprobs, "text_offset": offsets}


def stream_chunks(response: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A finished response as OpenAI streaming chunks: the content, then the finish reason."""
    if response["object"] == "chat.completion":
        choice = response["choices"][0]
        base = {key: response[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        yield base | {
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": choice["message"]["content"]},
                    "logprobs": choice["logprobs"],
                    "finish_reason": None,
                }
            ]
        }
        yield base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    else:
        yield response


# ---------------------------------------------------------------------- HTTP
class _Handler(BaseHTTPRequestHandler):
    server: ModelHTTPServer
    protocol_version = "HTTP/1.1"
    #: Seconds a connection may sit idle or trickle a request before it is dropped (frees the thread).
    timeout = 120

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send_json(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, chunks: Iterator[dict[str, Any]]) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def _authorized(self) -> bool:
        expected = self.server.api_key
        if expected is None:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {expected}".encode())

    def _handle(self, method: str) -> None:
        try:
            if not self._authorized():
                raise RequestError(HTTPStatus.UNAUTHORIZED, "missing or wrong API key (Authorization: Bearer ...)")
            path = self.path.split("?", 1)[0].rstrip("/")
            routes = {
                ("GET", "/v1/models"): None,
                ("POST", "/v1/completions"): self.server.endpoints.completions,
                ("POST", "/v1/chat/completions"): self.server.endpoints.chat_completions,
            }
            if (method, path) not in routes:
                known = ", ".join(f"{m} {p}" for m, p in routes)
                raise RequestError(HTTPStatus.NOT_FOUND, f"no route {method} {path}; routes: {known}")
            if method == "GET":
                self._send_json(HTTPStatus.OK, self.server.endpoints.models())
                return
            body = self._read_json()
            response = routes[(method, path)](body)
            if body.get("stream") is True:
                self._send_stream(stream_chunks(response))
            else:
                self._send_json(HTTPStatus.OK, response)
        except RequestError as error:
            self._send_json(error.status, _error_body(error.status, str(error), error.param))
        except Exception as error:  # a bug or a model failure: report it without killing the server
            self.server.errors += 1
            message = f"internal error: {type(error).__name__}: {error}"
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, _error_body(HTTPStatus.INTERNAL_SERVER_ERROR, message))

    def _read_json(self) -> dict[str, Any]:
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.isdigit():
            self.close_connection = True
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a JSON body with a Content-Length header is required")
        length = int(length_header)
        if length > self.server.max_request_bytes:
            self.close_connection = True  # the unread body must not be parsed as the next request
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"request body of {length} bytes exceeds the limit of {self.server.max_request_bytes} bytes",
            )
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"malformed JSON body: {error}") from error
        if not isinstance(body, dict):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"the JSON body must be an object, got {type(body).__name__}")
        return body

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")


class ModelHTTPServer(ThreadingHTTPServer):
    """The HTTP server; ``start()`` serves from a background thread (tests), ``serve_forever()`` blocks."""

    daemon_threads = True

    def __init__(
        self,
        backend: TransformersBackend,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        model_name: str | None = None,
        api_key: str | None = None,
        max_request_bytes: int = 1_000_000,
        max_tokens_limit: int = 1024,
        verbose: bool = False,
    ):
        super().__init__((host, port), _Handler)
        self.endpoints = OpenAIEndpoints(backend, model_name or backend.model_name, max_tokens_limit)
        self.api_key = api_key
        self.max_request_bytes = max_request_bytes
        self.verbose = verbose
        self.errors = 0
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ModelHTTPServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True, name="textagents-serve")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (when ``start`` was called) and close the socket."""
        if self._thread is not None:
            self.shutdown()  # blocks until serve_forever returns: only valid while it runs
            self._thread.join()
            self._thread = None
        self.server_close()
