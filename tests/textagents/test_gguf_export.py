"""GGUF export: llama.cpp on the exported file computes the logits transformers computes on the model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.textagents.tiny_decoders import ARCHITECTURES, tiny_decoder
from textagents.llm import gguf_export
from textagents.llm.base import ContextOverflowError
from textagents.testing import ENV_VOCABULARY, train_tokenizer

pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (pip install 'textagents[llamacpp]')")

PROMPTS = (
    "go to living room 0, pick up saucer 1",
    "You are a one-handed household robot. You are holding nothing.",
    "Object tennis ball 1 found on bathroom 0 carpet 15\nIn corridor 0, no receptacles found yet.",
)
#: Largest |llama.cpp - transformers| logit allowed (the tiny models' logits reach ~7): float32 weights and a
#: float32 KV cache leave float rounding (~1e-5 seen); float16 weights round every matrix (~0.02 seen); 8-bit
#: blocks, with llama.cpp's products of them with 8-bit activations, more (0.4-0.8 seen).
TOLERANCE = {"f32": 1e-4, "f16": 0.1, "q8_0": 1.0}
GGML_TYPE_F32 = 0


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(ENV_VOCABULARY)


def _llama(path):
    from llama_cpp import Llama

    return Llama(
        model_path=str(path),
        n_ctx=256,
        n_threads=1,
        logits_all=True,
        verbose=False,
        type_k=GGML_TYPE_F32,
        type_v=GGML_TYPE_F32,
    )


def _largest_logit_difference(model, tokenizer, path) -> float:
    """The largest |difference| between llama.cpp's and transformers' logits at every position of PROMPTS;
    llama.cpp must also tokenize each prompt as transformers does."""
    llm = _llama(path)
    try:
        largest = 0.0
        for text in PROMPTS:
            ids = tokenizer(text)["input_ids"]
            assert llm.tokenize(text.encode(), add_bos=False, special=True) == ids
            llm.reset()
            llm.eval(ids)
            with torch.no_grad():
                expected = model(torch.tensor([ids])).logits[0].numpy()
            largest = max(largest, float(np.abs(np.asarray(llm.scores[: len(ids)]) - expected).max()))
        return largest
    finally:
        llm.close()


@pytest.mark.parametrize("outtype", ["f32", "f16", "q8_0"])
@pytest.mark.parametrize("model_type", ARCHITECTURES)
def test_llama_cpp_on_the_export_computes_the_logits_of_transformers(tmp_path, tokenizer, model_type, outtype):
    model = tiny_decoder(model_type, tokenizer)
    path = gguf_export.write_gguf(model, tokenizer, tmp_path / "model.gguf", outtype=outtype)
    assert _largest_logit_difference(model, tokenizer, path) < TOLERANCE[outtype]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.gguf"]  # no temporary file left


def test_q8_0_writes_the_matrices_in_8_bit_blocks_and_the_rest_in_float32(tmp_path, tokenizer):
    from gguf import GGMLQuantizationType, GGUFReader

    model = tiny_decoder("qwen2", tokenizer)
    path = gguf_export.write_gguf(model, tokenizer, tmp_path / "model.gguf", outtype="q8_0")
    types = {t.name: t.tensor_type for t in GGUFReader(path).tensors}
    assert {types[name] for name in types if name.endswith("norm.weight") or name.endswith(".bias")} == {
        GGMLQuantizationType.F32
    }
    assert types["blk.0.attn_q.weight"] == types["token_embd.weight"] == GGMLQuantizationType.Q8_0
    f16 = gguf_export.write_gguf(model, tokenizer, tmp_path / "f16.gguf", outtype="f16")
    assert path.stat().st_size < 0.75 * f16.stat().st_size


def test_without_the_llama_row_permutation_the_logits_differ(tmp_path, tokenizer, monkeypatch):
    """The comparison above can fail: Q and K written in transformers' row order change the logits."""
    model = tiny_decoder("llama", tokenizer)
    monkeypatch.setattr(gguf_export, "permute_qk", lambda weights, n_head: weights)
    path = gguf_export.write_gguf(model, tokenizer, tmp_path / "model.gguf", outtype="f32")
    assert _largest_logit_difference(model, tokenizer, path) > 100 * TOLERANCE["f32"]


