"""The sentence encoder inside ELLM's DQN against the original (yuqingd/ellm @ e068cf4): ``Critic.__init__``
applies ``utils.weight_init`` to every submodule, the encoder's SBERT included (dqn.py:204), so its linear
layers are orthogonal with zero biases (golden ``ellm_weight_init.json``, from the original's function); the
reward's encoder is a separate, pretrained copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from textagents.methods.ellm.dqn import reinitialise_as_original

GOLDEN = json.loads((Path(__file__).resolve().parent / "golden" / "ellm_weight_init.json").read_text())
SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "ellm" / "smoke.yaml"


def _small_bert():
    """The golden script's ``small_bert``: a 2-layer BERT of width 8, every parameter drawn from N(0, 1)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(GOLDEN["build_seed"])
    config = BertConfig(
        vocab_size=16,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=12,
        max_position_embeddings=10,
    )
    model = BertModel(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_()
    return model


def _orthogonal(weight: torch.Tensor) -> bool:
    small = weight if weight.shape[0] <= weight.shape[1] else weight.T
    return torch.allclose(small @ small.T, torch.eye(small.shape[0]), atol=1e-4)


def test_the_reinitialisation_is_the_originals_weight_init():
    """Which parameters change (every linear's weight and bias; embeddings and LayerNorms kept), zero biases,
    orthogonal weights and, drawn in the same order from a stream seeded as the original's global one, the
    same values."""
    model = _small_bert()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    reinitialise_as_original(model, seed=GOLDEN["init_seed"])
    after = dict(model.named_parameters())
    assert list(after) == [c["name"] for c in GOLDEN["cases"]]
    for case in GOLDEN["cases"]:
        name, value = case["name"], after[case["name"]].detach()
        assert (not torch.equal(value, before[name])) == case["changed"], name
        torch.testing.assert_close(value.flatten(), torch.tensor(case["values"]), rtol=0, atol=1e-6, msg=name)
        if case["changed"] and name.endswith("bias"):
            assert not value.any(), name
        if case["changed"] and name.endswith("weight"):
            assert _orthogonal(value), name


@pytest.fixture(scope="module")
def methods(tmp_path_factory):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    made = {}
    for init in ("original", "pretrained"):
        config = load_config(EllmConfig, SMOKE, {"buffer_size": 10, "dqn_encoder_init": init, "language_state": True})
        made[init] = EllmMethod(config, RunContext(tmp_path_factory.mktemp(init), lambda: pytest.fail("LLM")))
    return made


def test_the_dqn_encoder_is_reinitialised_and_the_rewards_is_pretrained(methods):
    from textagents.methods.ellm.config import EllmConfig
    from textagents.sb3.features import SentenceEmbedder

    assert EllmConfig().dqn_encoder_init == "original"
    method = methods["original"]
    assert method.dqn_embed is not method.embed
    pretrained = dict(SentenceEmbedder().model.named_parameters())
    reward = dict(method.embed.model.named_parameters())
    dqn = dict(method.dqn_embed.model.named_parameters())
    linears = {
        f"{name}.{kind}"
        for name, module in method.dqn_embed.model.named_modules()
        if isinstance(module, torch.nn.Linear)
        for kind in ("weight", "bias")
    }
    assert len(linears) == 2 * (6 * 6 + 1)  # all-MiniLM-L6-v2: 6 per layer (q, k, v, 3 dense), the pooler's
    for name, value in dqn.items():
        assert torch.equal(reward[name], pretrained[name]), name  # the reward's copy is untouched
        if name not in linears:
            assert torch.equal(value, pretrained[name]), name  # embeddings and LayerNorms kept
        elif name.endswith("bias"):
            assert not value.any(), name
        else:
            assert not torch.equal(value, pretrained[name]) and _orthogonal(value.detach()), name


def test_the_dqn_reads_its_own_encoder_with_its_own_cache(methods):
    method = methods["original"]
    method._start_episode()
    text = method._text(method.obs, method.info)
    caption = method.obs["text"]
    assert torch.allclose(torch.from_numpy(text), torch.from_numpy(method.dqn_embed([caption])[0]))
    assert float(text @ method.embed([caption])[0]) < 0.99  # not the reward's embedding
    assert caption in method.dqn_embed.cache and method.dqn_embed.cache is not method.embed.cache
    assert methods["pretrained"].dqn_embed is methods["pretrained"].embed
