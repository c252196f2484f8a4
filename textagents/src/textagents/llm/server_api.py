"""The OpenAI API of ``textagents serve``, independent of HTTP: a request body is checked, then answered.

Checking happens before the model is asked: the JSON itself (finite numbers, valid unicode, no recursion
bombs), each field's type and range, the prompts' lengths against the model's context and the request against
the per-request caps of ``Limits`` and of the constants below. Every refusal is a ``RequestError`` (a 4xx with
a message naming the problem); what passes becomes a job, a function that runs the model and returns the
response.

Fixed caps: ``MAX_LOGPROBS`` alternatives per token; ``MAX_STOP_STRINGS`` stop strings (OpenAI's limit) of at
most ``MAX_STOP_LENGTH`` characters each. transformers turns a request's stop strings into a table over the
whole vocabulary, built while the request holds the model, and keeps the last 8: for a 49k-token vocabulary,
16 strings of 256 characters took 5 s and 0.8 GB, 4 of 64 characters 0.4 s and 50 MB (the table alone). A
positive ``temperature`` under ``MIN_SAMPLING_TEMPERATURE`` decodes greedily, its limit: the logits divided by
it would overflow to infinity.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from textagents.llm.base import Sampling

if TYPE_CHECKING:  # torch stays unimported until a server is built: the CLI reads ``Limits`` for its defaults
    from textagents.llm.server_lora import LoraAdapters
    from textagents.llm.transformers_backend import Generated, TransformersBackend

MAX_LOGPROBS = 20
MAX_TEMPERATURE = 2.0
MIN_SAMPLING_TEMPERATURE = 1e-5
MAX_SEED = 2**63 - 1
MAX_STOP_STRINGS = 4
MAX_STOP_LENGTH = 64
#: Characters of a client's value quoted in an error message.
QUOTED_CHARS = 60

#: A checked request's work: runs the model, returns the response body (JSON, or a line of text).
Job = Callable[[], dict[str, Any] | str]


@dataclass(frozen=True)
class Limits:
    """What one request may ask of the server and how long it may take (``textagents serve``'s flags).

    Arguments:
        max_request_bytes: body size; larger bodies get 413.
        max_tokens: ``max_tokens`` of one completion.
        max_prompts: prompts in one ``/v1/completions`` request.
        max_request_tokens: prompt tokens plus ``max_tokens`` for each prompt, summed over a request.
        max_queue: requests waiting for or using the model; one more gets 429.
        request_timeout: seconds from a request's arrival to its answer; later, 503.
        header_timeout: seconds a connection has to send a request's line and headers in full, from its
            opening or the previous answer; later, it is closed.
        body_timeout: seconds from a request's headers to the end of its body; later, 408.
    """

    max_request_bytes: int = 1_000_000
    max_tokens: int = 1024
    max_prompts: int = 64
    max_request_tokens: int = 65_536
    max_queue: int = 512
    request_timeout: float = 300.0
    header_timeout: float = 20.0
    body_timeout: float = 60.0


class RequestError(Exception):
    """A request the server refuses: the HTTP status and the message sent back."""

    def __init__(self, status: HTTPStatus, message: str, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.param = param


def quoted(text: str) -> str:
    """``text`` for an error message: its repr, cut to ``QUOTED_CHARS`` characters."""
    return repr(text if len(text) <= QUOTED_CHARS else text[:QUOTED_CHARS] + "...")


def shown_number(text: str) -> str:
    """A number from the request for an error message: itself, or its length when it is long."""
    return text if len(text) <= QUOTED_CHARS else f"a number of {len(text)} characters"


def error_body(status: HTTPStatus, message: str, param: str | None = None) -> dict[str, Any]:
    """An error in OpenAI's format."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": status.value}}


# ---------------------------------------------------------------------- the body
def _refuse_constant(name: str) -> float:
    raise RequestError(HTTPStatus.BAD_REQUEST, f"{name} is not a JSON number: numbers must be finite")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise RequestError(HTTPStatus.BAD_REQUEST, f"the number {shown_number(text)} is out of range")
    return value


def _check_text(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = value[error.start : error.end].encode("unicode_escape").decode()
        message = f"the request holds invalid unicode: a lone surrogate {bad} is not text"
        raise RequestError(HTTPStatus.BAD_REQUEST, message) from error


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request's JSON object; malformed JSON, NaN or infinite numbers, nesting deep enough to exhaust
    the parser and strings that are not valid unicode (lone surrogates) are 400s."""
    try:
        body = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError as error:
        raise RequestError(HTTPStatus.BAD_REQUEST, "malformed JSON body: nested too deeply") from error
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, integers of over 4300 digits
        raise RequestError(HTTPStatus.BAD_REQUEST, f"malformed JSON body: {error}") from error
    if not isinstance(body, dict):
        raise RequestError(HTTPStatus.BAD_REQUEST, f"the JSON body must be an object, got {type(body).__name__}")
    values: list[Any] = [body]
    while values:  # a loop, not a recursion: the parser accepted any depth it reached
        value = values.pop()
        if isinstance(value, str):
            _check_text(value)
        elif isinstance(value, dict):
            for key in value:
                _check_text(key)
            values.extend(value.values())
        elif isinstance(value, list):
            values.extend(value)
    return body


# ---------------------------------------------------------------------- request fields
def _field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise RequestError(HTTPStatus.BAD_REQUEST, f"'{name}' must be a number, got {value!r}", name)
    if not isinstance(value, kind):
        wanted = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        message = f"'{name}' must be {wanted}, got {type(value).__name__}"
        raise RequestError(HTTPStatus.BAD_REQUEST, message, name)
    return value


def _in_range(body: dict[str, Any], name: str, kind: type, default: Any, low: float, high: float) -> Any:
    """Field ``name`` of type ``kind`` (ints count as floats), within ``low..high``."""
    value = _field(body, name, (int, float) if kind is float else kind, default)
    if value is not None and not low <= value <= high:
        message = f"'{name}' must be in {low}..{high}, got {shown_number(str(value))}"
        raise RequestError(HTTPStatus.BAD_REQUEST, message, name)
    return value if value is None else kind(value)


def stop_strings_of(stop: Any) -> list[str]:
    """The ``stop`` field: a string or a list of strings, at most ``MAX_STOP_STRINGS`` of at most
    ``MAX_STOP_LENGTH`` characters."""
    if stop is None:
        return []
    strings = [stop] if isinstance(stop, str) else stop
    if not (isinstance(strings, list) and all(isinstance(s, str) for s in strings)):
        message = f"'stop' must be a string or a list of strings, got {type(stop).__name__}"
        raise RequestError(HTTPStatus.BAD_REQUEST, message, "stop")
    if len(strings) > MAX_STOP_STRINGS:
        message = f"'stop' holds {len(strings)} strings; this server takes at most {MAX_STOP_STRINGS}"
        raise RequestError(HTTPStatus.BAD_REQUEST, message, "stop")
    for string in strings:
        if len(string) > MAX_STOP_LENGTH:
            message = (
                f"a stop string of {len(string)} characters ({quoted(string)}) is longer than this server's "
                f"limit of {MAX_STOP_LENGTH} characters"
            )
            raise RequestError(HTTPStatus.BAD_REQUEST, message, "stop")
    return strings


def sampling_of(body: dict[str, Any], max_tokens_limit: int, max_tokens_key: str = "max_tokens") -> Sampling:
    max_tokens = _in_range(body, max_tokens_key, int, None, 0, max_tokens_limit)
    if max_tokens is None:
        max_tokens = _in_range(body, "max_tokens", int, 16, 0, max_tokens_limit)
    stop = stop_strings_of(body.get("stop"))
    if _field(body, "n", int, 1) != 1:
        raise RequestError(HTTPStatus.BAD_REQUEST, "only n=1 is supported", "n")
    temperature = _in_range(body, "temperature", float, 1.0, 0, MAX_TEMPERATURE)
    top_p = _in_range(body, "top_p", float, 1.0, 0, 1)
    if top_p == 0:
        raise RequestError(HTTPStatus.BAD_REQUEST, "'top_p' must be in (0, 1]: 0 keeps no token", "top_p")
    return Sampling.of(
        max_tokens=max_tokens,
        temperature=temperature if temperature >= MIN_SAMPLING_TEMPERATURE else 0.0,
        top_p=top_p,
        stop=stop,
        seed=_in_range(body, "seed", int, None, 0, MAX_SEED),
        frequency_penalty=_in_range(body, "frequency_penalty", float, 0.0, -2, 2),
        presence_penalty=_in_range(body, "presence_penalty", float, 0.0, -2, 2),
    )


def wants_stream(body: dict[str, Any]) -> bool:
    """The ``stream`` field: whether the answer goes as server-sent events."""
    return bool(_field(body, "stream", bool, False))


def _is_token_ids(value: Any) -> bool:
    return (
        isinstance(value, list) and bool(value) and all(isinstance(t, int) and not isinstance(t, bool) for t in value)
    )


def prompts_of(prompt: Any, vocabulary_size: int, max_prompts: int) -> list[str | list[int]]:
    """The request's prompts: a string, a list of strings, token ids, or a list of token-id lists."""
    if isinstance(prompt, str) or _is_token_ids(prompt):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt and all(isinstance(p, str) or _is_token_ids(p) for p in prompt):
        prompts = list(prompt)
    else:
        message = "'prompt' must be a string, a list of strings, a list of token ids or a list of such lists"
        raise RequestError(HTTPStatus.BAD_REQUEST, message, "prompt")
    if len(prompts) > max_prompts:
        message = f"'prompt' holds {len(prompts)} prompts; this server takes at most {max_prompts} per request"
        raise RequestError(HTTPStatus.BAD_REQUEST, message + ": send them in several requests", "prompt")
    for p in prompts:
        if not isinstance(p, str) and not all(0 <= t < vocabulary_size for t in p):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"token ids must be in 0..{vocabulary_size - 1}", "prompt")
    return prompts


def context_length(backend: TransformersBackend) -> int | None:
    """The longest sequence (prompt and completion) the model takes, from its config; None when unbounded."""
    return getattr(backend.model.config, "max_position_embeddings", None)


# ---------------------------------------------------------------------- responses
class OpenAIEndpoints:
    """The API's logic: request dict -> checked job -> response dict (or chunks when streaming). With
    ``adapters``, a request's ``model`` may name a loaded LoRA adapter (``server_lora``)."""

    def __init__(
        self,
        backend: TransformersBackend,
        model_name: str,
        limits: Limits = Limits(),
        adapters: LoraAdapters | None = None,
    ):
        self.backend = backend
        self.model_name = model_name
        self.limits = limits
        self.adapters = adapters
        self.context_length = context_length(backend)
        self.created = int(time.time())

    def models(self) -> dict[str, Any]:
        card = {"id": self.model_name, "object": "model", "created": self.created, "owned_by": "textagents"}
        adapters = self.adapters.cards(self.created) if self.adapters is not None else []
        return {"object": "list", "data": [card, *adapters]}

    def _check_model(self, body: dict[str, Any]) -> str | None:
        """The loaded adapter the request names, or None for the served model itself."""
        model = body.get("model")
        if model is None or model == self.model_name:
            return None
        if self.adapters is not None and isinstance(model, str) and model in self.adapters:
            return model
        shown = quoted(model) if isinstance(model, str) else f"of type {type(model).__name__}"
        available = ", ".join(repr(card["id"]) for card in self.models()["data"])
        raise RequestError(HTTPStatus.NOT_FOUND, f"model {shown} is not served here; available: {available}", "model")

    def _select(self, adapter: str | None) -> None:
        """In a job: the model answers with ``adapter`` (``_check_model``'s answer)."""
        if self.adapters is not None:
            self.adapters.select(adapter)

    def _check_lengths(self, prompt_tokens: list[int], max_tokens: int, param: str) -> None:
        """Each prompt has tokens and fits the model's context with its completion; the request fits
        ``max_request_tokens``."""
        for index, tokens in enumerate(prompt_tokens):
            which = f"prompt {index}" if len(prompt_tokens) > 1 else "the prompt"
            if tokens == 0:
                message = f"{which} is empty (no tokens): the model needs at least one token to continue"
                raise RequestError(HTTPStatus.BAD_REQUEST, message, param)
            if self.context_length is not None and tokens + max_tokens > self.context_length:
                message = (
                    f"this model's maximum context length is {self.context_length} tokens; {which} has {tokens} "
                    f"tokens and max_tokens asks for {max_tokens} more: shorten the prompt or lower max_tokens"
                )
                raise RequestError(HTTPStatus.BAD_REQUEST, message, param)
        total = sum(prompt_tokens) + max_tokens * len(prompt_tokens)
        if total > self.limits.max_request_tokens:
            message = (
                f"the request asks for {total} tokens (its prompts' tokens plus max_tokens for each); this server "
                f"takes at most {self.limits.max_request_tokens} per request: send fewer prompts per request"
            )
            raise RequestError(HTTPStatus.BAD_REQUEST, message, param)

    def completions(self, body: dict[str, Any]) -> Job:
        adapter = self._check_model(body)
        prompts = prompts_of(body.get("prompt"), len(self.backend.tokenizer), self.limits.max_prompts)
        sampling = sampling_of(body, self.limits.max_tokens)
        top = _in_range(body, "logprobs", int, None, 0, MAX_LOGPROBS)
        echo = bool(_field(body, "echo", bool, False))
        if echo and self.backend.seq2seq:
            raise RequestError(HTTPStatus.BAD_REQUEST, "echo is not supported for seq2seq models", "echo")
        lengths = [len(self.backend.encode(p)) if isinstance(p, str) else len(p) for p in prompts]
        self._check_lengths(lengths, sampling.max_tokens, "prompt")
        wanted = 0 if top is None else max(top, 1)

        def job() -> dict[str, Any]:
            self._select(adapter)
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
                "model": adapter or self.model_name,
                "choices": choices,
                "usage": _usage(prompt_tokens, completion_tokens),
            }

        return job

    def chat_completions(self, body: dict[str, Any]) -> Job:
        adapter = self._check_model(body)
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
        sampling = sampling_of(body, self.limits.max_tokens, max_tokens_key="max_completion_tokens")
        want_logprobs = bool(_field(body, "logprobs", bool, False))
        top = _in_range(body, "top_logprobs", int, 0, 0, MAX_LOGPROBS)
        prompt = self._chat_prompt(messages)
        self._check_lengths([len(self.backend.encode(prompt))], sampling.max_tokens, "messages")

        def job() -> dict[str, Any]:
            self._select(adapter)
            wanted = max(top, 1) if want_logprobs else 0
            (completion,) = self.backend.generate_detailed([prompt], sampling, logprobs=wanted)
            return {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": adapter or self.model_name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": completion.text},
                        "logprobs": chat_logprobs(completion, top) if want_logprobs else None,
                        "finish_reason": completion.finish_reason,
                    }
                ],
                "usage": _usage(completion.prompt_tokens, len(completion.tokens)),
            }

        return job

    def _chat_prompt(self, messages: list[dict[str, Any]]) -> str:
        """The messages' roles and contents (other keys are not passed on) as the chat template renders them;
        a template that refuses them (e.g. roles that do not alternate) is the client's error."""
        from jinja2 import TemplateError, TemplateSyntaxError

        try:
            return self.backend.chat_prompt([{"role": m["role"], "content": m["content"]} for m in messages])
        except TemplateSyntaxError:
            raise  # the model's template is broken: the server's fault
        except TemplateError as error:
            message = f"the model's chat template refuses these messages: {quoted(str(error))}"
            raise RequestError(HTTPStatus.BAD_REQUEST, message, "messages") from error


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _token_entry(token: str, logprob: float | None) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def chat_logprobs(completion: Generated, top: int) -> dict[str, Any]:
    """The chat ``logprobs`` object: each token with its log-prob and its ``top`` alternatives."""
    content = []
    for token, logprob, alternatives in zip(
        completion.tokens, completion.token_logprobs, completion.top_logprobs, strict=True
    ):
        ranked = sorted((alternatives or {}).items(), key=lambda kv: -kv[1])[:top]
        content.append({**_token_entry(token, logprob), "top_logprobs": [_token_entry(t, lp) for t, lp in ranked]})
    return {"content": content}


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
