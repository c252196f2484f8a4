from __future__ import annotations

import inspect
import math
from types import SimpleNamespace

import pytest
import torch

from tests.textagents.reference import hand_scores
from textagents.llm.base import ContextOverflowError
from textagents.llm.transformers_backend import TransformersBackend, ValueHead

CONTEXTS = [
    "Goal: go to the red ball\nObservation: You see a wall 2 steps forward\nAction:",
    "You are in cell 0 of 5. The door is 4 steps right. Action:",
    "Possible action of the agent: turn left, turn right",
]
CANDIDATES = [[" turn left", " go forward", " pick up"], [" go right", " wait"], [" toggle", " drop", " go", " x"]]


@pytest.mark.parametrize("kind", ["causal", "seq2seq"])
def test_score_is_the_sum_of_candidate_token_log_probs(kind, causal_backend, seq2seq_backend):
    backend = causal_backend if kind == "causal" else seq2seq_backend
    scores = backend.score(CONTEXTS, CANDIDATES)
    for context, options, row in zip(CONTEXTS, CANDIDATES, scores, strict=True):
        assert len(row) == len(options)
        for candidate, score in zip(options, row, strict=True):
            assert score == pytest.approx(hand_scores(backend, context, candidate), abs=1e-4)
            assert score < 0


def test_context_reuse_equals_one_pass_per_pair_across_batch_sizes(tiny_models, causal_backend):
    expected = causal_backend.score_without_reuse(CONTEXTS, CANDIDATES)
    one_at_a_time = TransformersBackend(tiny_models.causal, batch_size=1)
    for got in (causal_backend.score(CONTEXTS, CANDIDATES), one_at_a_time.score(CONTEXTS, CANDIDATES)):
        assert [len(row) for row in got] == [len(row) for row in expected]
        for got_row, expected_row in zip(got, expected, strict=True):
            assert got_row == pytest.approx(expected_row, abs=1e-4)


def test_legacy_logit_sum_is_opt_in(tiny_models, causal_backend):
    legacy = TransformersBackend(tiny_models.causal, score_mode="legacy_logits")
    got = legacy.score(CONTEXTS[:1], CANDIDATES[:1])[0]
    expected = [hand_scores(legacy, CONTEXTS[0], c, legacy=True) for c in CANDIDATES[0]]
    assert got == pytest.approx(expected, abs=1e-4)
    assert got != pytest.approx(causal_backend.score(CONTEXTS[:1], CANDIDATES[:1])[0], abs=1e-3)
    with pytest.raises(ValueError, match="legacy_logits"):
        TransformersBackend(tiny_models.causal, score_mode="logits")


def test_score_input_errors_name_the_problem(causal_backend):
    with pytest.raises(ValueError, match="2 contexts but 1"):
        causal_backend.score(["a", "b"], [["x"]])
    with pytest.raises(TypeError, match="one string"):
        causal_backend.score("a", [["x"]])
    with pytest.raises(ValueError, match="context 0"):
        causal_backend.score([""], [["x"]])


def test_value_head_module_function_gets_gradients(tiny_models):
    torch.manual_seed(0)
    backend = TransformersBackend(tiny_models.causal, module_functions={"value": ValueHead(32, width=8)})
    out = backend.forward_candidates(CONTEXTS[:2], CANDIDATES[:2])
    assert [v.shape[0] for v in out["value"]] == [3, 2]
    # Candidates of one context share its value: the head reads the context's last hidden state.
    assert torch.allclose(out["value"][0], out["value"][0][0].expand(3))
    loss = sum(v.sum() for v in out["value"]) - sum(s.sum() for s in out["score"])
    loss.backward()
    assert backend.module_functions["value"].out.weight.grad is not None
    assert backend.model.lm_head.weight.grad is not None
    with pytest.raises(ValueError, match="known: \\['value'\\]"):
        backend.forward_candidates(CONTEXTS[:1], CANDIDATES[:1], functions=["policy"])


@pytest.mark.parametrize("kind", ["causal", "seq2seq"])
def test_generate_is_batched_deterministic_and_counted(kind, causal_backend, seq2seq_backend):
    backend = causal_backend if kind == "causal" else seq2seq_backend
    before = backend.usage.completion_tokens
    greedy = backend.generate(CONTEXTS, max_tokens=6)
    assert greedy == backend.generate(CONTEXTS, max_tokens=6)
    assert [backend.generate([c], max_tokens=6)[0] for c in CONTEXTS] == greedy
    sampled = backend.generate(CONTEXTS, max_tokens=6, temperature=1.0, seed=7)
    assert sampled == backend.generate(CONTEXTS, max_tokens=6, temperature=1.0, seed=7)
    assert backend.usage.completion_tokens > before
    assert isinstance(backend.chat([{"role": "user", "content": "hello"}], max_tokens=3), str)


