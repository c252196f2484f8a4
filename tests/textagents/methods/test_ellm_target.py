"""ELLM's target network against the original (yuqingd/ellm @ e068cf4): the target critic is built on the
online critic's encoder object (dqn.py:239-243), so a sync copies the V and A heads alone and the target's
Q values move with the online encoder between syncs (golden ``ellm_target.json``: the original's
``DQNAgent.update`` on a fixed batch); ``target_network: full_copy`` is the textbook target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.scripts import load_script
from textagents.methods.ellm.dqn import DQNAgent, DQNSettings, double_dqn_loss

GOLDEN = json.loads((Path(__file__).resolve().parent / "golden" / "ellm_target.json").read_text())
RUN = GOLDEN["run"]
HEADS = ("value.", "advantage.")


def _golden_script():
    """The script that made the golden file, for its weight recipe and batch (it imports nothing else)."""
    return load_script("benchmarks/methods/ellm/golden/make_golden.py", "ellm_make_golden")


def _ours(name: str) -> str:
    """The original's parameter name as ours (pixels only: no text layer)."""
    for original, mine in (
        ("encoder.img_encoder.convnet.", "conv."),
        ("encoder.img_encoder.linear.", "image."),
        ("encoder.mlp.", "mlp."),
        ("V.", "value."),
        ("A.", "advantage."),
    ):
        if name.startswith(original):
            return mine + name[len(original) :]
    raise KeyError(name)


def _agent(target_network: str) -> tuple[DQNAgent, dict[str, torch.Tensor]]:
    """Our agent with the golden run's sizes and weights, and its batch (channels last)."""
    script = _golden_script()
    settings = DQNSettings(
        learning_rate=RUN["lr"], buffer_size=8, target_update_every=RUN["sync_every"], target_network=target_network
    )
    agent = DQNAgent(0, RUN["actions"], settings, frame_shape=(84, 84, 4), hidden=RUN["hidden"], head_layers=2)
    shapes = [(name, tuple(agent.online.state_dict()[_ours(name)].shape)) for name in GOLDEN["names"]]
    weights = script.recipe_weights(shapes)
    agent.online.load_state_dict({_ours(name): value for name, value in weights.items()})
    agent.sync_target()
    original = script.target_batch(RUN)
    batch = {
        "frames": original["obs"].permute(0, 2, 3, 1),
        "texts": torch.zeros(len(original["action"]), 0),
        "actions": original["action"],
        "returns": original["reward"],
        "discounts": original["discount"],
        "next_frames": original["next_obs"].permute(0, 2, 3, 1),
        "next_texts": torch.zeros(len(original["action"]), 0),
    }
    return agent, batch


def _q(network, batch) -> torch.Tensor:
    with torch.no_grad():
        return network(batch["next_frames"], batch["next_texts"])


def _run(agent: DQNAgent, batch: dict[str, torch.Tensor]) -> list[dict]:
    """The golden's schedule: an update per step, a sync after every ``sync_every``-th."""
    steps = [{"target_q": _q(agent.target, batch), "online_q": _q(agent.online, batch)}]
    for step in range(1, RUN["updates"] + 1):
        loss = float(agent.learn(batch))
        if step % RUN["sync_every"] == 0:
            agent.sync_target()
        steps.append({"loss": loss, "target_q": _q(agent.target, batch), "online_q": _q(agent.online, batch)})
    return steps


def test_the_default_target_shares_the_encoder_as_the_originals():
    agent, batch = _agent("shared_encoder")
    assert DQNSettings().target_network == "shared_encoder"
    assert agent.target.shares_encoder_with(agent.online)
    for ours, original in zip(_run(agent, batch), GOLDEN["steps"], strict=True):
        if "loss" in original:
            assert ours["loss"] == pytest.approx(original["loss"], rel=1e-5)
        torch.testing.assert_close(ours["target_q"], torch.tensor(original["target_q"]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(ours["online_q"], torch.tensor(original["online_q"]), rtol=1e-5, atol=1e-6)


def test_between_syncs_the_shared_targets_heads_stay_and_its_q_values_move_with_the_encoder():
    agent, batch = _agent("shared_encoder")
    heads = {k: v.clone() for k, v in agent.target.state_dict().items() if k.startswith(HEADS)}
    before = _q(agent.target, batch)
    agent.learn(batch)
    after = {k: v for k, v in agent.target.state_dict().items() if k.startswith(HEADS)}
    assert all(torch.equal(heads[k], after[k]) for k in heads)  # the heads are the last copy ...
    assert not torch.allclose(_q(agent.target, batch), before)  # ... read through the online encoder
    assert not torch.equal(agent.online.value[0].weight, agent.target.value[0].weight)
    assert agent.target.conv[0].weight is agent.online.conv[0].weight
    agent.sync_target()
    assert all(torch.equal(v, agent.online.state_dict()[k]) for k, v in agent.target.state_dict().items())


def test_a_full_copy_target_is_frozen_between_syncs_and_differs_from_the_original():
    agent, batch = _agent("full_copy")
    assert not agent.target.shares_encoder_with(agent.online)
    steps = _run(agent, batch)
    frozen = [s["target_q"] for s in steps[: RUN["sync_every"]]]
    assert all(torch.equal(q, frozen[0]) for q in frozen)  # nothing of the target changes before the sync
    assert steps[1]["loss"] == pytest.approx(GOLDEN["steps"][1]["loss"], rel=1e-5)  # same target at first ...
    assert steps[2]["loss"] != pytest.approx(GOLDEN["steps"][2]["loss"], rel=1e-4)  # ... then the encoder moved
    torch.testing.assert_close(steps[RUN["sync_every"]]["target_q"], steps[RUN["sync_every"]]["online_q"])


def test_the_target_gets_no_gradient():
    agent, batch = _agent("shared_encoder")
    agent.optimizer.zero_grad()
    double_dqn_loss(agent.online, agent.target, batch).backward()
    assert all(p.grad is None for k, p in agent.target.named_parameters() if k.startswith(HEADS))


@pytest.mark.parametrize("target_network", ["shared_encoder", "full_copy"])
def test_checkpoints_keep_the_targets_own_weights(target_network):
    agent, batch = _agent(target_network)
    agent.learn(batch)
    tensors = agent.tensors()
    shared = target_network == "shared_encoder"
    assert any(k.startswith("target.conv.") for k in tensors) is not shared
    restored, _ = _agent(target_network)
    restored.load_tensors(tensors)
    torch.testing.assert_close(_q(restored.target, batch), _q(agent.target, batch), rtol=0, atol=0)
    if shared:  # a full copy's checkpoint gives the shared target its heads, not its encoder
        full, _ = _agent("full_copy")
        full.learn(batch)
        restored.load_tensors(full.tensors())
        assert torch.equal(restored.target.value[0].weight, full.target.value[0].weight)
        assert torch.equal(restored.online.conv[0].weight, full.online.conv[0].weight)
    else:
        with pytest.raises(ValueError, match="target network's state lacks"):
            _agent("full_copy")[0].load_tensors(_agent("shared_encoder")[0].tensors())
