"""Any OpenAI-compatible server (OpenAI, vLLM, ``textagents serve``, ...) through the official ``openai`` client.

Transient failures (429, 5xx, timeouts, dropped connections) are retried with exponential backoff; other
client errors (4xx) fail at once with the server's message. ``score`` uses ``/v1/completions`` with
``echo=True, logprobs=1, max_tokens=0``: the server returns the log-prob of every prompt token. Given the
model's ``tokenizer``, the prompts are sent as token ids — the context's and the candidate's tokenized
apart, exactly as a local ``score`` (and lamorel) does — and the candidate's tokens are the last ones.
Without it the prompts are text, the server tokenizes context + candidate together and the tokens that
start at or after the end of the context count: equal to a local ``score`` only when the tokenizer splits
at that boundary (a context ending in a word, a candidate starting with a space), not e.g. for GLAM's
prompts, which end with a space.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

from textagents.llm.accounting import TokenUsage
from textagents.llm.base import ContextOverflowError, Message, Sampling, check_score_inputs

T = TypeVar("T")


class LLMRequestError(RuntimeError):
    """A request the server refused (4xx) or that kept failing after every retry."""


#: The environment variables a key may be read from: a config or suite that names the server could
#: otherwise send any variable (a token, a password) to any host.
API_KEY_ENV = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")


def check_api_key_env(name: str) -> str:
    """``name`` if it is named like an API key (``*_API_KEY``, e.g. ``OPENAI_API_KEY``); ``ValueError`` if not."""
    if not API_KEY_ENV.fullmatch(name):
        raise ValueError(
            f"api_key_env {name!r} is not named like an API key: only variables named *_API_KEY (capitals, "
            "digits and _, e.g. OPENAI_API_KEY) are sent to a server"
        )
    return name


def server_address(base_url: str) -> str:
    """``scheme://host[:port]`` of a server's URL: where its prompts and key go; ``ValueError`` unless the URL
    is http(s) with a host."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url {base_url!r} is not an http:// or https:// URL with a host")
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _openai():
    import openai

    return openai


