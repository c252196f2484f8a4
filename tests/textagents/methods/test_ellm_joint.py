"""ELLM against the original (yuqingd/ellm @ e068cf4): the goal-conditioned text input (one encoder pass over
the caption's and the goal string's ids together, golden ``ellm_joint.json``), the network's encoder, and the
health term of the reward (golden ``ellm_health.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import textenvs  # noqa: F401
from textagents.methods.ellm.dqn import DuelingQNetwork
from textagents.methods.ellm.goals import Caption, NoGoals
from textagents.methods.ellm.joint import JointEmbedder, joined_ids
from textagents.methods.ellm.reward import EllmReward, goal_string

GOLDEN = Path(__file__).resolve().parent / "golden"
SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "ellm" / "smoke.yaml"


def _golden(name):
    return json.loads((GOLDEN / name).read_text())["cases"]


@pytest.fixture(scope="module")
def embed():
    from textagents.sb3.features import SentenceEmbedder

    return SentenceEmbedder()


@pytest.mark.parametrize("case", _golden("ellm_joint.json"), ids=lambda c: str(c["goals"]))
def test_the_joined_ids_are_the_originals(case, embed):
    joint = JointEmbedder(embed)
    caption = Caption(case["view"], case["inventory"], case["status"], {})
    assert joined_ids(joint.tokenize, caption, case["goals"]) == case["ids"]


def test_the_joint_embedding_is_one_masked_pass_over_both_rows(embed):
    joint = JointEmbedder(embed)
    caption = Caption("you see water.", "", "you feel thirsty.", {})
    vector = joint(caption, ["drink water"])
    assert vector.shape == (embed.dim,) and np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    ids = torch.tensor([joined_ids(joint.tokenize, caption, ["drink water"])])  # all 400, padding included
    mask = (ids != 0).long()
    with torch.no_grad():
        tokens = embed.model[0].auto_model(input_ids=ids, attention_mask=mask)[0]
    pooled = (tokens * mask.unsqueeze(-1)).sum(1) / mask.sum()
    np.testing.assert_allclose(vector, torch.nn.functional.normalize(pooled)[0].numpy(), atol=1e-5)
    # the goal's tokens sit after the caption's padding: not the embedding of the two texts run together
    assert float(vector @ embed(["you see water. you feel thirsty. Your goal is: drink water."])[0]) < 0.999
    assert joint(caption, ["drink water"]) is vector and len(joint.cache) == 1


def test_goal_conditioning_is_joint_by_default_and_separate_as_an_option(tmp_path):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    shapes = {}
    for encoding in ("joint", "separate"):
        options = {"language_state": True, "goal_conditioned": True, "buffer_size": 10}
        if encoding == "separate":
            options["goal_encoding"] = "separate"
        method = EllmMethod(load_config(EllmConfig, SMOKE, options), RunContext(tmp_path, lambda: pytest.fail("LLM")))
        method._start_episode()
        text = method._text(method.obs, method.info)
        shapes[encoding] = (text.shape, method.agent.online.text.in_features)
        if encoding == "joint":
            np.testing.assert_allclose(text, method.joint(Caption.of(method.info), method.info["goals"]))
        else:  # both by the DQN's encoder
            goals = method.dqn_embed([goal_string(method.info["goals"])])[0]
            np.testing.assert_allclose(text, np.concatenate([method.dqn_embed([method.obs["text"]])[0], goals]))
    assert shapes == {"joint": ((384,), 384), "separate": ((768,), 768)}
    assert EllmConfig().goal_encoding == "joint"
    with pytest.raises(ValueError, match="goal_encoding"):
        load_config(EllmConfig, SMOKE, {"goal_encoding": "concat"})


def test_the_network_is_the_originals_encoder_and_critic():
    """dqn.py:78-217: conv features L2-normalised then Linear(3136, 512), text Linear(384, 512), an MLP
    Linear(1024, 512) + ReLU, heads 512 -> 512 -> 512 -> out; orthogonal weights, zero biases."""
    torch.manual_seed(0)
    net = DuelingQNetwork(384, 27)
    assert (net.image.in_features, net.image.out_features) == (3136, 512)
    assert (net.text.in_features, net.text.out_features) == (384, 512)
    assert (net.mlp[0].in_features, net.mlp[0].out_features) == (1024, 512) and isinstance(net.mlp[1], torch.nn.ReLU)
    heads = [(m.in_features, m.out_features) for m in net.advantage if isinstance(m, torch.nn.Linear)]
    assert heads == [(512, 512), (512, 512), (512, 27)] and net.value[0].in_features == 512
    weight = net.text.weight.detach()
    torch.testing.assert_close(weight.T @ weight, torch.eye(384), atol=1e-4, rtol=0)
    assert not net.text.bias.any() and not net.conv[0].bias.any()
    frames = torch.randint(0, 255, (2, 84, 84, 4), dtype=torch.uint8)
    texts = torch.randn(2, 384)
    with torch.no_grad():
        conv = net.conv(frames.permute(0, 3, 1, 2).float() / 255.0)
        image = net.image(conv / conv.norm(dim=1, keepdim=True))
        torch.testing.assert_close(
            net.encode(frames, texts), torch.relu(net.mlp[0](torch.cat([image, net.text(texts)], 1)))
        )
    assert net(frames, texts).shape == (2, 27)


@pytest.mark.parametrize("case", _golden("ellm_health.json"), ids=lambda c: f"{c['last_health']}->{c['health']}")
def test_a_health_change_adds_the_originals_health_reward(case):
    """goal_wrapper.py:608-609: reward = health_reward + text_reward, where health_reward is 0 (env.py:132);
    kept, the env's reward has no health term either (the original's env reward is unlock + that 0)."""
    env = EllmReward(gym.make("Crafter-Text-ELLM-v0"), NoGoals(), lambda texts: np.eye(2)[:1], keep_env_reward=True)
    env.reset(seed=0)
    player = env.unwrapped.game.player
    player.inventory["health"] = case["last_health"]
    env.step("noop")
    player.inventory["health"] = case["health"]
    _, reward, *_, info = env.step("noop")
    assert info["intrinsic_reward"] == 0.0 and info["env_reward"] == 0.0
    assert reward == case["reward"] == 0.0
