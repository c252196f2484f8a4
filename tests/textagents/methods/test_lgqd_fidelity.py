"""Language-grounded QD against the original (salehiac/LanguageGroundedQD @ 2e7ba89) for issue #32: the
target descriptor and the learned actions rounded as it rounds them, no biases in the transformer's blocks;
golden numbers from benchmarks/methods/lgqd/golden/make_golden.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from textagents.methods.lgqd.action_clusters import ActionClusters
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.dataset import learned_actions
from textagents.methods.lgqd.dt import DecisionTransformer, DTSettings, load_policy, save_policy, scaled_bd

GOLDEN = Path(__file__).parent / "golden"
ROUNDING = json.loads((GOLDEN / "lgqd_rounding.json").read_text())
BIAS = json.loads((GOLDEN / "lgqd_bias.json").read_text())
CLUSTERS = ActionClusters(np.array([[-0.9, -0.3, 0.3, 0.9], [-0.9, -0.3, 0.3, 0.9]]))


def test_the_target_descriptor_is_rounded_as_the_original_rounds_it():
    scaled = scaled_bd(np.asarray(ROUNDING["bd"]), DTSettings())
    np.testing.assert_allclose(2 * scaled.astype(np.float64) - 1, ROUNDING["bd_normalised_rounded"], atol=1e-6)


def test_round_bd_false_keeps_the_descriptor_as_measured():
    bd = np.asarray(ROUNDING["bd"])
    np.testing.assert_allclose(scaled_bd(bd, DTSettings(round_bd=False)), bd / 600, atol=1e-7)


def test_the_learned_actions_are_rounded_as_the_original_records_them():
    actions = np.asarray(ROUNDING["actions"], np.float32)
    np.testing.assert_allclose(learned_actions(actions, True), ROUNDING["actions_rounded"], atol=1e-6)
    assert learned_actions(actions, False) is actions


def test_the_blocks_have_the_originals_parameters_and_no_biases():
    model = DecisionTransformer(DTSettings(), 100, CLUSTERS)
    blocks = {n: list(p.shape) for n, p in model.named_parameters() if n.startswith("blocks.")}
    assert sum(int(np.prod(s)) for s in blocks.values()) == BIAS["block_parameter_count"]
    assert sorted(map(tuple, blocks.values())) == sorted(map(tuple, BIAS["block_parameters"].values()))
    assert [list(p.shape) for p in model.final_norm.parameters()] == list(BIAS["final_norm"].values())
    # as the original's RLMLPs, the embeddings and the cluster heads keep their biases: three layers each
    biases = [n for n, _ in model.named_parameters() if n.endswith("bias")]
    for prefix, golden in (("bd_embedding", "embedding_biases"), ("cluster_heads", "cluster_head_biases")):
        ours = [n for n in biases if n.startswith(prefix)]
        assert len(ours) == len([n for n in BIAS[golden] if "bd_embedding" in n or "cluster" in n])


def test_the_bias_option_puts_biases_in_the_blocks():
    model = DecisionTransformer(DTSettings(bias=True), 100, CLUSTERS)
    assert any(n.startswith("blocks.") and n.endswith("bias") for n, _ in model.named_parameters())
    assert model.final_norm.bias is not None


def test_the_configs_defaults_are_the_originals():
    config = LGQDConfig()
    assert (config.round_actions, config.dt_settings().round_bd, config.dt_settings().bias) == (True, True, False)
    ours = LGQDConfig(round_actions=False, dt_round_bd=False, dt_bias=True)
    assert (ours.round_actions, ours.dt_settings().round_bd, ours.dt_settings().bias) == (False, False, True)


@pytest.mark.parametrize("saved", [{"round_bd": False, "bias": True}, {"round_bd": True, "bias": False}])
def test_a_policy_saved_before_issue_32_loads_with_what_it_was_trained_with(tmp_path, saved):
    settings = dataclasses.replace(DTSettings(layers=1, heads=2, embedding=16, max_text_tokens=8), **saved)
    save_policy(tmp_path, DecisionTransformer(settings, 50, CLUSTERS))
    if saved["bias"]:  # the policy.json an older release wrote: neither key
        meta = json.loads((tmp_path / "policy.json").read_text())
        for key in saved:
            del meta["settings"][key]
        (tmp_path / "policy.json").write_text(json.dumps(meta))
    loaded = load_policy(tmp_path).settings
    assert (loaded.round_bd, loaded.bias) == (saved["round_bd"], saved["bias"])
