"""A backend over a GGUF file with llama.cpp (``llama-cpp-python``, extra ``textagents[llamacpp]``): faster CPU
generation than transformers for rollouts; training stays on the transformers weights."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textagents.llm.accounting import TokenUsage
from textagents.llm.base import ContextOverflowError, Message, Sampling, check_score_inputs
from textagents.llm.models import MODELS, gguf_path, known_name, resolve_model


def _import_llama() -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as error:
        raise ImportError(
            "the llama.cpp backend needs llama-cpp-python: pip install 'textagents[llamacpp]' (it compiles from "
            "source, ~6 minutes), or use the transformers backend (TransformersBackend)"
        ) from error
    return Llama


def gguf_file(model: str | os.PathLike[str]) -> Path:
    """The GGUF of a downloaded model's name or short name (``smollm2``), or the given ``.gguf`` path."""
    text = str(model)
    name = known_name(text)
    if name is not None:
        resolve_model(name)  # raises, naming the download command, when the model is not in the cache
        return gguf_path(name)
    path = Path(resolve_model(text))  # raises for a path that does not exist, or an unknown name
    if path.suffix != ".gguf" or not path.is_file():
        raise FileNotFoundError(f"{text} is not a .gguf file nor a downloaded model name ({', '.join(MODELS)})")
    return path


#: More tokens than a chat template adds around one message (Qwen's and SmolLM2's ChatML: 5).
TEMPLATE_TOKENS = 16


