"""``ParallelLlamaCppBackend``: prompts decoded together get the answers ``LlamaCppBackend`` gives them one after
another (same sampling, same ends), and a start shared by several prompts is evaluated once."""

from __future__ import annotations

import pytest

from tests.textagents.tiny_decoders import tiny_decoder
from textagents.llm import gguf_export
from textagents.llm.base import ContextOverflowError
from textagents.llm.llamacpp_parallel import SHARE_AT_LEAST
from textagents.testing import ENV_VOCABULARY, save_model, train_tokenizer

pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (pip install 'textagents[llamacpp]')")

PROMPTS = [
    "go to living room 0, pick up saucer 1",
    "You are a one-handed household robot. You are holding nothing.",
    "Object tennis ball 1 found on bathroom 0 carpet 15\nIn corridor 0, no receptacles found yet.",
    "go to living room 0, pick up saucer 1 and place it",
    "pick",
    "You are a one-handed household robot. You are holding nothing. Go to",
]
SAMPLED = {"temperature": 1.0, "top_p": 0.9, "frequency_penalty": 0.2, "presence_penalty": 0.2, "seed": 5}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny random llama's transformers backend and its float32 GGUF."""
    from textagents.llm.transformers_backend import TransformersBackend

    folder = tmp_path_factory.mktemp("parallel")
    tokenizer = train_tokenizer(ENV_VOCABULARY)
    save_model(tiny_decoder("llama", tokenizer), tokenizer, folder / "model")
    local = TransformersBackend(folder / "model")
    return local, gguf_export.write_gguf(local.model, local.tokenizer, folder / "model.gguf", outtype="f32")


def _lone(path, **options):
    from textagents.llm.llamacpp_backend import LlamaCppBackend

    return LlamaCppBackend(path, n_ctx=256, logits_all=False, **options)


def _parallel(path, parallel=3, **options):
    from textagents.llm.llamacpp_parallel import ParallelLlamaCppBackend

    return ParallelLlamaCppBackend(path, n_ctx=256, logits_all=False, parallel=parallel, **options)


@pytest.mark.parametrize(
    "sampling",
    [
        {"max_tokens": 12, "temperature": 0.0},
        {"max_tokens": 20, **SAMPLED},
        {"max_tokens": 20, "stop": ["1", "room"], **SAMPLED},
    ],
    ids=["greedy", "sampled", "stop_strings"],
)
def test_prompts_decoded_together_get_the_answers_they_get_one_after_another(model, sampling):
    _, path = model
    lone, parallel = _lone(path), _parallel(path)
    try:
        expected = lone.generate(PROMPTS, **sampling)
        assert len(set(expected)) > 3  # the answers differ: a mix-up between sequences would show
        assert parallel.generate(PROMPTS, **sampling) == expected  # 6 prompts through 3 slots
        assert parallel.generate(PROMPTS[::-1], **sampling)[::-1] == expected  # from the slots' kept caches
        assert parallel.usage.requests == 2 * len(PROMPTS)
        assert parallel.usage.completion_tokens == 2 * lone.usage.completion_tokens
    finally:
        lone.close()
        parallel.close()


def test_stop_when_ends_each_answer_where_it_ends_the_lone_one(model):
    _, path = model

    def long_enough(text):
        return len(text) >= 10

    lone, parallel = _lone(path, stop_when=long_enough), _parallel(path, stop_when=long_enough)
    try:
        expected = lone.generate(PROMPTS, max_tokens=24, **SAMPLED)
        assert all(len(answer) >= 10 for answer in expected)
        assert parallel.generate(PROMPTS, max_tokens=24, **SAMPLED) == expected
    finally:
        lone.close()
        parallel.close()


def test_chat_batch_completes_the_chat_prompt_of_each_conversation(model):
    local, path = model
    conversations = [
        [{"role": "system", "content": "You are a household robot."}, {"role": "user", "content": text}]
        for text in PROMPTS
    ]
    encode = lambda messages: local.encode(local.chat_prompt(messages))  # noqa: E731
    lone, parallel = _lone(path, chat_prompt=encode), _parallel(path, chat_prompt=encode)
    try:
        expected = [lone.chat(messages, max_tokens=16, **SAMPLED) for messages in conversations]
        assert parallel.chat_batch(conversations, max_tokens=16, **SAMPLED) == expected
    finally:
        lone.close()
        parallel.close()


def test_a_start_shared_by_prompts_is_evaluated_once(model, monkeypatch):
    """Identical prompts asked together: the first is evaluated, the others wait a pass and start from a copy
    of its cache (their last prompt token evaluated again, for its logits)."""
    _, path = model
    parallel = _parallel(path, parallel=4)
    decoded = []
    decode = parallel._c.llama_decode

    class Counting:
        def __getattr__(self, name):
            return getattr(parallel_c, name)

        @staticmethod
        def llama_decode(ctx, batch):
            decoded.append(batch.n_tokens)
            return decode(ctx, batch)

    parallel_c = parallel._c
    parallel._c = Counting()
    try:
        prompt = " ".join(PROMPTS)  # longer than SHARE_AT_LEAST tokens
        prompt_tokens = len(parallel.llm.tokenize(prompt.encode(), add_bos=True, special=True))
        assert prompt_tokens > SHARE_AT_LEAST
        answers = parallel.generate([prompt] * 4, max_tokens=3, temperature=0.0)
        assert len(set(answers)) == 1
        # the prompt once; after it, each pass holds one token per sequence (the 3 others' last prompt token)
        assert decoded[0] == prompt_tokens and max(decoded[1:]) <= 4
    finally:
        parallel.close()


def test_bad_arguments_are_refused(model):
    _, path = model
    with pytest.raises(ValueError, match="parallel must be >= 1, got 0"):
        _parallel(path, parallel=0)
    parallel = _parallel(path)
    try:
        with pytest.raises(ContextOverflowError, match="exceed context window of 256"):
            parallel.generate(["go to " * 200], max_tokens=4)
    finally:
        parallel.close()


def test_a_call_that_fails_midway_leaves_the_next_call_clean(model):
    """``stop_when`` raising in the middle of a batch: the error comes through, and the next call generates
    exactly the lone backend's answers and tokens (no slot goes on with the failed call's requests)."""
    _, path = model
    calls = []

    def fails_once(text):
        calls.append(text)
        if len(calls) == 5:
            raise RuntimeError("the test's stop_when fails")
        return False

    lone, parallel = _lone(path), _parallel(path, stop_when=fails_once)
    try:
        with pytest.raises(RuntimeError, match="the test's stop_when fails"):
            parallel.generate(PROMPTS, max_tokens=8, **SAMPLED)
        others, spent = PROMPTS[::-1][:4], parallel.usage.completion_tokens
        assert parallel.generate(others, max_tokens=12, **SAMPLED) == lone.generate(others, max_tokens=12, **SAMPLED)
        assert parallel.usage.completion_tokens - spent == lone.usage.completion_tokens  # no failed call's tokens
    finally:
        lone.close()
        parallel.close()