def test_a_reference_gives_its_metadata_and_must_be_of_the_same_model(tmp_path, tokenizer):
    from gguf import GGUFReader

    model = tiny_decoder("llama", tokenizer)
    reference = gguf_export.write_gguf(model, tokenizer, tmp_path / "reference.gguf", outtype="f16")
    tuned = gguf_export.write_gguf(model, None, tmp_path / "tuned.gguf", reference=reference, outtype="f32")
    fields = {path: GGUFReader(path).fields for path in (reference, tuned)}
    copied = {k for k in fields[reference] if not k.startswith("GGUF.") and k != "general.file_type"}
    assert copied <= fields[tuned].keys() and "tokenizer.ggml.merges" in copied
    for key in copied:
        assert fields[tuned][key].contents() == fields[reference][key].contents(), key
    assert fields[tuned]["general.file_type"].contents() == 0  # ALL_F32; the reference's is 1, MOSTLY_F16
    assert _largest_logit_difference(model, tokenizer, tuned) < TOLERANCE["f32"]

    deeper = tiny_decoder("llama", tokenizer)
    deeper.config.num_hidden_layers = 3
    with pytest.raises(ValueError, match=r"has llama.block_count = 2, the model 3: not the same base model"):
        gguf_export.write_gguf(deeper, None, tmp_path / "deeper.gguf", reference=reference)
    with pytest.raises(ValueError, match=r"reference GGUF .* is a 'llama' model, the model a 'qwen2'"):
        gguf_export.write_gguf(tiny_decoder("qwen2", tokenizer), None, tmp_path / "q.gguf", reference=reference)
    assert not (tmp_path / "deeper.gguf").exists() and not (tmp_path / "q.gguf").exists()


def test_what_cannot_be_exported_is_refused_in_one_line(tmp_path, tokenizer):
    from textagents.testing import tiny_causal_model

    gpt2 = tiny_causal_model(len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id, 32, 1)
    with pytest.raises(ValueError, match=r"^cannot export model type 'gpt2' to GGUF; supported: llama, qwen2$"):
        gguf_export.write_gguf(gpt2, tokenizer, tmp_path / "gpt2.gguf")
    model = tiny_decoder("llama", tokenizer)
    with pytest.raises(ValueError, match=r"^outtype must be one of \['f16', 'q8_0', 'f32'\], got 'q4_0'$"):
        gguf_export.write_gguf(model, tokenizer, tmp_path / "q.gguf", outtype="q4_0")
    model.config.rope_parameters = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0}
    with pytest.raises(ValueError, match=r"^cannot export rope_type 'yarn' to GGUF; supported: default$"):
        gguf_export.write_gguf(model, tokenizer, tmp_path / "yarn.gguf")
    assert list(tmp_path.iterdir()) == []


def ascii_of(text: str) -> str:
    return text.encode("ascii", "ignore").decode()


def test_the_backend_completes_the_transformers_prompt_tokens(tmp_path, tokenizer, monkeypatch):
    """``LlamaCppBackend(chat_prompt=...)`` completes the tokens the transformers backend generates from; the
    first greedy tokens agree (compared as ASCII: the random model writes partial UTF-8 byte tokens, which
    transformers decodes one by one and llama.cpp joins)."""
    from textagents.llm.llamacpp_backend import LlamaCppBackend
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.testing import save_model

    folder = tmp_path / "model"
    save_model(tiny_decoder("llama", tokenizer), tokenizer, folder)
    local = TransformersBackend(folder)
    path = gguf_export.write_gguf(local.model, local.tokenizer, tmp_path / "model.gguf", outtype="f32")
    llama = LlamaCppBackend(path, chat_prompt=lambda m: local.encode(local.chat_prompt(m)), logits_all=False)
    sent = []
    complete = llama.llm.create_completion
    monkeypatch.setattr(
        llama.llm, "create_completion", lambda prompt, **kw: sent.append(prompt) or complete(prompt, **kw)
    )
    try:
        for text in PROMPTS:
            messages = [{"role": "system", "content": "You are a household robot."}, {"role": "user", "content": text}]
            answer = llama.chat(messages, max_tokens=4, temperature=0)
            assert sent[-1] == local.encode(local.chat_prompt(messages))
            expected = ascii_of(local.chat(messages, max_tokens=4, temperature=0))
            assert len(expected) > 3 and ascii_of(answer) == expected
        with pytest.raises(RuntimeError, match="logits_all=False: it generates but cannot score"):
            llama.score(["go to"], [["kitchen 0"]])
    finally:
        llama.llm.close()


