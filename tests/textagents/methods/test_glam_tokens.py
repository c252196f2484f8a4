"""GLAM's LLM as the original built it: NPAE's fresh model with the pretrained embedding weights
(``train_language_agent.py:174-182``), and the commands tokenized as the scoring's lamorel did (the
paper-era ``d76c7c2`` with the tokenizer's special tokens, so T5's appended ``</s>`` is scored)."""

from __future__ import annotations

import shutil

import pytest
import torch

from textagents.llm.lamorel import embedding_state
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.llm_learner import llm_spec

COMMANDS = ["turn left", "go forward", "pick up"]
CONTEXT = "Goal of the agent: go to the red ball \n Action 0:"


def _model_weights(config: GlamConfig, path) -> dict[str, torch.Tensor]:
    return llm_spec(config, str(path)).build().model.state_dict()


def _loaded_names(path) -> set[str]:
    """The names of the weights the original's filter picks from the pretrained model."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    seq2seq = AutoConfig.from_pretrained(path).is_encoder_decoder
    model = (AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM).from_pretrained(path)
    return set(embedding_state(model))


@pytest.mark.parametrize(
    ("seq2seq", "expected"),
    [
        (True, {"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"}),
        (False, {"transformer.wte.weight", "lm_head.weight"}),  # GPT-2's names; the LM head is tied to them
    ],
)
def test_npae_starts_from_the_pretrained_embedding_and_fresh_other_weights(tiny_models, seq2seq, expected):
    path = tiny_models.seq2seq if seq2seq else tiny_models.causal
    loaded = _loaded_names(path)
    assert expected <= loaded
    # seed 5: seed 0, the tiny models' own, would draw the fresh weights equal to the "pretrained" ones
    pretrained = _model_weights(GlamConfig(value_head_width=8, seed=5), path)
    npae = _model_weights(GlamConfig(agent="npae", value_head_width=8, seed=5), path)
    fresh = _model_weights(GlamConfig(agent="npae", value_head_width=8, seed=5, npae_load_embedding=False), path)
    assert all(torch.equal(npae[k], pretrained[k]) for k in expected)
    others = [k for k, v in pretrained.items() if k not in loaded and v.dim() == 2]
    assert others and not any(torch.equal(npae[k], pretrained[k]) for k in others)
    assert not any(torch.equal(fresh[k], pretrained[k]) for k in expected)


@pytest.fixture(scope="module")
def t5_style_seq2seq(tiny_models, tmp_path_factory):
    """The tiny seq2seq model with a tokenizer that appends EOS to every text, as T5's does."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer

    path = tmp_path_factory.mktemp("t5_style") / "seq2seq"
    shutil.copytree(tiny_models.seq2seq, path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    eos = tokenizer.eos_token
    tokenizer._tokenizer.post_processor = TemplateProcessing(
        single=f"$A {eos}", special_tokens=[(eos, tokenizer.eos_token_id)]
    )
    tokenizer.save_pretrained(path)
    return path


def _hand_scores(path, ids_of) -> list[float]:
    """Each command's summed decoder log-probs over ``ids_of(command)``, by a plain forward pass."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    encoder = torch.tensor([tokenizer(CONTEXT)["input_ids"]])
    scores = []
    for command in COMMANDS:
        ids = ids_of(tokenizer, command)
        decoder = torch.tensor([[model.config.decoder_start_token_id, *ids[:-1]]])
        with torch.no_grad():
            logits = model(input_ids=encoder, decoder_input_ids=decoder).logits[0].log_softmax(-1)
        scores.append(sum(float(logits[i, t]) for i, t in enumerate(ids)))
    return scores


def _backend_scores(path, scoring: str, **options) -> list[float]:
    backend = llm_spec(GlamConfig(scoring=scoring, value_head_width=8, **options), str(path)).build()
    with torch.no_grad():
        (scores,) = backend.forward_candidates([CONTEXT], [COMMANDS], functions=())["score"]
    return scores.tolist()


def with_special(tokenizer, command):
    return tokenizer(command)["input_ids"]


def without_special(tokenizer, command):
    return tokenizer(command, add_special_tokens=False)["input_ids"]


def test_the_paper_scoring_scores_the_eos_a_t5_style_tokenizer_appends(t5_style_seq2seq):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(t5_style_seq2seq)
    assert all(with_special(tokenizer, c)[-1] == tokenizer.eos_token_id for c in COMMANDS)
    paper = _backend_scores(t5_style_seq2seq, "paper")
    assert paper == pytest.approx(_hand_scores(t5_style_seq2seq, with_special), abs=1e-4)
    logprob = _backend_scores(t5_style_seq2seq, "logprob")  # lamorel dce6f0d: no special tokens
    assert logprob == pytest.approx(_hand_scores(t5_style_seq2seq, without_special), abs=1e-4)
    assert all(p < q - 1e-3 for p, q in zip(paper, logprob, strict=True))  # P(</s>) < 1 is in the product
    off = _backend_scores(t5_style_seq2seq, "paper", candidate_special_tokens=False)
    assert off == pytest.approx(logprob, abs=1e-6)


def test_no_eos_is_scored_where_the_tokenizer_appends_none(tiny_models):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_models.seq2seq)
    assert all(with_special(tokenizer, c) == without_special(tokenizer, c) for c in COMMANDS)
    assert _backend_scores(tiny_models.seq2seq, "paper") == pytest.approx(
        _hand_scores(tiny_models.seq2seq, without_special), abs=1e-4
    )
