"""A local ``transformers`` model (causal or seq2seq) behind the backend interface.

``score`` follows lamorel: the sum over a candidate's tokens of ``log_softmax`` of the model's logits given
the context and the candidate's previous tokens, pads masked to 0. Each context is computed once (its past
key values for causal models; for seq2seq models its encoder states and, with ``cross_attention``
``per_prompt``, each decoder layer's cross-attention keys and values over them) and reused for all its
candidates.
``prefix_sharing`` (default on) computes less again: a call's repeated (context, candidates) rows once, and
the leading tokens that all contexts of a causal forward pass share once (``shared_prefix.py``).
``score_mode="legacy_logits"`` sums raw logits instead (lamorel's GLAM-era variant) and is opt-in only.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from textagents.llm.accounting import TokenUsage
from textagents.llm.base import (
    CROSS_ATTENTION,
    ContextOverflowError,
    Message,
    Sampling,
    check_score_inputs,
    transcript,
    truncate_at_stop,
)
from textagents.llm.models import known_name, resolve_model
from textagents.llm.shared_prefix import KeptPrefix, computation_state, shared_prefix_length

SCORE_MODES = ("logprob", "legacy_logits")


def cross_attention_for(setting: str, device: torch.device) -> str:
    """``per_prompt`` or ``per_candidate`` for a ``cross_attention`` setting: ``auto`` is ``per_prompt`` on the
    CPU, where a pass is bound by its arithmetic (1.40x faster there), and ``per_candidate`` on a GPU, where a
    pass of GLAM's sizes looks bound by launching its operators and ``per_prompt``'s second decoder pass launches
    1.5x as many for a forward and backward pass (docs/gpu.md)."""
    if setting not in CROSS_ATTENTION:
        raise ValueError(f"cross_attention {setting!r} is not one of {CROSS_ATTENTION}")
    if setting != "auto":
        return setting
    return "per_prompt" if device.type == "cpu" else "per_candidate"


@dataclass
class CandidateForward:
    """What module functions receive for one batch of (context, candidate) rows.

    ``context_hidden`` [rows, hidden]: last-layer state of each row's context at its last token (causal)
    or the decoder's state at the start token (seq2seq); ``candidate_hidden`` [rows, length, hidden] and
    ``candidate_mask`` [rows, length]: states over the candidate's tokens; ``token_scores`` [rows, length]:
    the per-token log-probs (or raw logits in legacy mode), pads 0; ``rows_of_context``: context index of
    each row.
    """

    context_hidden: torch.Tensor
    candidate_hidden: torch.Tensor
    candidate_mask: torch.Tensor
    token_scores: torch.Tensor
    rows_of_context: torch.Tensor


def cache_keyword(model: nn.Module) -> str:
    """The name of the model's forward argument that takes its key-value cache: ``cache`` from transformers
    5.x (which deprecates ``past_key_values`` and drops it in 5.40), ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def returned_cache(output: Any) -> Any:
    """The key-value cache a forward pass returned, under either name."""
    cache = output.get("cache")
    return cache if cache is not None else output.past_key_values


class ValueHead(nn.Module):
    """A value head on the context's hidden state (GLAM's critic): an MLP to one scalar per row."""

    def __init__(self, hidden_size: int, width: int = 1024):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(hidden_size, width), nn.Sigmoid(), nn.Linear(width, width), nn.Sigmoid())
        self.out = nn.Linear(width, 1)

    def forward(self, batch: CandidateForward) -> torch.Tensor:
        return self.out(self.net(batch.context_hidden.float())).squeeze(-1)