def _whole_sequence_logprob(llm, context: str, candidate: str) -> float:
    """``candidate``'s log-probability after ``context`` from one evaluation of the two together."""
    prefix, tokens = llm.tokenize(context.encode()), llm.tokenize(candidate.encode(), add_bos=False)
    llm.reset()
    llm.eval(prefix + tokens)
    logits = np.asarray(llm.scores[len(prefix) - 1 : len(prefix) + len(tokens) - 1], dtype=np.float64)
    log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    return float(sum(log_probs[i, token] for i, token in enumerate(tokens)))


def test_the_backend_scores_candidates_as_transformers_does_reading_the_context_once(tmp_path, tokenizer):
    """``LlamaCppBackend.score`` evaluates a context once and each candidate after it (the KV cache cut back to
    the context in between): the log-probabilities of evaluating each (context, candidate) whole, those of
    transformers on the exported float32 model, and as many tokens evaluated as the contexts and candidates
    hold."""
    from textagents.llm.llamacpp_backend import LlamaCppBackend
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.testing import save_model

    folder = tmp_path / "model"
    save_model(tiny_decoder("llama", tokenizer), tokenizer, folder)
    local = TransformersBackend(folder, score_mode="logprob")
    path = gguf_export.write_gguf(local.model, local.tokenizer, tmp_path / "model.gguf", outtype="f32")
    llama = LlamaCppBackend(path)
    try:
        contexts = [PROMPTS[0], PROMPTS[2]]
        candidates = [[" pick up saucer 1", " go to", " kitchen 0"], [" carpet 15", " bathroom 0"]]
        ours, theirs = llama.score(contexts, candidates), local.score(contexts, candidates)
        tokens = sum(len(llama.llm.tokenize(c.encode())) for c in contexts)
        tokens += sum(len(llama.llm.tokenize(o.encode(), add_bos=False)) for row in candidates for o in row)
        assert llama.usage.prompt_tokens == tokens
        for context, row, a, b in zip(contexts, candidates, ours, theirs, strict=True):
            np.testing.assert_allclose(a, [_whole_sequence_logprob(llama.llm, context, o) for o in row], atol=1e-4)
            np.testing.assert_allclose(a, b, atol=0.02)  # float32 sums of ~8 log-softmaxes over the vocabulary
    finally:
        llama.llm.close()


def test_llama_cpp_without_max_tokens_generates_until_the_context_is_full(tmp_path, tokenizer, monkeypatch):
    """``max_tokens=None``: as many tokens as the context leaves after the prompt (or until EOS), short of
    llama-cpp-python's own None, which decodes one token past a full context and fails."""
    from textagents.llm.llamacpp_backend import LlamaCppBackend
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.testing import save_model

    folder = tmp_path / "model"
    save_model(tiny_decoder("llama", tokenizer), tokenizer, folder)
    local = TransformersBackend(folder)
    path = gguf_export.write_gguf(local.model, local.tokenizer, tmp_path / "model.gguf", outtype="f32")
    llama = LlamaCppBackend(path, n_ctx=48, logits_all=False)
    sent = []
    complete = llama.llm.create_completion
    monkeypatch.setattr(llama.llm, "create_completion", lambda prompt, **kw: sent.append(kw) or complete(prompt, **kw))
    try:
        for prompt in PROMPTS:  # random tokens, no EOS: each fills the context
            llama.generate([prompt], max_tokens=None, temperature=1.0, seed=0)
            assert sent[-1]["max_tokens"] == llama.llm.n_ctx() - len(llama.llm.tokenize(prompt.encode())) - 1
        llama.chat([{"role": "user", "content": PROMPTS[2]}], max_tokens=None, temperature=1.0, seed=0)
        assert llama.usage.completion_tokens > 0
        too_long = " ".join(PROMPTS) * 4
        with pytest.raises(ContextOverflowError, match="exceed context window"):
            llama.chat([{"role": "user", "content": too_long}], max_tokens=None, temperature=1.0, seed=0)
        with pytest.raises(ContextOverflowError):
            llama.generate([too_long], max_tokens=None, temperature=1.0, seed=0)
    finally:
        llama.llm.close()


