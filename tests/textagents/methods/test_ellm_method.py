"""ELLM's DQN (n-step replay and Double-DQN loss against hand computations) and the method end to end:
SimpleOracle goals, an LLM goal source on a tiny model, and its replay."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from textagents.methods.ellm.dqn import DuelingQNetwork, NStepReplay, double_dqn_loss
from textagents.methods.ellm.reward import goal_string

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "ellm" / "smoke.yaml"


def _replay():
    replay = NStepReplay(size=8, text_size=2, frame_shape=(1,), clip_reward=False)
    # episode 1: rewards 1, 2, 3, terminated after the third; episode 2: 4, 5 (still running)
    for step, (reward, terminated) in enumerate([(1, False), (2, False), (3, True), (4, False), (5, False)]):
        replay.add([step], [step, 0], step % 3, reward, [step + 10], [0, step], terminated, False)
    return replay


def test_n_step_returns_stop_at_the_episode_end_and_at_the_newest_transition():
    gamma = 0.5
    batch = _replay().gather(np.array([0, 1, 2, 3, 4]), n=3, gamma=gamma)
    np.testing.assert_allclose(batch["returns"], [1 + 0.5 * 2 + 0.25 * 3, 2 + 0.5 * 3, 3, 4 + 0.5 * 5, 5])
    np.testing.assert_allclose(batch["discounts"], [0, 0, 0, 0.25, 0.5])  # no bootstrap after a termination
    assert batch["next_frames"].flatten().tolist() == [12, 12, 12, 14, 14]


def test_a_time_limit_ends_the_sum_but_bootstraps():
    replay = NStepReplay(size=4, text_size=1, frame_shape=(1,), clip_reward=False)
    replay.add([0], [0], 0, 1.0, [1], [0], False, True)  # truncated
    replay.add([1], [0], 0, 7.0, [2], [0], False, False)
    batch = replay.gather(np.array([0]), n=3, gamma=0.9)
    assert float(batch["returns"][0]) == 1.0 and float(batch["discounts"][0]) == pytest.approx(0.9)


def test_the_double_dqn_loss_matches_a_hand_computation():
    torch.manual_seed(0)
    online, target = DuelingQNetwork(2, 4, 32, 1, (64, 64, 3)), DuelingQNetwork(2, 4, 32, 1, (64, 64, 3))
    frames = torch.randint(0, 255, (3, 64, 64, 3), dtype=torch.uint8)
    texts, next_texts = torch.randn(3, 2), torch.randn(3, 2)
    batch = {
        "frames": frames,
        "texts": texts,
        "actions": torch.tensor([0, 3, 1]),
        "returns": torch.tensor([1.0, 0.0, -1.0]),
        "discounts": torch.tensor([0.9, 0.0, 0.81]),
        "next_frames": frames.flip(0),
        "next_texts": next_texts,
    }
    with torch.no_grad():
        q = online(frames, texts)[torch.arange(3), batch["actions"]]
        best = online(frames.flip(0), next_texts).argmax(1)  # chosen by the online network ...
        value = target(frames.flip(0), next_texts)[torch.arange(3), best]  # ... valued by the target
        goal = batch["returns"] + batch["discounts"] * value
        diff = (q - goal).abs()
        expected = torch.where(diff < 1, 0.5 * diff**2, diff - 0.5).mean()
    assert float(double_dqn_loss(online, target, batch)) == pytest.approx(float(expected), rel=1e-5)


def _records(run):
    return [
        {k: v for k, v in json.loads(line).items() if k != "time"}
        for line in (run / "metrics.jsonl").read_text().splitlines()
    ]


def test_the_smoke_run_with_simple_oracle_goals(tmp_path):
    from textagents.methods.core.runner import run_method

    run_method("ellm", SMOKE, tmp_path / "run", progress=False)
    records = _records(tmp_path / "run")
    assert [(r["kind"], r["iteration"]) for r in records] == [("train", 1), ("eval", 1), ("train", 2), ("eval", 2)]
    assert records[2]["frames"] == 300 and np.isfinite(records[2]["loss"])
    assert 0 <= records[1]["achievements"] <= 22 and "success/collect_wood" in records[1]
    assert records[0]["suggestions/valid"] == 1.0  # the oracle only names achievements


def test_an_llm_goal_source_runs_and_replays_exactly(tmp_path, tiny_models):
    from textagents.methods.core.runner import LLMChoice, run_method

    config = tmp_path / "llm.yaml"
    smoke = SMOKE.read_text().replace("goal_source: oracle", "goal_source: llm")
    config.write_text(smoke.replace("iterations: 2", "iterations: 1"))
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    run_method("ellm", config, recorded, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    first = _records(recorded)[0]
    assert first["llm_calls"] >= 1 and first["llm_calls"] + first["cache_hits"] >= 150
    calls = tmp_path / "calls.jsonl"
    calls.write_bytes((recorded / "llm_calls.jsonl").read_bytes())
    usage = [json.loads(line)["usage"] for line in calls.read_text().splitlines()][: first["llm_calls"]]  # training's
    assert first["prompt_tokens"] == sum(u["prompt_tokens"] for u in usage) > 0
    assert first["completion_tokens"] == sum(u["completion_tokens"] for u in usage)
    run_method("ellm", config, replayed, llm=LLMChoice(replay=str(calls)), progress=False)
    assert _records(replayed) == _records(recorded)


@pytest.mark.parametrize(
    ("goal_source", "env_reward", "adds"),
    [("none", None, True), ("none", False, False), ("oracle", None, False), ("oracle", True, True)],
)
def test_env_reward_decides_whether_training_adds_the_env_reward(tmp_path, goal_source, env_reward, adds):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    config = load_config(EllmConfig, SMOKE, {"goal_source": goal_source, "env_reward": env_reward})
    method = EllmMethod(config, RunContext(tmp_path, lambda: pytest.fail("no LLM")))
    assert config.adds_env_reward is adds and method.env.keep_env_reward is adds


def test_the_time_limit_is_stored_as_terminal_as_the_original(tmp_path):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    config = load_config(EllmConfig, SMOKE, {"frames_per_iteration": 401, "learning_starts": 10_000})
    assert config.stored_terminal(False, True) and not load_config(
        EllmConfig, SMOKE, {"time_limit_terminal": False}
    ).stored_terminal(False, True)
    method = EllmMethod(config, RunContext(tmp_path, lambda: pytest.fail("no LLM")))
    method.train_iteration(1)
    replay = method.agent.replay
    assert replay.ends[: replay.count].any() and (replay.terminals == replay.ends).all()


@pytest.mark.parametrize(("options", "count", "checks"), [({}, None, False), ({"uniform_goals": 5}, 5, False)])
def test_the_uniform_baseline_names_every_action_and_pays_attempts(tmp_path, options, count, checks):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod
    from textenvs.envs.crafter_text.ellm_rules import HARD_ACTIONS

    config = load_config(EllmConfig, SMOKE, {"goal_source": "uniform", **options})
    method = EllmMethod(config, RunContext(tmp_path, lambda: pytest.fail("no LLM")))
    assert method.source.names == HARD_ACTIONS and method.source.count == count  # the harder space's 139
    assert method.env.check_action_success is checks
    assert load_config(EllmConfig, SMOKE, {}).checks_action_success  # the oracle checks success
    with pytest.raises(ValueError, match="uniform_goals must be >= 1 or null"):
        load_config(EllmConfig, SMOKE, {"uniform_goals": 0})


def test_paper_yaml_and_the_defaults_are_the_originals_dqn(tmp_path):
    """config.yaml @ e068cf4: batch 64, eps 1 -> 0.01 over 1M, eval eps 0.001, replay = 5M frames, seed frames
    5000, target every 8000, Adam with its default eps and no clipping, frame_stack 4, hidden_dim 512."""
    from textagents.methods.core.config import load_config
    from textagents.methods.ellm.config import EllmConfig

    paper = load_config(EllmConfig, SMOKE.with_name("paper.yaml"))
    for config in (paper, EllmConfig()):
        assert (config.batch_size, config.epsilon_end, config.epsilon_frames, config.eval_epsilon) == (
            64,
            0.01,
            1_000_000,
            0.001,
        )
        assert (config.buffer_size, config.learning_starts, config.target_update_every) == (5_000_000, 5000, 8000)
        assert (config.adam_eps, config.max_grad_norm, config.frame_shape) == (1e-8, None, (84, 84, 4))
        assert (config.hidden, config.head_layers, config.time_limit_terminal) == (512, 2, True)
        assert (config.action_space, config.dqn_encoder_init) == ("harder", "original")
        assert config.target_network == "shared_encoder"
        assert (config.replay_sampling, config.clip_reward, config.n_steps, config.gamma) == ("episode", True, 3, 0.99)
    assert paper.frames_per_iteration * paper.iterations == 5_000_000 and paper.eval_episodes == 10
    with pytest.raises(ValueError, match="target_network"):
        load_config(EllmConfig, SMOKE, {"target_network": "copy"})
    with pytest.raises(ValueError, match=r"replay_sampling must be one of \['episode', 'transition'\], got 'uniform'"):
        load_config(EllmConfig, SMOKE, {"replay_sampling": "uniform"})


@pytest.mark.parametrize(
    ("options", "size"),
    [
        ({}, 0),  # config.yaml: use_language_state null, use_goal false
        ({"language_state": True}, 384),
        ({"goal_conditioned": True}, 384),
        ({"language_state": True, "goal_conditioned": True}, 384),  # joint, the paper's runs
        ({"language_state": True, "goal_conditioned": True, "goal_encoding": "separate"}, 768),
    ],
)
def test_the_agents_inputs_are_pixels_only_by_default_as_the_originals_code(tmp_path, options, size):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    config = load_config(EllmConfig, SMOKE, {"buffer_size": 10, **options})
    method = EllmMethod(config, RunContext(tmp_path, lambda: pytest.fail("no LLM")))
    method._start_episode()
    text = method._text(method.obs, method.info)
    assert text.shape == (size,) and method.agent.replay.texts.shape == (10, size)
    net = method.agent.online
    assert net.mlp[0].in_features == (2 if size else 1) * 512
    assert (net.text is None) is (size == 0) and (method.dqn_embed is None) is (size == 0)
    if options == {"goal_conditioned": True}:  # the goal string alone (dqn.py:127-128)
        goals = method.dqn_embed([goal_string(method.info["goals"])])[0]
        np.testing.assert_allclose(text, goals)


def test_paper_yaml_turns_on_the_readmes_inputs():
    """README's Crafter pretraining commands: use_goal=True use_language_state=sbert (goal_encoder_type sbert)."""
    from textagents.methods.core.config import load_config
    from textagents.methods.ellm.config import EllmConfig

    paper = load_config(EllmConfig, SMOKE.with_name("paper.yaml"))
    assert paper.language_state and paper.goal_conditioned and paper.joint_goal_input
    assert (EllmConfig().language_state, EllmConfig().goal_conditioned) == (False, False)
    assert load_config(EllmConfig, SMOKE.with_name("cpu.yaml")).text_inputs == 1