def length_batches(lengths: Sequence[int], batch_size: int, max_batch_tokens: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (sorted): at most ``batch_size`` sequences and
    ``max_batch_tokens`` padded tokens each, so that padding wastes little compute."""
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        batch = batches[-1] if batches else None
        fits = batch is not None and len(batch) < batch_size
        if fits and (len(batch) + 1) * lengths[index] <= max_batch_tokens:
            batch.append(index)
        else:
            batches.append([index])
    return batches


class TransformersBackend:
    """A ``transformers`` model loaded from ``model_path`` (a directory, a downloaded model's name, or a hub id).

    Arguments:
        model_path: a folder ``from_pretrained`` loads, a downloaded model's name or short name
            (``"smollm2-135m-instruct"``, ``"smollm2"``) or a hub id, as ``textagents.llm.models.resolve_model``
            resolves them (with no hub request when offline).
        seq2seq: None (decided by the model config's ``is_encoder_decoder``), True or False.
        batch_size: contexts per forward pass in ``score`` and prompts per ``generate`` batch.
        max_batch_tokens: padded context tokens per ``score`` forward pass (contexts are batched by length).
        score_mode: ``"logprob"`` (lamorel's semantics) or ``"legacy_logits"`` (sum of raw logits).
        candidate_special_tokens: tokenize candidates with the tokenizer's special tokens (T5's appends
            ``</s>``, which is then scored), as the paper-era lamorel did; default: without (lamorel now).
        prefix_sharing: compute a call's repeated (context, candidates) rows once (duplicates share the
            output tensors, so their gradients add up) and, for causal models, the leading tokens that every
            context of a forward pass shares once (kept across calls without gradients while the weights do
            not change); the same numbers up to float rounding. False: every row's context in full.
        cross_attention: seq2seq models: ``per_prompt`` (the decoder's start step runs once per context and
            its cross-attention keys and values are copied to the context's candidates), ``per_candidate``
            (the encoder states are copied to each candidate and one decoder pass projects them for each), or
            ``auto`` (``cross_attention_for``); the same numbers up to float rounding.
        module_functions: name -> ``nn.Module`` called on a ``CandidateForward`` (e.g. ``ValueHead``),
            lamorel's custom module functions; run them with ``forward_candidates``.
        device, dtype: where and how the model runs.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        seq2seq: bool | None = None,
        batch_size: int = 16,
        max_batch_tokens: int = 4096,
        score_mode: str = "logprob",
        candidate_special_tokens: bool = False,
        prefix_sharing: bool = True,
        cross_attention: str = "auto",
        module_functions: Mapping[str, nn.Module] | None = None,
        device: str = "cpu",
        dtype: torch.dtype | None = None,
        model_name: str | None = None,
    ):
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        if score_mode not in SCORE_MODES:
            raise ValueError(f"score_mode {score_mode!r} is not one of {SCORE_MODES}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.cross_attention = cross_attention_for(cross_attention, torch.device(device))
        path = resolve_model(model_path)
        config = AutoConfig.from_pretrained(path)
        self.seq2seq = bool(config.is_encoder_decoder) if seq2seq is None else seq2seq
        loader = AutoModelForSeq2SeqLM if self.seq2seq else AutoModelForCausalLM
        self.model = loader.from_pretrained(path, dtype=dtype).to(device).eval()
        self.cache_keyword = cache_keyword(self.model)  # the same after a LoRA wrapper or new weights
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.score_mode = score_mode
        self.candidate_special_tokens = candidate_special_tokens
        self.prefix_sharing = prefix_sharing
        self.kept_prefix = KeptPrefix()
        self.module_functions = nn.ModuleDict(dict(module_functions or {})).to(device)
        self.model_name = model_name or known_name(model_path) or Path(str(model_path)).name
        self.usage = TokenUsage()
        #: One forward pass at a time: the server's handler threads share this backend.
        self.lock = threading.RLock()

    # ------------------------------------------------------------------ tokens
    def encode(self, text: str, special_tokens: bool = True) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=special_tokens)["input_ids"])

    def _pad(self, sequences: Sequence[Sequence[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The sequences padded to the longest (on the ``left`` or the right) and their attention mask, built
        in numpy: row by row in torch, a forward pass of 32 prompts and their commands spent ~2,000 operator
        calls here, each a dispatch on the CPU that a GPU waits for (docs/gpu.md)."""
        length = max((len(s) for s in sequences), default=0)
        ids = np.full((len(sequences), length), self.tokenizer.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(sequences), length), dtype=np.int64)
        for row, seq in enumerate(sequences):
            if not seq:
                continue
            span = slice(length - len(seq), length) if left else slice(0, len(seq))
            ids[row, span] = seq
            mask[row, span] = 1
        return torch.from_numpy(ids).to(self.device), torch.from_numpy(mask).to(self.device)

    # ------------------------------------------------------------------ score
    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Per context, the summed log-prob (``score_mode``) of each candidate's tokens given the context."""
        check_score_inputs(contexts, candidates)
        with torch.no_grad():
            outputs = self.forward_candidates(contexts, candidates, functions=())
        return [scores.tolist() for scores in outputs["score"]]

    def forward_candidates(
        self,
        contexts: Sequence[str],
        candidates: Sequence[Sequence[str]],
        functions: Sequence[str] | None = None,
    ) -> dict[str, list[torch.Tensor]]:
        """``{"score": [...], name: [...]}``: per context a tensor with one entry per candidate, for the score
        and each module function named in ``functions`` (default: all). Gradients flow unless the caller
        disables them, so a trainer can fine-tune through it (GLAM's PPO)."""
        check_score_inputs(contexts, candidates)
        names = list(self.module_functions) if functions is None else list(functions)
        unknown = [n for n in names if n not in self.module_functions]
        if unknown:
            raise ValueError(f"unknown module function(s) {unknown}; known: {list(self.module_functions)}")
        rows = [(context, tuple(options)) for context, options in zip(contexts, candidates, strict=True)]
        if not self.prefix_sharing:
            return self._forward_rows(rows, names)
        distinct = list(dict.fromkeys(rows))
        computed = self._forward_rows(distinct, names)
        where = {row: index for index, row in enumerate(distinct)}
        return {name: [values[where[row]] for row in rows] for name, values in computed.items()}

    def _forward_rows(self, rows: list[tuple[str, tuple[str, ...]]], names: list[str]) -> dict[str, list[torch.Tensor]]:
        """``forward_candidates`` for (context, candidates) rows, each computed."""
        context_ids = [self.encode(context) for context, _ in rows]
        results: dict[str, list[Any]] = {name: [None] * len(rows) for name in ("score", *names)}
        with self.lock:
            for chunk in self.length_batches([len(ids) for ids in context_ids]):
                options = [rows[i][1] for i in chunk]
                batch = self._forward_chunk([context_ids[i] for i in chunk], options, need_hidden=bool(names))
                counts = [len(o) for o in options]
                outputs = {"score": batch.token_scores.sum(-1)}
                outputs.update({name: self.module_functions[name](batch) for name in names})
                for name, values in outputs.items():
                    for index, value in zip(chunk, torch.split(values, counts), strict=True):
                        results[name][index] = value
        return results

    def length_batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """``length_batches`` with this backend's ``batch_size`` and ``max_batch_tokens``."""
        return length_batches(lengths, self.batch_size, self.max_batch_tokens)

    def _forward_chunk(
        self, context_ids: list[list[int]], candidates: Sequence[Sequence[str]], need_hidden: bool
    ) -> CandidateForward:
        start = time.perf_counter()
        rows = torch.tensor([i for i, options in enumerate(candidates) for _ in options], dtype=torch.long)
        candidate_ids = [self.encode(c, self.candidate_special_tokens) for options in candidates for c in options]
        cand, cand_mask = self._pad(candidate_ids, left=False)
        rows = rows.to(self.device)
        if not self.seq2seq:
            forward = self._causal_candidates
        elif self.cross_attention == "per_prompt":
            forward = self._seq2seq_candidates
        else:
            forward = self._seq2seq_candidates_repeated
        context_hidden, cand_hidden, logits = forward(context_ids, rows, cand, cand_mask, need_hidden)
        if self.score_mode == "logprob":
            logits = torch.log_softmax(logits.float(), dim=-1)
        token_scores = logits.gather(-1, cand.unsqueeze(-1)).squeeze(-1) * cand_mask
        tokens = sum(map(len, context_ids)) + sum(map(len, candidate_ids))
        self.usage.add(tokens, 0, seconds=time.perf_counter() - start)
        return CandidateForward(context_hidden, cand_hidden, cand_mask, token_scores, rows)

    def _causal_candidates(
        self,
        context_ids: list[list[int]],
        rows: torch.Tensor,
        cand: torch.Tensor,
        cand_mask: torch.Tensor,
        need_hidden: bool,
    ) -> tuple[Any, Any, torch.Tensor]:
        shared, past = self._shared_prefix(context_ids) if self.prefix_sharing else (0, None)
        ids, own_mask = self._pad([c[shared:] for c in context_ids], left=True)
        mask = torch.cat([own_mask.new_ones(len(context_ids), shared), own_mask], dim=-1)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions[:, shared:],
            use_cache=True,
            **{self.cache_keyword: past},
            output_hidden_states=need_hidden,
            logits_to_keep=1,  # only the last position predicts a candidate token: no [batch, length, vocab]
        )
        past = returned_cache(out)
        past.reorder_cache(rows)  # one cache row per (context, candidate): the context is not recomputed
        lengths = mask.sum(-1)[rows]
        cand_positions = lengths.unsqueeze(-1) + torch.arange(cand.shape[1], device=self.device)
        cand_out = self.model(
            input_ids=cand,
            attention_mask=torch.cat([mask[rows], cand_mask], dim=-1),
            position_ids=cand_positions,
            output_hidden_states=need_hidden,
            **{self.cache_keyword: past},
        )
        # The context's last logits predict the first candidate token; candidate token t predicts t + 1.
        logits = torch.cat([out.logits[rows, -1:], cand_out.logits[:, :-1]], dim=1)
        if not need_hidden:
            return None, None, logits
        return out.hidden_states[-1][rows, -1], cand_out.hidden_states[-1], logits

    def _shared_prefix(self, context_ids: list[list[int]]) -> tuple[int, Any]:
        """How many leading tokens the contexts take from shared key values, and those key values (one row
        per context): the kept prefix where it fits, else the contexts' own shared prefix; (0, None): none."""
        state = computation_state(self.model, self.device)
        shared = self.kept_prefix.length_for(context_ids, state)
        if shared:
            return shared, self.kept_prefix.copy_for(len(context_ids))
        shared = shared_prefix_length(context_ids)
        if not shared:
            return 0, None
        prefix = context_ids[0][:shared]
        past = returned_cache(
            self.model(input_ids=torch.tensor([prefix], device=self.device), use_cache=True, logits_to_keep=1)
        )
        self.kept_prefix.keep(prefix, past, state)
        past.batch_repeat_interleave(len(context_ids))
        return shared, past

    def _encoded(self, context_ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """A seq2seq model's encoder states of the contexts (right-padded) and their attention mask."""
        ids, mask = self._pad(context_ids, left=False)
        return self.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state, mask

    def _seq2seq_candidates(
        self,
        context_ids: list[list[int]],
        rows: torch.Tensor,
        cand: torch.Tensor,
        cand_mask: torch.Tensor,
        need_hidden: bool,
    ) -> tuple[Any, Any, torch.Tensor]:
        encoded, mask = self._encoded(context_ids)
        start = torch.full((len(context_ids), 1), self.model.config.decoder_start_token_id, device=self.device)
        # The decoder's start step runs once per context and leaves each layer's cross-attention keys and
        # values in its cache; the context's candidates continue from a copy of them. Computed per candidate
        # instead, those projections of the whole context are about as much work as the encoder.
        first = self.model(
            encoder_outputs=(encoded,),
            attention_mask=mask,
            decoder_input_ids=start,
            use_cache=True,
            output_hidden_states=need_hidden,
        )
        logits = first.logits[rows]
        hidden = first.decoder_hidden_states[-1][rows] if need_hidden else None
        if cand.shape[1] > 1:
            past = returned_cache(first)
            past.reorder_cache(rows)
            rest = self.model(
                encoder_outputs=(encoded[rows],),  # read only where a model keeps no cross-attention cache
                attention_mask=mask[rows],
                decoder_input_ids=cand[:, :-1],
                decoder_attention_mask=torch.cat([cand_mask.new_ones(len(cand), 1), cand_mask[:, :-1]], dim=1),
                output_hidden_states=need_hidden,
                **{self.cache_keyword: past},
            )
            logits = torch.cat([logits, rest.logits], dim=1)
            if need_hidden:
                hidden = torch.cat([hidden, rest.decoder_hidden_states[-1]], dim=1)
        if not need_hidden:
            return None, None, logits
        return hidden[:, 0], hidden, logits

    def _seq2seq_candidates_repeated(
        self,
        context_ids: list[list[int]],
        rows: torch.Tensor,
        cand: torch.Tensor,
        cand_mask: torch.Tensor,
        need_hidden: bool,
    ) -> tuple[Any, Any, torch.Tensor]:
        """``cross_attention: per_candidate``: the encoder states repeated for each (context, candidate) row
        and one decoder pass over all of them."""
        encoded, mask = self._encoded(context_ids)
        start = torch.full((cand.shape[0], 1), self.model.config.decoder_start_token_id, device=self.device)
        out = self.model(
            encoder_outputs=(encoded[rows],),
            attention_mask=mask[rows],
            decoder_input_ids=torch.cat([start, cand[:, :-1]], dim=1),
            decoder_attention_mask=torch.cat([torch.ones_like(start), cand_mask[:, :-1]], dim=1),
            output_hidden_states=need_hidden,
        )
        if not need_hidden:
            return None, None, out.logits
        hidden = out.decoder_hidden_states[-1]
        return hidden[:, 0], hidden, out.logits

    def score_without_reuse(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """The same scores from one forward pass per (context, candidate) sequence (causal models): the
        baseline that context reuse is measured against, and a cross-check of it."""
        check_score_inputs(contexts, candidates)
        if self.seq2seq:
            raise NotImplementedError("score_without_reuse is defined for causal models")
        pairs = [
            (self.encode(c), self.encode(o, special_tokens=False))
            for c, opts in zip(contexts, candidates, strict=True)
            for o in opts
        ]
        totals: list[float] = [0.0] * len(pairs)
        with self.lock, torch.no_grad():
            for chunk in self.length_batches([len(c) + len(o) for c, o in pairs]):
                ids, mask = self._pad([pairs[i][0] + pairs[i][1] for i in chunk], left=False)
                logits = self.model(input_ids=ids, attention_mask=mask).logits
                for row, index in enumerate(chunk):
                    context, option = pairs[index]
                    steps = torch.arange(len(context) - 1, len(context) + len(option) - 1, device=self.device)
                    predicting = logits[row, steps].float()  # normalize only the positions that score
                    if self.score_mode == "logprob":
                        predicting = torch.log_softmax(predicting, dim=-1)
                    totals[index] = float(predicting.gather(-1, ids[row, steps + 1, None]).sum())
        counts = [len(opts) for opts in candidates]
        offsets = [sum(counts[:i]) for i in range(len(counts))]
        return [totals[o : o + n] for o, n in zip(offsets, counts, strict=True)]

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        return [g.text for g in self.generate_detailed(prompts, Sampling.of(**sampling))]

    def generate_detailed(
        self, prompts: Sequence[str | list[int]], sampling: Sampling, logprobs: int = 0
    ) -> list[Generated]:
        """Completions with their tokens and, when ``logprobs`` > 0, each token's log-prob and top alternatives.
        A prompt is a string or a list of token ids."""
        if isinstance(prompts, str):
            raise TypeError("generate takes a list of prompts, got one string")
        results: list[Generated] = []
        cuda_devices = [self.device.index or 0] if self.device.type == "cuda" else []
        with self.lock, torch.no_grad(), torch.random.fork_rng(devices=cuda_devices):
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            for start in range(0, len(prompts), self.batch_size):
                results += self._generate_batch(prompts[start : start + self.batch_size], sampling, logprobs)
        return results

    def _new_tokens(self, sampling: Sampling, prompt_length: int) -> int:
        """``sampling.max_tokens``, or for ``None`` what the model's context leaves after the prompt."""
        if sampling.max_tokens is not None:
            return sampling.max_tokens
        config = self.model.config
        context = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        if context is None:
            raise ValueError(
                f"max_tokens=None asks for the model's context, but {self.model_name}'s config has no "
                "max_position_embeddings (n_positions): give max_tokens"
            )
        if not self.seq2seq and prompt_length >= context:
            raise ContextOverflowError(
                f"a prompt of {prompt_length} tokens leaves no room in {self.model_name}'s context of {context}"
            )
        return context - (0 if self.seq2seq else prompt_length)

    def _generate_batch(self, prompts: Sequence[str | list[int]], sampling: Sampling, logprobs: int) -> list[Generated]:
        start = time.perf_counter()
        prompt_ids = [self.encode(p) if isinstance(p, str) else list(p) for p in prompts]
        ids, mask = self._pad(prompt_ids, left=not self.seq2seq)
        if sampling.max_tokens == 0:
            self.usage.add(sum(map(len, prompt_ids)), 0, seconds=time.perf_counter() - start)
            return [Generated("", [], [], [], "length", prompt_tokens=len(ids)) for ids in prompt_ids]
        sample = sampling.temperature > 0
        options: dict[str, Any] = {"do_sample": sample, "max_new_tokens": self._new_tokens(sampling, ids.shape[1])}
        if sample:
            options.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        if sampling.penalties():
            from transformers import LogitsProcessorList

            from textagents.llm.penalties import OpenAIPenalties

            prompt_length = 1 if self.seq2seq else ids.shape[1]  # what input_ids hold before the new tokens
            penalties = OpenAIPenalties(prompt_length, sampling.frequency_penalty, sampling.presence_penalty)
            options["logits_processor"] = LogitsProcessorList([penalties])
        if sampling.stop:
            # stop each sequence as soon as it writes a stop string (not only cut it afterwards): an answer that
            # ends in a blank line no longer generates up to max_tokens
            options.update(stop_strings=list(sampling.stop), tokenizer=self.tokenizer)
        out = self.model.generate(
            input_ids=ids,
            attention_mask=mask,
            pad_token_id=self.tokenizer.pad_token_id,
            return_dict_in_generate=True,
            output_logits=logprobs > 0,
            **options,
        )
        seconds = time.perf_counter() - start
        new_tokens = out.sequences[:, 1:] if self.seq2seq else out.sequences[:, ids.shape[1] :]
        step_logprobs = torch.log_softmax(torch.stack(out.logits, dim=1).float(), -1) if logprobs > 0 else None
        results = []
        for row, prompt in enumerate(prompt_ids):
            tokens = new_tokens[row].tolist()
            finish = "length"
            if self.tokenizer.eos_token_id in tokens:
                tokens = tokens[: tokens.index(self.tokenizer.eos_token_id)]
                finish = "stop"
            pieces = [self.tokenizer.decode([t]) for t in tokens]
            text = "".join(pieces)
            if sampling.stop:
                cut = truncate_at_stop(text, sampling.stop)
                if cut != text:
                    finish = "stop"
                    kept = 0
                    while kept < len(pieces) and len("".join(pieces[: kept + 1])) <= len(cut):
                        kept += 1
                    tokens, pieces, text = tokens[:kept], pieces[:kept], cut
            token_logprobs, top = [], []
            if step_logprobs is not None:
                for step, token in enumerate(tokens):
                    token_logprobs.append(float(step_logprobs[row, step, token]))
                    top.append(self._alternatives(step_logprobs[row, step], logprobs))
            self.usage.add(len(prompt), len(tokens), seconds=seconds)
            results.append(Generated(text, pieces, token_logprobs, top, finish, prompt_tokens=len(prompt)))
        return results

    def _alternatives(self, logprobs: torch.Tensor, top: int) -> dict[str, float]:
        """The ``top`` most likely next tokens (as text) with their log-probs."""
        values, indices = logprobs.topk(max(top, 1))
        return {self.tokenizer.decode([int(i)]): float(v) for v, i in zip(values, indices, strict=True)}

    def prompt_logprobs(self, prompt: str | list[int], top: int = 1) -> Generated:
        """The prompt's own tokens with each one's log-prob given the previous ones (``None`` for the first),
        as ``/v1/completions`` returns them with ``echo=True`` (causal models). ``prompt`` may be token ids,
        as the OpenAI API allows: then its text is their decoding."""
        if self.seq2seq:
            raise NotImplementedError("prompt log-probs (echo) are defined for causal models")
        if isinstance(prompt, str):
            encoded = self.tokenizer(prompt, return_offsets_mapping=self.tokenizer.is_fast)
            ids = list(encoded["input_ids"])
            offsets = [start for start, _ in encoded["offset_mapping"]] if self.tokenizer.is_fast else None
        else:
            ids, offsets, prompt = list(prompt), None, self.tokenizer.decode(prompt)
        if not ids:
            raise ValueError("the prompt has no tokens")
        start = time.perf_counter()
        with self.lock, torch.no_grad():
            logits = self.model(input_ids=torch.tensor([ids], device=self.device)).logits[0]
        seconds = time.perf_counter() - start
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        pieces = [self.tokenizer.decode([t]) for t in ids]
        token_logprobs: list[float | None] = [None]
        alternatives: list[dict[str, float] | None] = [None]
        for step in range(1, len(ids)):
            token_logprobs.append(float(logprobs[step - 1, ids[step]]))
            alternatives.append(self._alternatives(logprobs[step - 1], top))
        self.usage.add(len(ids), 0, seconds=seconds)
        return Generated(prompt, pieces, token_logprobs, alternatives, "length", len(ids), offsets)

    def chat_prompt(self, messages: Sequence[Message]) -> str:
        """The conversation as the model's chat template renders it, or a plain ``role: content`` transcript
        ending with ``assistant:`` for models without one."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
            )
        return transcript(messages)

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        return self.generate([self.chat_prompt(messages)], **sampling)[0]

    def chat_batch(self, conversations: Sequence[Sequence[Message]], **sampling: Any) -> list[str]:
        """One answer per conversation, generated in batches of ``batch_size``."""
        return self.generate([self.chat_prompt(m) for m in conversations], **sampling)


@dataclass
class Generated:
    """One completion: its text, its tokens (as text pieces), per-token log-probs and top alternatives."""

    text: str
    tokens: list[str]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float] | None]
    finish_reason: str
    prompt_tokens: int = 0
    #: Character offset of each token in ``text`` (filled for prompt tokens; completions count from 0).
    text_offsets: list[int] | None = None

    def offsets(self) -> list[int]:
        if self.text_offsets is not None:
            return self.text_offsets
        starts, position = [], 0
        for piece in self.tokens:
            starts.append(position)
            position += len(piece)
        return starts