class LlamaCppBackend:
    """``generate``/``chat`` with llama.cpp, ``score`` from its logits (lamorel's sum of log-probabilities).

    Arguments: ``model`` (a ``.gguf`` path or a downloaded model's name), ``n_ctx`` (context window),
    ``n_threads`` (generation and prompt threads; default: llama.cpp's), ``model_name`` (default: the file's
    stem), ``chat_prompt`` (a conversation as the prompt text or token ids to complete, e.g.
    ``TransformersBackend``'s rendering, so both backends see the same tokens; default: llama-cpp-python's
    chat handler on the GGUF's template), ``logits_all`` (False: generation only, no ``score``; llama.cpp then
    computes no logits for prompt tokens and holds no context × vocabulary buffer), ``state_cache_mb`` (0: off;
    else llama-cpp-python's ``LlamaRAMCache`` of that size keeps the KV state after each completion, and a
    prompt starts from the kept state sharing its longest prefix: conversations that alternate, each growing
    its own prompt, no longer evaluate their shared start again; the same numbers up to float rounding),
    ``stop_when`` (None, or a test of the text generated so far, checked before each new token of a prompt it
    completes itself, ``generate``'s or ``chat``'s with ``chat_prompt``: generation ends when it says so, the
    answer being what was generated up to then).

    Sampling is ``Sampling``'s: temperature and top_p only (llama.cpp's default top_k 40 and min_p 0.05 are
    off), and the penalties count every token generated so far, as OpenAI's do (llama.cpp's window of
    ``last_n_tokens_size`` is the context).
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        model_name: str | None = None,
        chat_prompt: Callable[[Sequence[Message]], str | list[int]] | None = None,
        logits_all: bool = True,
        state_cache_mb: int = 0,
        stop_when: Callable[[str], bool] | None = None,
    ):
        llama = _import_llama()
        path = gguf_file(model)
        self.llm = llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            last_n_tokens_size=n_ctx,
            logits_all=logits_all,
            verbose=False,
        )
        if state_cache_mb > 0:
            from llama_cpp import LlamaRAMCache

            self.llm.set_cache(LlamaRAMCache(capacity_bytes=state_cache_mb << 20))
        self.model_name = model_name or known_name(model) or path.stem
        self.chat_prompt = chat_prompt
        self.logits_all = logits_all
        self.stop_when = stop_when
        self.usage = TokenUsage()

    def close(self) -> None:
        self.llm.close()

    def _options(self, settings: Sampling, prompt_tokens: Callable[[], int]) -> dict[str, Any]:
        """llama.cpp's names for the sampling settings (seed -1: a random seed), its other samplers off;
        ``max_tokens=None`` becomes what the context leaves after the prompt (``prompt_tokens()``, counted
        only then) less one: llama-cpp-python's own None runs one token past a full context and fails."""
        limit = settings.max_tokens
        if limit is None:
            limit = max(self.llm.n_ctx() - prompt_tokens() - 1, 1)
        return {
            "max_tokens": limit,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "top_k": 0,
            "min_p": 0.0,
            "stop": list(settings.stop) or None,
            "seed": settings.seed if settings.seed is not None else -1,
            **settings.penalties(),
        }

    def _tokens(self, prompt: str | list[int]) -> int:
        return len(prompt) if isinstance(prompt, list) else len(self.llm.tokenize(prompt.encode(), special=True))

    def _chat_tokens(self, messages: Sequence[Message]) -> int:
        """An upper bound on the tokens of ``messages`` in the GGUF's chat template: their contents' tokens
        plus ``TEMPLATE_TOKENS`` per message for the role markers."""
        return sum(self._tokens(m["content"]) + TEMPLATE_TOKENS for m in messages) + TEMPLATE_TOKENS

    def _fitting(self, create: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``create(*args, **kwargs)``, with llama.cpp's refusal of a prompt longer than the context raised as
        ``ContextOverflowError``."""
        try:
            return create(*args, **kwargs)
        except ValueError as error:
            if "exceed context window" in str(error):
                raise ContextOverflowError(f"{self.model_name}: {error}") from error
            raise

    def _complete(self, prompt: str | list[int], settings: Sampling) -> str:
        start = time.perf_counter()
        options = self._options(settings, lambda: self._tokens(prompt))
        if self.stop_when is not None:
            options["stopping_criteria"] = self._stopping(self._tokens(prompt))
        response = self._fitting(self.llm.create_completion, prompt, **options)
        usage = response["usage"]
        self.usage.add(usage["prompt_tokens"], usage["completion_tokens"], seconds=time.perf_counter() - start)
        return response["choices"][0]["text"]

    def _stopping(self, prompt_tokens: int) -> Any:
        """llama-cpp-python's stopping criteria for ``stop_when`` on the tokens after the prompt's."""
        from llama_cpp import StoppingCriteriaList

        stop_when = self.stop_when

        def stop(input_ids: np.ndarray, _logits: np.ndarray) -> bool:
            return stop_when(self.llm.detokenize(list(input_ids[prompt_tokens:])).decode(errors="ignore"))

        return StoppingCriteriaList([stop])

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        settings = Sampling.of(**sampling)
        return [self._complete(prompt, settings) for prompt in prompts]

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        settings = Sampling.of(**sampling)
        if self.chat_prompt is not None:
            return self._complete(self.chat_prompt(messages), settings)
        start = time.perf_counter()
        options = self._options(settings, lambda: self._chat_tokens(messages))
        response = self._fitting(self.llm.create_chat_completion, messages=[dict(m) for m in messages], **options)
        usage = response["usage"]
        self.usage.add(usage["prompt_tokens"], usage["completion_tokens"], seconds=time.perf_counter() - start)
        return response["choices"][0]["message"]["content"] or ""

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        check_score_inputs(contexts, candidates)
        if not self.logits_all:
            raise RuntimeError("this LlamaCppBackend was made with logits_all=False: it generates but cannot score")
        return [
            self._candidate_logprobs(context, options) for context, options in zip(contexts, candidates, strict=True)
        ]

    def _candidate_logprobs(self, context: str, candidates: Sequence[str]) -> list[float]:
        """Each candidate's log-probability after ``context``, which is evaluated once: between candidates the
        evaluated tokens are cut back to the context's (``eval`` drops the KV cache past ``n_tokens``; the
        context's logits stay)."""
        start = time.perf_counter()
        prefix = self.llm.tokenize(context.encode())
        self.llm.reset()
        self.llm.eval(prefix)
        evaluated, scores = len(prefix), []
        for candidate in candidates:
            tokens = self.llm.tokenize(candidate.encode(), add_bos=False)
            self.llm.n_tokens = len(prefix)
            self.llm.eval(tokens)
            evaluated += len(tokens)
            logits = np.asarray(self.llm.scores[len(prefix) - 1 : len(prefix) + len(tokens) - 1], dtype=np.float64)
            log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
            scores.append(float(sum(log_probs[i, token] for i, token in enumerate(tokens))))
        self.usage.add(evaluated, 0, seconds=time.perf_counter() - start)
        return scores