def test_the_network_and_optimizer_are_the_originals(tmp_path):
    from textagents.methods.core.config import load_config
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    config = load_config(EllmConfig, SMOKE, {"buffer_size": 10})
    method = EllmMethod(config, RunContext(tmp_path, lambda: pytest.fail("no LLM")))
    net = method.agent.online
    assert net.conv[0].in_channels == 4
    linears = [m for m in net.advantage if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears[1:]] == [(512, 512), (512, 139)]  # the harder space
    assert linears[0].out_features == 512 and net.value[-1].out_features == 1
    group = method.agent.optimizer.param_groups[0]
    assert group["eps"] == 1e-8 and group["lr"] == 6.25e-5
    assert method.agent.replay.frames.shape == (10, 84, 84, 4)
    method._start_episode()
    assert method.stacked.shape == (84, 84, 4) and (method.stacked == method.stacked[..., :1]).all()
    image = method.obs["image"]
    assert image.shape == (84, 84, 3)
    np.testing.assert_array_equal(method.stacked[..., 0], image.mean(-1).astype(np.uint8))
    rgb = load_config(EllmConfig, SMOKE, {"greyscale": False, "frame_stack": 1, "frame_size": 64, "head_layers": 1})
    assert rgb.frame_shape == (64, 64, 3)
    with pytest.raises(ValueError, match="head_layers must be >= 0"):
        load_config(EllmConfig, SMOKE, {"head_layers": -1})