def test_max_tokens_none_generates_up_to_the_models_context(causal_backend, monkeypatch):
    asked = []
    generate = causal_backend.model.generate
    monkeypatch.setattr(
        causal_backend.model, "generate", lambda **kw: asked.append(kw["max_new_tokens"]) or generate(**kw)
    )
    monkeypatch.setattr(causal_backend.model.config, "n_positions", 40)  # GPT-2's name
    text = causal_backend.generate([CONTEXTS[0]], max_tokens=None)[0]
    assert asked == [40 - len(causal_backend.encode(CONTEXTS[0]))]
    assert len(causal_backend.encode(text)) <= asked[0]
    monkeypatch.setattr(causal_backend.model.config, "n_positions", len(causal_backend.encode(CONTEXTS[0])))
    with pytest.raises(ContextOverflowError, match=r"leaves no room in .* context of"):
        causal_backend.generate([CONTEXTS[0]], max_tokens=None)
    monkeypatch.setattr(causal_backend, "model", SimpleNamespace(config=SimpleNamespace()))  # no positions known
    with pytest.raises(ValueError, match=r"max_tokens=None asks for the model.s context.*give max_tokens"):
        causal_backend.generate([CONTEXTS[0]], max_tokens=None)


def test_generation_stops_at_stop_strings(causal_backend):
    text = causal_backend.generate([CONTEXTS[0]], max_tokens=12, temperature=1.0, seed=3)[0]
    assert text, "the tiny model should produce some text"
    # a letter after the first word (a random tiny model also writes bytes that decode only in pairs)
    stop = next(c for c in text[len(text.split()[0]) + 1 :] if c.isascii() and c.isalpha())
    forwards = []
    hook = causal_backend.model.register_forward_hook(lambda *_: forwards.append(1))
    try:
        cut = causal_backend.generate([CONTEXTS[0]], max_tokens=12, temperature=1.0, seed=3, stop=[stop])[0]
    finally:
        hook.remove()
    assert cut == text[: text.index(stop)]
    assert len(forwards) < 12, "generation should end at the stop string, not run to max_tokens and cut"


def test_prompt_logprobs_follow_the_forward_pass(causal_backend):
    echoed = causal_backend.prompt_logprobs(CONTEXTS[1])
    assert echoed.text == CONTEXTS[1] and echoed.token_logprobs[0] is None
    assert "".join(echoed.tokens) == CONTEXTS[1]
    assert all(CONTEXTS[1][o:].startswith(t) for o, t in zip(echoed.offsets(), echoed.tokens, strict=True))
    ids = causal_backend.tokenizer(CONTEXTS[1])["input_ids"]
    with torch.no_grad():
        logits = causal_backend.model(input_ids=torch.tensor([ids])).logits[0].double()
    for step in range(1, len(ids)):
        expected = float(logits[step - 1, ids[step]] - torch.logsumexp(logits[step - 1], dim=0))
        assert math.isclose(echoed.token_logprobs[step], expected, abs_tol=1e-4)


def test_contexts_are_batched_by_length_within_the_token_budget(tiny_models):
    backend = TransformersBackend(tiny_models.causal, batch_size=2, max_batch_tokens=120)
    assert backend.length_batches([5, 100, 6, 50]) == [[0, 2], [3], [1]]
    # Scores come back in the caller's order whatever the batching.
    tight = TransformersBackend(tiny_models.causal, batch_size=3, max_batch_tokens=20)
    expected = TransformersBackend(tiny_models.causal, batch_size=1).score(CONTEXTS, CANDIDATES)
    for got_row, expected_row in zip(tight.score(CONTEXTS, CANDIDATES), expected, strict=True):
        assert got_row == pytest.approx(expected_row, abs=1e-4)


def test_the_cache_goes_under_the_name_the_installed_transformers_takes(causal_backend):
    from textagents.llm.transformers_backend import cache_keyword, returned_cache

    class Before(torch.nn.Module):
        def forward(self, input_ids=None, past_key_values=None, use_cache=None): ...

    class After(torch.nn.Module):
        def forward(self, input_ids=None, cache=None, use_cache=None): ...

    assert (cache_keyword(Before()), cache_keyword(After())) == ("past_key_values", "cache")
    assert causal_backend.cache_keyword in inspect.signature(type(causal_backend.model).forward).parameters
    ids = torch.tensor([causal_backend.encode("reach the door")])
    with torch.no_grad():
        past = returned_cache(causal_backend.model(input_ids=ids, use_cache=True))
    assert past.get_seq_length() == ids.shape[1]
