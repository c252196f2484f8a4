"""BK's PPO as the original's ``train_rs.py`` and ``models/networks.py``: the value loss by hand, the
network's layers, initialisation and inputs, argmax evaluation, the settings' errors and the ``original``
shaping form's normaliser kept across a checkpoint."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import textenvs  # noqa: F401  (registers the ids)
from tests.textagents.methods.sandbox_support import UNSAFE_LOCAL_EXEC_HERE
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import FAMILIES
from textagents.methods.bk.method import BKMethod
from textagents.methods.bk.policy import OriginalPolicy
from textagents.methods.bk.ppo import ShapedRolloutBuffer, value_loss
from textagents.methods.bk.shaping import LaggedShaping, PotentialShaping, PreActionPotential
from textagents.methods.core.method import RunContext


def test_the_value_loss_is_half_the_larger_of_the_clipped_and_unclipped_errors():
    values, old, returns = torch.tensor([1.0, 1.9]), torch.tensor([0.5, 0.5]), torch.tensor([0.0, 2.0])
    # unclipped errors 1 and 0.01; clipped predictions 0.6 and 0.6, errors 0.36 and 1.96; larger: 1 and 1.96
    assert value_loss(values, old, returns, 0.1).item() == pytest.approx(0.5 * (1.0 + 1.96) / 2)
    assert value_loss(values, old, returns, None).item() == pytest.approx(0.5 * (1.0 + 0.01) / 2)


def _policy(env_id: str) -> OriginalPolicy:
    family = FAMILIES["crafter_text" if env_id.startswith("Crafter") else "babyai_text"]
    env = family.observation(gym.make(env_id, action_mode="discrete"))
    policy = OriginalPolicy(
        env.observation_space,
        env.action_space,
        lambda _: 3e-4,
        features_extractor_kwargs=family.network,
    )
    env.close()
    return policy


def _parameters(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_the_network_is_the_originals_over_the_grid_alone():
    policy = _policy("BabyAI-Text-GoToLocal-RedBall-S20-v0")
    actions = policy.action_space.n
    convolutions = (3 * 9 + 1) * 32 + (32 * 9 + 1) * 64 + (64 * 9 + 1) * 64
    encoder = convolutions + (64 * 7 * 7 + 1) * 512  # build_conv_nets(obs_shape, 512): H, W < 16
    heads = 2 * (512 * 512 + 512) + (512 + 1) * actions + (512 + 1)  # actor, extra_layer; logits; critic_ext
    assert _parameters(policy) == encoder + heads
    # orthogonal initialisation with the original's gains: each row of an orthogonal matrix has norm = gain
    for layer, gain in (
        (policy.mlp_extractor.actor, 0.01),
        (policy.mlp_extractor.critic, 0.1),
        (policy.action_net, 0.01),
        (policy.value_net, 0.01),
    ):
        assert layer.weight.detach().norm(dim=1).numpy() == pytest.approx(gain, rel=1e-4)
        assert torch.count_nonzero(layer.bias) == 0

    grid = torch.randint(0, 6, (2, 7, 7, 3)).float()
    obs = {"grid": grid, "mission": torch.rand(2, 64)}
    features = policy.extract_features(obs)
    extractor = policy.features_extractor
    scaled = (grid / torch.tensor([10.0, 5.0, 3.0])).permute(0, 3, 1, 2)  # ImageObsWrapper's scaling, (C, H, W)
    assert torch.allclose(features, extractor.linear(extractor.convolutions(scaled)), atol=1e-6)
    # the critic adds its hidden layer to the features (IntrinsicAgent's residual); the mission is not read
    hidden = torch.relu(policy.mlp_extractor.critic(features))
    assert torch.allclose(policy.mlp_extractor.forward_critic(features), hidden + features)
    other_mission = {"grid": grid, "mission": torch.rand(2, 64)}
    assert torch.equal(policy.predict_values(obs), policy.predict_values(other_mission))


def test_actions_come_from_an_unchecked_categorical_with_the_checked_ones_numbers():
    policy = _policy("BabyAI-Text-GoToLocal-RedBall-S20-v0")
    obs = {"grid": torch.randint(0, 6, (16, 7, 7, 3)).float(), "mission": torch.rand(16, 64)}
    distribution = policy.get_distribution(obs)
    assert not distribution.distribution._validate_args  # no read-back from the device per step
    logits = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))
    checked = torch.distributions.Categorical(logits=logits, validate_args=True)
    actions = torch.randint(0, policy.action_space.n, (16,))
    assert torch.equal(distribution.log_prob(actions), checked.log_prob(actions))
    assert torch.equal(distribution.entropy(), checked.entropy())
    torch.manual_seed(5)
    drawn = distribution.sample()
    torch.manual_seed(5)
    assert torch.equal(drawn, checked.sample())


def test_on_crafter_the_network_reads_the_local_view_and_the_inventory():
    policy = _policy("Crafter-Text-ELLM-v0")
    view = policy.observation_space["view"].shape
    inventory = policy.observation_space["inventory"].shape[0]
    assert policy.features_extractor.linear.in_features == 64 * view[0] * view[1] + inventory


def test_evaluation_takes_the_argmax_unless_told_otherwise(tmp_path, monkeypatch):
    for deterministic in (True, False):
        config = BKConfig(shaping="none", envs=1, steps_per_env=8, minibatch_size=8, eval_episodes=1)
        config = BKConfig(**{**config.as_dict(), "eval_deterministic": deterministic})
        method = BKMethod(config, RunContext(tmp_path, lambda: pytest.fail("no LLM"), UNSAFE_LOCAL_EXEC_HERE))
        method._build(0)
        asked = []
        predict = method.model.predict

        def spy(obs, deterministic=False, predict=predict, asked=asked):
            asked.append(deterministic)
            return predict(obs, deterministic=deterministic)

        monkeypatch.setattr(method.model, "predict", spy)
        method.evaluate()
        assert asked and set(asked) == {deterministic}
        method.close()


@pytest.mark.parametrize(
    ("setting", "error"),
    [
        ({"shaping_form": "ng"}, "shaping_form must be one of \\['original', 'markovian', 'masked'\\], got 'ng'"),
        ({"policy_network": "resnet"}, "policy_network must be one of \\['cnn', 'mlp'\\], got 'resnet'"),
        ({"goal_rule": "all"}, "goal_rule must be one of \\['original', 'count'\\], got 'all'"),
        ({"value_clip": 0.0}, "value_clip must be > 0 \\(or null: no clipping\\), got 0.0"),
        ({"gae_lambda": 1.5}, "gae_lambda must be in \\(0, 1\\], got 1.5"),
        ({"ent_coef": -0.1}, "ent_coef must be >= 0, got -0.1"),
        ({"code_cache_entries": -1}, "code_cache_entries must be >= 0 \\(0: no cache\\), got -1"),
        ({"pref_heads": 3}, "pref_width must be a multiple of pref_heads \\(3\\), got 32"),
        ({"goal_threshold": 1.5}, "goal_threshold must be in \\(0, 1\\] \\(or null: the rule's own\\), got 1.5"),
        ({"vec_env": "async"}, "vec_env must be one of \\['sync', 'subproc'\\], got 'async'"),
        ({"vec_env": "subproc"}, "vec_env subproc needs shaping none .* got shaping .code."),
    ],
)
def test_bad_settings_are_refused_with_what_is_valid(setting, error):
    with pytest.raises(ValueError, match=error):
        BKConfig(**setting)


def test_the_defaults_are_the_originals():
    config = BKConfig()
    assert (config.shaping_form, config.policy_network, config.goal_rule) == ("original", "cnn", "original")
    assert (config.ent_coef, config.vf_coef, config.value_clip, config.max_grad_norm) == (0.01, 0.5, 0.1, 0.5)
    assert (config.gae_lambda, config.clip, config.learning_rate, config.ppo_epochs) == (0.95, 0.1, 3e-4, 4)
    assert config.time_limit_as_done and config.eval_deterministic
    assert (config.pref_learning_rate, config.pref_heads) == (3e-4, 1)
    assert config.goal_similarity == 0.4 and BKConfig(goal_rule="count").goal_similarity == 0.6


def test_the_lagged_normaliser_continues_exactly_after_a_checkpoint():
    rng = np.random.default_rng(0)
    rollouts = rng.normal(size=(3, 4, 2))
    whole, resumed = LaggedShaping(2), LaggedShaping(2)
    for rows in rollouts[:2]:
        for row in rows:
            whole.record(row)
            resumed.record(row)
        whole.finish(4)
        resumed.finish(4)
    saved = resumed.state()
    resumed = LaggedShaping(2)
    resumed.load(saved)
    for row in rollouts[2]:
        whole.record(row)
        resumed.record(row)
    assert np.array_equal(whole.finish(4), resumed.finish(4))


@pytest.mark.parametrize("form", ["original", "markovian", "masked"])
def test_each_shaping_form_is_wired_into_ppo(tmp_path, form):
    config = BKConfig(shaping="none", shaping_form=form, envs=2, steps_per_env=8, minibatch_size=16, ppo_epochs=1)
    method = BKMethod(config, RunContext(tmp_path, lambda: pytest.fail("no LLM"), UNSAFE_LOCAL_EXEC_HERE))
    method.potential = lambda obs, info: float(len(obs["text"]))  # no knowledge: a potential set by hand
    method._build(0)
    method.model.learn(total_timesteps=16)
    for env in method.model.get_env().unwrapped.envs:
        while not isinstance(env, PreActionPotential | PotentialShaping):
            env = env.env
        assert isinstance(env, PreActionPotential) == (form == "original")
        assert getattr(env, "form", "original") == form
    assert isinstance(method.model.rollout_buffer, ShapedRolloutBuffer) == (form == "original")
    assert (method.lagged is not None) == (form == "original")
    if form == "original":
        assert method.lagged.last_term.shape == (8, 2) and np.abs(method.lagged.last_term).sum() > 0
    method.close()


def test_envs_in_subprocesses_train_the_same_policy_as_in_one_process(tmp_path):
    """``vec_env: subproc`` is an execution choice: the same seeds give the same rollouts and weights."""
    weights = {}
    for vec_env in ("sync", "subproc"):
        config = BKConfig(shaping="none", vec_env=vec_env, envs=2, steps_per_env=32, minibatch_size=32, eval_episodes=1)
        config = BKConfig(**{**config.as_dict(), "frames_per_iteration": 128})
        method = BKMethod(config, RunContext(tmp_path / vec_env, lambda: pytest.fail("no LLM"), UNSAFE_LOCAL_EXEC_HERE))
        try:
            method.train_iteration(1)
            assert method.frames == 128
            weights[vec_env] = {k: v.clone() for k, v in method.model.policy.state_dict().items()}
        finally:
            method.close()
    assert type(method.model.get_env().unwrapped).__name__ == "SubprocVecEnv"
    assert weights["sync"].keys() == weights["subproc"].keys()
    assert all(torch.equal(weights["sync"][k], weights["subproc"][k]) for k in weights["sync"])