def test_the_state_cache_starts_each_prompt_from_its_conversations_last_state(tmp_path, tokenizer, monkeypatch):
    """``state_cache_mb``: two conversations asked in turn, each prompt growing its own previous one: with the
    cache, a prompt is evaluated from where its own conversation's last call left it (its start is not
    evaluated again, though the other conversation's call came in between); the greedy answers are the same."""
    from textagents.llm.llamacpp_backend import LlamaCppBackend
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.testing import save_model

    folder = tmp_path / "model"
    save_model(tiny_decoder("llama", tokenizer), tokenizer, folder)
    local = TransformersBackend(folder)
    path = gguf_export.write_gguf(local.model, local.tokenizer, tmp_path / "model.gguf", outtype="f32")
    growing = [
        [PROMPTS[i], f"{PROMPTS[i]} {PROMPTS[2 - i]}", f"{PROMPTS[i]} {PROMPTS[2 - i]} {PROMPTS[1]}"] for i in (0, 1)
    ]
    asked = [conversation[turn] for turn in range(3) for conversation in growing]  # the two in turn

    def run(state_cache_mb):
        llama = LlamaCppBackend(path, n_ctx=256, logits_all=False, state_cache_mb=state_cache_mb)
        evaluated = []
        evaluate = llama.llm.eval
        monkeypatch.setattr(llama.llm, "eval", lambda tokens: evaluated.append(len(tokens)) or evaluate(tokens))
        try:
            return [llama.generate([prompt], max_tokens=3, temperature=0)[0] for prompt in asked], sum(evaluated)
        finally:
            llama.llm.close()

    (plain, plain_tokens), (cached, cached_tokens) = run(0), run(64)
    assert cached == plain
    prompt_tokens = [len(local.tokenizer(p)["input_ids"]) for p in asked]
    assert plain_tokens > sum(prompt_tokens)  # every prompt from its start, then the answers' tokens
    # with the cache, a prompt after the first two skips the whole of its conversation's previous prompt
    assert cached_tokens == plain_tokens - sum(prompt_tokens[:-2])


def test_stop_when_ends_generation_at_the_first_text_it_accepts(tmp_path, tokenizer):
    """``stop_when``: the answer is the shortest start of the answer generated without it (same seed) that the
    test accepts: the tokens before are sampled as they would have been."""
    from textagents.llm.llamacpp_backend import LlamaCppBackend
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.testing import save_model

    folder = tmp_path / "model"
    save_model(tiny_decoder("llama", tokenizer), tokenizer, folder)
    local = TransformersBackend(folder)
    path = gguf_export.write_gguf(local.model, local.tokenizer, tmp_path / "model.gguf", outtype="f32")
    seen = []

    def long_enough(text):
        seen.append(text)
        return len(text) >= 12

    answers = []
    for stop_when in (None, long_enough):
        llama = LlamaCppBackend(path, n_ctx=256, logits_all=False, stop_when=stop_when)
        try:
            answers.append(llama.generate([PROMPTS[0]], max_tokens=24, temperature=1.0, seed=3)[0])
        finally:
            llama.llm.close()
    whole, stopped = answers
    assert len(whole) > 12 and whole.startswith(stopped) and len(stopped) >= 12
    accepted = next(i for i, text in enumerate(seen) if len(text) >= 12)
    assert seen[accepted] == stopped and all(len(text) < 12 for text in seen[:accepted])
