"""OpenAI's frequency and presence penalties: the logits processor against OpenAI's formula, greedy decoding
with them on a tiny model, and their way to an OpenAI-compatible server and through ``textagents serve``."""

from __future__ import annotations

import pytest
import torch

from textagents.llm.base import Sampling


def _openai_formula(logits: list[float], generated: list[int], frequency: float, presence: float) -> list[float]:
    """mu[j] - c[j] * frequency - (c[j] > 0) * presence, c[j] the count of token j in the generated tokens."""
    counts = [generated.count(j) for j in range(len(logits))]
    return [mu - c * frequency - (c > 0) * presence for mu, c in zip(logits, counts, strict=True)]


def test_the_processor_lowers_the_logits_of_generated_tokens_by_the_openai_formula():
    from textagents.llm.penalties import OpenAIPenalties

    torch.manual_seed(0)
    scores = torch.randn(2, 7)
    # prompt tokens (the first 3 columns, pads included) do not count; token 3 twice in row 0
    input_ids = torch.tensor([[0, 5, 5, 3, 3, 6], [5, 5, 5, 1, 2, 3]])
    out = OpenAIPenalties(3, frequency_penalty=0.2, presence_penalty=0.5)(input_ids, scores.clone())
    for row in range(2):
        expected = _openai_formula(scores[row].tolist(), input_ids[row, 3:].tolist(), 0.2, 0.5)
        assert out[row].tolist() == pytest.approx(expected)
    assert out[0, 5] == scores[0, 5] and out[0, 3] == pytest.approx(float(scores[0, 3]) - 0.9)


def _greedy_by_hand(model, ids: list[int], steps: int, frequency: float, presence: float) -> list[int]:
    """Greedy decoding with the penalties applied to the raw logits, one forward pass per token."""
    generated: list[int] = []
    for _ in range(steps):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids + generated])).logits[0, -1].tolist()
        penalized = _openai_formula(logits, generated, frequency, presence)
        generated.append(max(range(len(penalized)), key=penalized.__getitem__))
    return generated


def test_greedy_generation_with_penalties_follows_the_formula_and_changes_the_answer(causal_backend):
    prompt = "go left, go right, wait"
    ids = causal_backend.encode(prompt)
    eos = causal_backend.tokenizer.eos_token_id
    plain = causal_backend.generate_detailed([prompt], Sampling(max_tokens=12))[0]
    penalized = causal_backend.generate_detailed(
        [prompt], Sampling(max_tokens=12, frequency_penalty=2.0, presence_penalty=2.0)
    )[0]
    by_hand = _greedy_by_hand(causal_backend.model, ids, 12, 2.0, 2.0)
    expected = by_hand[: by_hand.index(eos)] if eos in by_hand else by_hand
    assert [causal_backend.tokenizer.decode([t]) for t in expected] == penalized.tokens
    assert penalized.tokens != plain.tokens  # the tiny model repeats itself without them
    # in a batch the shorter prompt is left-padded: only the new tokens count, as for the prompt alone
    batch = causal_backend.generate(
        [prompt, "reach the door"], max_tokens=12, frequency_penalty=2.0, presence_penalty=2.0
    )
    alone = causal_backend.generate(["reach the door"], max_tokens=12, frequency_penalty=2.0, presence_penalty=2.0)
    assert batch == [penalized.text, alone[0]]


def test_penalties_are_validated_and_left_out_of_keys_when_unset():
    with pytest.raises(ValueError, match=r"frequency_penalty must be in \[-2, 2\], got 2.5"):
        Sampling.of(frequency_penalty=2.5)
    assert "presence_penalty" not in Sampling().as_dict()  # cache and recording keys made before stay valid
    assert Sampling.of(presence_penalty=0.2).as_dict()["presence_penalty"] == 0.2
    assert Sampling.of(**Sampling(frequency_penalty=0.2).as_dict()) == Sampling(frequency_penalty=0.2)


def test_the_openai_backend_sends_the_penalties_only_when_set():
    from textagents.llm.openai_backend import OpenAIBackend

    sent = OpenAIBackend._sampling_kwargs(Sampling(frequency_penalty=0.2, presence_penalty=0.2))
    assert sent["frequency_penalty"] == sent["presence_penalty"] == 0.2
    assert "frequency_penalty" not in OpenAIBackend._sampling_kwargs(Sampling())


def test_the_server_reads_the_penalties_of_a_request():
    from textagents.llm.server_api import RequestError, sampling_of

    sampling = sampling_of({"frequency_penalty": 0.2, "presence_penalty": -1}, max_tokens_limit=64)
    assert (sampling.frequency_penalty, sampling.presence_penalty) == (0.2, -1.0)
    with pytest.raises(RequestError, match=r"'presence_penalty' must be in -2\.\.2, got 3"):
        sampling_of({"presence_penalty": 3}, max_tokens_limit=64)
