"""llama.cpp decoding several prompts together (``ParallelLlamaCppBackend``): one model pass advances every
sequence of a batch by a token, so a CPU reads the weights once for them all. A new token alone costs one core
about five times a prompt token (Qwen2.5-Coder-0.5B, Q8_0: ~40 ms against ~8 ms, ``perf_gguf_outtypes.json``);
in a pass of 16 sequences ~19 ms (profiled). Measured on a Qwen run's first round: 1.74x less CPU per planning call
(``docs/methods/llm_personalize.md``); nothing gained or lost where long prompts are the cost.

Each prompt is sampled as ``LlamaCppBackend`` samples it alone: the same sampler chain (llama-cpp-python
0.3's ``Llama._init_sampler``: penalties over the generated tokens, top-k off, typical 1, top-p, min-p off,
temperature, a distribution seeded with the request's seed) on that sequence's logits, and the same ends
(end-of-generation token, ``max_tokens``, stop strings, ``stop_when``), so the answers differ only where the
batched pass's logits differ from the lone pass's in their last bits.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textagents.llm.base import ContextOverflowError, Message, Sampling
from textagents.llm.llamacpp_backend import LlamaCppBackend

#: A prompt waits a pass for a busy slot's prompt when that would spare evaluating this many tokens or more.
SHARE_AT_LEAST = 32
#: llama.cpp's seed that asks for a random one (``LLAMA_DEFAULT_SEED``).
RANDOM_SEED = 0xFFFFFFFF


@dataclass
class _Slot:
    """One sequence of the batch context: the tokens its KV cache holds, and the request it is answering."""

    seq_id: int
    cached: list[int] = field(default_factory=list)
    request: int | None = None
    pending: list[int] = field(default_factory=list)  # prompt tokens not yet evaluated
    completion: list[int] = field(default_factory=list)
    limit: int = 0
    sampler: Any = None
    stop: list[bytes] = field(default_factory=list)
    multibyte_fix: int = 0
    text: bytes = b""  # the completion's text so far


class ParallelLlamaCppBackend(LlamaCppBackend):
    """``LlamaCppBackend`` whose ``generate`` and ``chat_batch`` decode up to ``parallel`` prompts together
    (continuous batching: a finished sequence's slot takes the next prompt). The slots keep their KV caches
    between calls, and a prompt starts from the longest start of it that any slot holds (a conversation's
    previous prompt, the instructions all of a round's prompts begin with), shared, not evaluated again.
    ``chat_batch`` needs ``chat_prompt`` (else it asks one conversation after another); other arguments are
    ``LlamaCppBackend``'s (``state_cache_mb`` serves ``chat`` alone). Each sequence has its own KV stream of
    ``n_ctx`` tokens (in one stream shared by all, every token would attend over every sequence's cells: 1.8x
    slower on long prompts), so ``parallel`` times the lone backend's KV memory; with as many slots as a
    round has prompts, each conversation's next prompt finds its previous one still cached."""

    def __init__(self, model: Any, *, parallel: int = 8, n_batch: int = 512, **options: Any):
        if parallel < 1:
            raise ValueError(f"parallel must be >= 1, got {parallel}")
        super().__init__(model, **options)
        from llama_cpp import llama_cpp

        self._c = llama_cpp
        params = type(self.llm.context_params).from_buffer_copy(self.llm.context_params)
        params.n_ctx = self.llm.n_ctx() * parallel
        params.n_seq_max = parallel
        params.n_batch = params.n_ubatch = n_batch
        params.kv_unified = False  # each sequence attends to its own n_ctx cells, not to every sequence's
        self._ctx = llama_cpp.llama_init_from_model(self.llm.model, params)
        if self._ctx is None:
            raise RuntimeError(f"llama.cpp could not make a context for {parallel} sequences of {self.llm.n_ctx()}")
        self._vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self._n_batch = n_batch
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._slots = [_Slot(seq_id) for seq_id in range(parallel)]

    def close(self) -> None:
        if self._ctx is not None:
            self._c.llama_batch_free(self._batch)
            self._c.llama_free(self._ctx)
            self._ctx = None
        super().close()

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        return self._complete_all(list(prompts), Sampling.of(**sampling))

    def chat_batch(self, conversations: Sequence[Sequence[Message]], **sampling: Any) -> list[str]:
        if self.chat_prompt is None:
            return [self.chat(messages, **sampling) for messages in conversations]
        return self._complete_all([self.chat_prompt(m) for m in conversations], Sampling.of(**sampling))

    def _prompt_tokens(self, prompt: str | list[int]) -> list[int]:
        if isinstance(prompt, list):
            return list(prompt)
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)

    def _complete_all(self, prompts: list[str | list[int]], settings: Sampling) -> list[str]:
        start = time.perf_counter()
        tokens = [self._prompt_tokens(p) for p in prompts]
        n_ctx = self.llm.n_ctx()
        for prompt in tokens:
            if len(prompt) >= n_ctx:
                raise ContextOverflowError(
                    f"{self.model_name}: Requested tokens ({len(prompt)}) exceed context window of {n_ctx}"
                )
        answers: list[str | None] = [None] * len(tokens)
        waiting = list(range(len(tokens)))
        try:
            while waiting or any(s.request is not None for s in self._slots):
                for request in list(waiting):
                    free = [s for s in self._slots if s.request is None]
                    if not free:
                        break
                    if self._worth_waiting(tokens[request]):
                        continue
                    waiting.remove(request)
                    self._start(free, request, tokens, settings)
                for slot, index in self._decode():
                    self._advance(slot, index, answers)
        except BaseException:
            self._abandon()
            raise
        self.usage.add(sum(len(t) for t in tokens), 0, requests=len(tokens), seconds=time.perf_counter() - start)
        return [answer or "" for answer in answers]

    def _worth_waiting(self, prompt: list[int]) -> bool:
        """Whether a busy slot's prompt, once evaluated, shares more of ``prompt``'s start (by
        ``SHARE_AT_LEAST`` tokens) than any slot's evaluated tokens do: the prompt then starts a pass later,
        from a copy of that slot's cache."""
        have = max(_common_prefix(s.cached, prompt) for s in self._slots)
        coming = max(
            (_common_prefix(s.cached + s.pending, prompt) for s in self._slots if s.request is not None), default=0
        )
        return coming >= have + SHARE_AT_LEAST

    def _start(self, free: list[_Slot], request: int, tokens: list[list[int]], settings: Sampling) -> None:
        """Start ``request`` in one of the ``free`` slots, from the longest start of its prompt that any slot
        holds: the slot's own, or a copy of another's (llama.cpp copies a sequence's whole KV stream, then the
        tokens after the shared start are dropped)."""
        prompt = tokens[request]
        source = max(self._slots, key=lambda s: _common_prefix(s.cached, prompt))
        keep = min(_common_prefix(source.cached, prompt), len(prompt) - 1)  # the last token is evaluated again
        slot = source if source in free else max(free, key=lambda s: _common_prefix(s.cached, prompt))
        memory = self._c.llama_get_memory(self._ctx)
        if slot is source or _common_prefix(slot.cached, prompt) >= keep:
            self._c.llama_memory_seq_rm(memory, slot.seq_id, keep, -1)
        else:
            self._c.llama_memory_seq_cp(memory, source.seq_id, slot.seq_id, -1, -1)  # whole streams only
            self._c.llama_memory_seq_rm(memory, slot.seq_id, keep, -1)
        limit = settings.max_tokens
        if limit is None:
            limit = max(self.llm.n_ctx() - len(prompt) - 1, 1)
        if limit + len(prompt) >= self.llm.n_ctx():  # llama-cpp-python's cut of max_tokens to the context
            limit = self.llm.n_ctx() - len(prompt)
        slot.cached, slot.pending = prompt[:keep], prompt[keep:]
        slot.request, slot.completion, slot.limit = request, [], limit
        slot.multibyte_fix, slot.text = 0, b""
        slot.sampler = self._sampler(settings)
        slot.stop = [s.encode("utf-8") for s in settings.stop]

    def _sampler(self, settings: Sampling) -> Any:
        """The chain llama-cpp-python 0.3 builds for ``create_completion`` with ``LlamaCppBackend._options``."""
        c = self._c
        chain = c.llama_sampler_chain_init(c.llama_sampler_chain_default_params())
        penalties = settings.penalties()
        samplers = [
            c.llama_sampler_init_penalties(
                self.llm.last_n_tokens_size,
                1.0,
                penalties.get("frequency_penalty", 0.0),
                penalties.get("presence_penalty", 0.0),
            )
        ]
        seed = settings.seed if settings.seed is not None else RANDOM_SEED
        if settings.temperature == 0.0:
            samplers.append(c.llama_sampler_init_greedy())
        else:
            samplers += [
                c.llama_sampler_init_top_k(0),
                c.llama_sampler_init_typical(1.0, 1),
                c.llama_sampler_init_top_p(settings.top_p, 1),
                c.llama_sampler_init_min_p(0.0, 1),
                c.llama_sampler_init_temp(settings.temperature),
                c.llama_sampler_init_dist(seed & RANDOM_SEED),
            ]
        for sampler in samplers:
            c.llama_sampler_chain_add(chain, sampler)
        return chain

    def _decode(self) -> list[tuple[_Slot, int]]:
        """One llama.cpp pass over the next tokens of every busy slot (prompt tokens up to ``n_batch`` in all,
        a generating slot's last token); the slots whose logits it computed, with their index in the pass."""
        batch, count, sampled = self._batch, 0, []
        for slot in self._slots:
            if slot.request is None:
                continue
            if slot.pending:
                take = slot.pending[: self._n_batch - count]
                if not take:
                    continue
                del slot.pending[: len(take)]
            elif count < self._n_batch:
                take = [slot.completion[-1]]
            else:
                continue
            for offset, token in enumerate(take):
                batch.token[count] = token
                batch.pos[count] = len(slot.cached)
                batch.n_seq_id[count] = 1
                batch.seq_id[count][0] = slot.seq_id
                last = offset == len(take) - 1 and not slot.pending
                batch.logits[count] = last
                if last:
                    sampled.append((slot, count))
                slot.cached.append(token)
                count += 1
        batch.n_tokens = count
        status = self._c.llama_decode(self._ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed with status {status} on a batch of {count} tokens")
        return sampled

    def _advance(self, slot: _Slot, index: int, answers: list[str | None]) -> None:
        """Sample ``slot``'s next token from the pass's logits at ``index`` and end its answer where
        ``Llama.create_completion`` would (``llama.py`` 0.3.16, ``_create_completion``'s loop)."""
        c = self._c
        token = c.llama_sampler_sample(slot.sampler, self._ctx, index)
        if self.stop_when is not None and self.stop_when(slot.text.decode(errors="ignore")):
            return self._finish(slot, slot.text, answers)
        if c.llama_token_is_eog(self._vocab, token):
            return self._finish(slot, slot.text, answers)
        slot.completion.append(token)
        text = slot.text = self.llm.detokenize(slot.completion)
        slot.multibyte_fix = _multibyte_fix(text, slot.multibyte_fix)
        if slot.multibyte_fix > 0:  # an unfinished UTF-8 character: neither stop strings nor the limit checked
            slot.multibyte_fix -= 1
            return None
        stops = [s for s in slot.stop if s in text]
        if stops:
            return self._finish(slot, text[: text.index(stops[0])], answers)
        if len(slot.completion) >= slot.limit:
            return self._finish(slot, text, answers)
        return None

    def _finish(self, slot: _Slot, text: bytes, answers: list[str | None]) -> None:
        answers[slot.request] = text.decode("utf-8", errors="ignore")
        self.usage.add(0, len(slot.completion), requests=0)
        self._c.llama_sampler_free(slot.sampler)
        slot.request, slot.sampler = None, None

    def _abandon(self) -> None:
        """After a call that failed midway: the slots it left busy are emptied, their caches with them, so the
        next call starts clean."""
        memory = self._c.llama_get_memory(self._ctx)
        for slot in self._slots:
            if slot.request is not None:
                self._c.llama_sampler_free(slot.sampler)
                self._c.llama_memory_seq_rm(memory, slot.seq_id, -1, -1)
                slot.request, slot.sampler, slot.cached, slot.pending = None, None, [], []


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _multibyte_fix(text: bytes, current: int) -> int:
    """llama-cpp-python's count of tokens to wait for when ``text`` ends inside a UTF-8 character (its loop
    keeps the last value the scan of the last 3 bytes sets)."""
    for position, char in enumerate(text[-3:]):
        k = 3 - position
        for num, pattern in ((2, 192), (3, 224), (4, 240)):
            if num > k and pattern & char == pattern:
                current = num - k
    return current