class OpenAIBackend:
    """A model behind an OpenAI-compatible API.

    Arguments:
        model: the model name the server knows.
        base_url: the server (default: the client's, i.e. ``$OPENAI_BASE_URL`` or api.openai.com).
        api_key_env: the environment variable holding the key, named ``*_API_KEY`` (``check_api_key_env``);
            a local server (``base_url`` given) may need none, OpenAI's does.
        timeout_s: per-request timeout; max_retries: retries of transient failures, waiting
            ``backoff_s * 2**attempt`` (at most ``max_backoff_s``) between them.
        tokenizer: the served model's tokenizer (an object with ``__call__``, or a path for
            ``AutoTokenizer``) to score with token ids, exactly as lamorel; None scores with text.
        score_batch: (context, candidate) prompts per ``score`` request; generate_batch: prompts per
            ``generate`` request.
        max_concurrency: requests in flight at once (all calls on this backend together).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        tokenizer: Any = None,
        score_batch: int = 64,
        generate_batch: int = 64,
        max_concurrency: int = 8,
    ):
        for name, value in (
            ("score_batch", score_batch),
            ("generate_batch", generate_batch),
            ("max_concurrency", max_concurrency),
        ):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        api_key = os.environ.get(check_api_key_env(api_key_env))
        if not api_key:
            if base_url is None:
                raise LLMRequestError(f"no API key: set ${api_key_env} (or pass base_url= for a local server)")
            api_key = "none"
        self.client = _openai().OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
        self.model_name = model
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.sleep = sleep
        self.usage = TokenUsage()
        if isinstance(tokenizer, (str, os.PathLike)):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        self.tokenizer = tokenizer
        self.score_batch = score_batch
        self.generate_batch = generate_batch
        self.max_concurrency = max_concurrency
        self._in_flight = threading.BoundedSemaphore(max_concurrency)

    def _request(self, call: Callable[..., Any], **kwargs: Any) -> Any:
        openai = _openai()
        transient = (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError)
        start = time.perf_counter()  # the latency the caller sees: retries and their waits included
        for attempt in range(self.max_retries + 1):
            try:
                with self._in_flight:
                    response = call(model=self.model_name, **kwargs)
            except transient as error:
                if attempt == self.max_retries:
                    raise LLMRequestError(
                        f"{self.model_name} at {self.client.base_url}: still failing after "
                        f"{self.max_retries} retries: {error}"
                    ) from error
                self.sleep(min(self.max_backoff_s, self.backoff_s * 2**attempt))
                continue
            except openai.APIStatusError as error:
                if error.status_code == 400 and "context length" in str(error.message).lower():
                    raise ContextOverflowError(
                        f"{self.model_name} at {self.client.base_url}: {error.message}"
                    ) from error
                raise LLMRequestError(
                    f"{self.model_name} at {self.client.base_url} refused the request "
                    f"(HTTP {error.status_code}): {error.message}"
                ) from error
            usage = getattr(response, "usage", None)
            tokens = (usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage is not None else (0, 0)
            self.usage.add(*tokens, seconds=time.perf_counter() - start)
            return response
        raise AssertionError("unreachable")

    @staticmethod
    def _sampling_kwargs(sampling: Sampling) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"temperature": sampling.temperature, "top_p": sampling.top_p}
        if sampling.max_tokens is not None:  # None: the server's default, up to the model's context
            kwargs["max_tokens"] = sampling.max_tokens
        if sampling.stop:
            kwargs["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        kwargs.update(sampling.penalties())
        return kwargs

    def _all(self, calls: Sequence[Callable[[], T]]) -> list[T]:
        """Each call's result, in order, the calls run on up to ``max_concurrency`` threads. The first failure
        (in input order among those failed) is raised once the requests in flight have finished; calls not
        started by then never run."""
        if len(calls) <= 1:
            return [call() for call in calls]
        workers = min(self.max_concurrency, len(calls))
        with ThreadPoolExecutor(workers, thread_name_prefix="textagents-openai") as pool:
            futures = [pool.submit(call) for call in calls]
            wait(futures, return_when=FIRST_EXCEPTION)
            if any(f.done() and f.exception() is not None for f in futures):
                for future in futures:
                    future.cancel()
        failed = [f for f in futures if not f.cancelled() and f.exception() is not None]
        if failed:
            raise failed[0].exception()
        return [f.result() for f in futures]

    def _completions(self, prompts: Sequence[Any], per_request: int, **kwargs: Any) -> list[Any]:
        """The choices of ``/v1/completions`` for every prompt, in order, ``per_request`` prompts a request."""
        create = self.client.completions.create
        calls = [
            partial(self._request, create, prompt=list(prompts[start : start + per_request]), **kwargs)
            for start in range(0, len(prompts), per_request)
        ]
        return [choice for response in self._all(calls) for choice in sorted(response.choices, key=lambda c: c.index)]

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        if isinstance(prompts, str):
            raise TypeError("generate takes a list of prompts, got one string")
        kwargs = self._sampling_kwargs(Sampling.of(**sampling))
        return [c.text or "" for c in self._completions(prompts, self.generate_batch, **kwargs)]

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        return self.chat_batch([messages], **sampling)[0]

    def chat_batch(self, conversations: Sequence[Sequence[Message]], **sampling: Any) -> list[str]:
        """One answer per conversation, each its own request, sent concurrently."""
        kwargs = self._sampling_kwargs(Sampling.of(**sampling))
        create = self.client.chat.completions.create
        calls = [partial(self._request, create, messages=[dict(m) for m in c], **kwargs) for c in conversations]
        return [response.choices[0].message.content or "" for response in self._all(calls)]

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Scores of every (context, candidate), sent ``score_batch`` prompts per request."""
        check_score_inputs(contexts, candidates)
        prompts: list[Any] = []
        #: Per prompt, how to read its candidate's share of the echoed log-probs.
        readers: list[Callable[[Any], float]] = []
        for context, options in zip(contexts, candidates, strict=True):
            if self.tokenizer is None:
                prompts += [context + option for option in options]
                readers += [partial(candidate_logprob, context_chars=len(context))] * len(options)
                continue
            context_ids = list(self.tokenizer(context)["input_ids"])
            for option in options:
                option_ids = list(self.tokenizer(option, add_special_tokens=False)["input_ids"])
                prompts.append(context_ids + option_ids)
                readers.append(partial(last_tokens_logprob, count=len(option_ids)))
        choices = self._completions(prompts, self.score_batch, echo=True, logprobs=1, max_tokens=0, temperature=0.0)
        flat = [read(c.logprobs) for read, c in zip(readers, choices, strict=True)]
        rows, position = [], 0
        for options in candidates:
            rows.append(flat[position : position + len(options)])
            position += len(options)
        return rows


def _prompt_logprobs(logprobs: Any) -> list[float | None]:
    if logprobs is None or logprobs.token_logprobs is None:
        raise LLMRequestError("the server returned no prompt log-probs for echo=True, logprobs=1")
    return list(logprobs.token_logprobs)


def last_tokens_logprob(logprobs: Any, count: int) -> float:
    """Sum of the log-probs of the last ``count`` echoed tokens."""
    values = _prompt_logprobs(logprobs)[-count:] if count else []
    return float(sum(v for v in values if v is not None))


def candidate_logprob(logprobs: Any, context_chars: int) -> float:
    """Sum of the log-probs of the echoed tokens that start at or after character ``context_chars``."""
    values = _prompt_logprobs(logprobs)
    if logprobs.text_offset is None:
        raise LLMRequestError("the server returned no text offsets for echo=True, logprobs=1")
    pairs = zip(logprobs.text_offset, values, strict=True)
    return float(sum(lp for offset, lp in pairs if offset >= context_chars and lp is not None))
