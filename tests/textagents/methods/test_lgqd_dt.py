"""Language-grounded QD's action clusters, decision transformer (shapes, causality, padding, the focal +
MSE loss by hand, training, resuming) and its deployment in fastsim, with tiny models and a tokenizer
trained here."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from textagents.methods.lgqd.action_clusters import ActionClusters
from textagents.methods.lgqd.dataset import Episodes
from textagents.methods.lgqd.deploy import choose_clusters, deploy
from textagents.methods.lgqd.dt import (
    DecisionTransformer,
    DTSettings,
    DTTrainer,
    Episode,
    collate,
    description_tokens,
    dt_episodes,
    dt_loss,
    focal_loss,
    load_policy,
    save_policy,
    scaled_bd,
    scaled_observations,
    train_dt,
)
from textagents.testing import train_tokenizer

TEXTS = ["the robot drives north past the fan to the red tile", "it turns east towards the sofa", "go left", "go right"]
TINY = DTSettings(
    layers=1,
    heads=2,
    embedding=16,
    dropout=0.0,
    cluster_head_hidden=8,
    offset_head_hidden=8,
    max_text_tokens=12,
    max_steps=24,
    batch_size=4,
    learning_rate=1e-2,
    min_learning_rate=1e-3,
    warmup_steps=0,
    decay_steps=1000,
)
CENTRES = np.array([[-0.9, -0.3, 0.3, 0.9], [-0.9, -0.3, 0.3, 0.9]])


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(TEXTS, vocab_size=300)


def episode(description: str, steps: int, seed: int) -> Episode:
    rng = np.random.default_rng(seed)
    return Episode(description, rng.uniform(0, 600, 2), rng.uniform(0, 100, (steps, 5)), rng.uniform(-1, 1, (steps, 2)))


def model(settings: DTSettings, tokenizer, seed: int = 0) -> DecisionTransformer:
    torch.manual_seed(seed)
    return DecisionTransformer(settings, len(tokenizer), ActionClusters(CENTRES)).eval()


# ---------------------------------------------------------------------- action clusters
def test_action_clusters_find_each_dimensions_groups_and_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    groups = np.array([[-0.8, -0.6], [-0.2, 0.0], [0.3, 0.5], [0.9, 0.95]])
    actions = groups[rng.integers(0, 4, 400)] + rng.normal(0, 0.02, (400, 2))
    clusters = ActionClusters.fit(actions, seed=0)
    assert clusters.centers.shape == (2, 4)
    np.testing.assert_allclose(clusters.centers, groups.T, atol=0.02)  # ascending, one row per dimension
    ids, offsets = clusters.encode(actions.reshape(40, 10, 2))
    assert ids.shape == offsets.shape == (40, 10, 2) and ids.dtype == np.int64
    assert np.abs(offsets).max() < 0.1
    np.testing.assert_allclose(clusters.decode(ids, offsets), actions.reshape(40, 10, 2), rtol=0, atol=1e-12)
    clusters.save(tmp_path / "clusters.json")
    loaded = ActionClusters.load(tmp_path / "clusters.json")
    np.testing.assert_array_equal(loaded.centers, clusters.centers)
    assert json.loads((tmp_path / "clusters.json").read_text())["centers"] == clusters.centers.tolist()


def test_action_clusters_refuse_a_dimension_with_too_few_values():
    actions = np.stack([np.linspace(-1, 1, 50), np.tile([0.0, 0.5, 1.0], 17)[:50]], axis=1)
    with pytest.raises(ValueError, match="dimension 1 has 3 distinct values"):
        ActionClusters.fit(actions)


# ---------------------------------------------------------------------- the model
def test_settings_check_their_values_and_schedule_the_learning_rate():
    settings = DTSettings(learning_rate=1e-2, min_learning_rate=1e-3, warmup_steps=10, decay_steps=110)
    assert settings.learning_rate_at(0) == pytest.approx(1e-3)  # warmup: (step + 1) / 10 of the peak
    assert settings.learning_rate_at(9) == pytest.approx(1e-2)
    assert settings.learning_rate_at(60) == pytest.approx((1e-2 + 1e-3) / 2)  # half way down the cosine
    assert settings.learning_rate_at(110) == settings.learning_rate_at(500) == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="multiple of heads"):
        DTSettings(embedding=30, heads=4)
    with pytest.raises(ValueError, match="obs_scale"):
        DTSettings(obs_scale=(100.0, 0.0))


def test_a_splits_arrays_become_episodes_asking_for_their_own_descriptor():
    rng = np.random.default_rng(0)
    split = Episodes(
        items=np.array([4, 9]),
        descriptions=["go left", "go right"],
        styles=["narrative", "request"],
        bd=np.array([[10.0, 20.0], [30.0, 40.0]]),
        observations=rng.uniform(0, 100, (2, 6, 5)).astype(np.float32),
        actions=rng.uniform(-4, 4, (2, 6, 2)).astype(np.float32),
        positions=np.zeros((2, 6, 2), np.float32),
        annotations=[[], []],
    )
    episodes = dt_episodes(split)
    assert [e.description for e in episodes] == ["go left", "go right"]
    np.testing.assert_array_equal(episodes[1].bd, [30.0, 40.0])
    np.testing.assert_array_equal(episodes[1].actions, split.actions[1])
    np.testing.assert_array_equal(episodes[0].observations, split.observations[0])


def test_outputs_are_per_step_dimension_and_cluster(tokenizer):
    dt = model(TINY, tokenizer)
    batch = collate(
        [episode(TEXTS[0], 7, 0), episode(TEXTS[1], 4, 1), episode("", 2, 2)], tokenizer, dt_clusters(), TINY
    )
    logits, offsets = dt(batch)
    assert logits.shape == offsets.shape == (3, 7, 2, 4)
    assert batch.step_mask.sum(1).tolist() == [7, 4, 2]
    assert batch.text_mask[2].sum() == 0 and torch.isfinite(logits).all()


def dt_clusters() -> ActionClusters:
    return ActionClusters(CENTRES)


def test_a_steps_prediction_sees_neither_its_action_nor_later_steps(tokenizer):
    dt = model(TINY, tokenizer)
    base = episode(TEXTS[0], 8, 0)
    changed_actions, changed_observations = base.actions.copy(), base.observations.copy()
    changed_actions[3:] = -changed_actions[3:]
    changed_observations[4:] += 50
    later = Episode(base.description, base.bd, changed_observations, changed_actions)
    first, _ = dt(collate([base], tokenizer, dt_clusters(), TINY))
    second, _ = dt(collate([later], tokenizer, dt_clusters(), TINY))
    torch.testing.assert_close(first[:, :4], second[:, :4])
    assert not torch.allclose(first[:, 4:], second[:, 4:])  # step 4 does see its own (changed) observation


@pytest.mark.parametrize("condition_on_target", [True, False])
def test_the_target_descriptor_is_read_only_when_the_dt_is_conditioned_on_it(tokenizer, condition_on_target):
    settings = dataclasses.replace(TINY, condition_on_target=condition_on_target)
    dt = model(settings, tokenizer)
    base = episode(TEXTS[0], 5, 0)
    elsewhere = Episode(base.description, base.bd + 300.0, base.observations, base.actions)
    first, _ = dt(collate([base], tokenizer, dt_clusters(), settings))
    second, _ = dt(collate([elsewhere], tokenizer, dt_clusters(), settings))
    assert torch.equal(first, second) != condition_on_target  # an untrained DT barely reads it: exact
    bd = torch.from_numpy(scaled_bd(elsewhere.bd[None], settings))
    tokens = description_tokens(tokenizer, base.description, settings)
    observation = torch.from_numpy(scaled_observations(base.observations[:1], settings))
    stepped, _, _ = dt.start(torch.tensor([tokens]), bd, observation)  # a rollout reads it as training did
    torch.testing.assert_close(stepped, second[:, 0], rtol=1e-4, atol=1e-5)


def test_padding_to_a_longer_episode_changes_no_prediction(tokenizer):
    dt = model(TINY, tokenizer)
    short = episode("go left", 3, 0)
    alone, _ = dt(collate([short], tokenizer, dt_clusters(), TINY))
    together, _ = dt(collate([episode(TEXTS[0], 9, 1), short], tokenizer, dt_clusters(), TINY))
    torch.testing.assert_close(alone[0], together[1, :3], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("description", [TEXTS[0], ""])
def test_a_rollout_step_by_step_predicts_as_the_whole_episode_does(tokenizer, description):
    dt = model(TINY, tokenizer, seed=2)
    steps = episode(description, 6, 0)
    whole_logits, whole_offsets = dt(collate([steps], tokenizer, dt_clusters(), TINY))
    tokens = description_tokens(tokenizer, description, TINY)
    text = torch.tensor([tokens], dtype=torch.int64).reshape(1, len(tokens))
    bd = torch.from_numpy(scaled_bd(steps.bd[None], TINY))
    observations = torch.from_numpy(scaled_observations(steps.observations, TINY))
    actions = torch.from_numpy(steps.actions.astype(np.float32))
    logits, offsets, cache = dt.start(text, bd, observations[None, 0])
    rollout = [(logits, offsets)]
    for t in range(1, 6):
        logits, offsets, cache = dt.advance(cache, actions[None, t - 1], bd, observations[None, t], t)
        rollout.append((logits, offsets))
    assert cache[0][0].shape[2] == len(tokens) + 3 * 6 - 1  # every token but the last action's
    torch.testing.assert_close(torch.stack([r[0] for r in rollout], 1), whole_logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.stack([r[1] for r in rollout], 1), whole_offsets, rtol=1e-4, atol=1e-5)


def test_focal_and_offset_losses_match_a_hand_computation(tokenizer):
    dt = model(TINY, tokenizer)
    logits = torch.zeros(1, 3, 2, 4)
    logits[0, 1, :, 0] = math.log(3.0)  # p(cluster 0) = 3 / 6
    logits[0, 2] = 50.0 * torch.arange(4.0)  # a padded step: would add a huge loss if counted
    ids = torch.tensor([[[1, 2], [0, 0], [0, 0]]])
    mask = torch.tensor([[True, True, False]])
    expected_focal = (2 * 0.75**2 * math.log(4) + 2 * 0.5**2 * math.log(2)) / 4
    assert focal_loss(logits, ids, mask, 2.0).item() == pytest.approx(expected_focal, rel=1e-6)
    assert focal_loss(logits, ids, mask, 0.0).item() == pytest.approx((2 * math.log(4) + 2 * math.log(2)) / 4)

    # centres -0.3 / 0.3 / -0.9 / -0.9, offsets 0.1 / 0 / 0 / 0.2: predicted -0.2, 0.3, -0.9, -0.7
    actions = np.array([[-0.25, 0.3], [-0.9, -0.9], [0.5, 0.5]])
    batch = collate([Episode("go left", np.zeros(2), np.zeros((3, 5)), actions)], tokenizer, dt_clusters(), TINY)
    batch = type(batch)(**{**batch.__dict__, "cluster_ids": ids, "step_mask": mask})
    offsets = torch.zeros(1, 3, 2, 4)
    offsets[0, 0, 0, 1], offsets[0, 1, 1, 0] = 0.1, 0.2
    terms = dt_loss(dt, batch, logits, offsets)
    expected_mse = (0.05**2 + 0 + 0 + 0.2**2) / 4
    assert terms["focal"].item() == pytest.approx(expected_focal, rel=1e-6)
    assert terms["mse"].item() == pytest.approx(expected_mse, rel=1e-5)
    assert terms["loss"].item() == pytest.approx(expected_focal + expected_mse, rel=1e-5)
    assert terms["cluster_accuracy"].item() == pytest.approx(2 / 4)  # ties go to cluster 0: right at step 1 only


def toy_dataset() -> list[Episode]:
    """'go left' turns left (right wheel faster), 'go right' the other way: only the text tells them apart."""
    rng = np.random.default_rng(0)
    episodes = []
    for k in range(8):
        left = k % 2 == 0
        wheels = np.array([-0.3, 0.9]) if left else np.array([0.9, -0.3])
        actions = wheels + rng.normal(0, 0.02, (10, 2))
        episodes.append(
            Episode("go left" if left else "go right", rng.uniform(0, 600, 2), rng.uniform(0, 100, (10, 5)), actions)
        )
    return episodes


def test_optimizer_steps_lower_the_loss_and_learn_to_read_the_description(tokenizer):
    data = toy_dataset()
    trainer = DTTrainer(model(TINY, tokenizer), tokenizer, dt_clusters(), data, data, seed=0)
    before = trainer.evaluate()
    for iteration in range(1, 121):
        metrics = trainer.train_iteration(iteration)
    after = trainer.evaluate()
    assert metrics["optimizer_steps"] == 120 and metrics["epoch"] == 60  # 8 episodes in batches of 4
    assert after["val_loss"] < 0.1 * before["val_loss"]
    assert after["val_cluster_accuracy"] > 0.9  # half of it needs the text: the wheels swap with it


def test_training_resumed_from_a_checkpoint_ends_as_an_uninterrupted_one(tokenizer, tmp_path):
    settings = DTSettings(**{**TINY.__dict__, "dropout": 0.1, "batch_size": 3})  # dropout: torch's RNG matters
    data = toy_dataset()

    def trainer() -> DTTrainer:
        return DTTrainer(model(settings, tokenizer), tokenizer, dt_clusters(), data, data[:2], seed=3)

    straight = train_dt(tmp_path / "straight", trainer(), iterations=5, checkpoint_every=2)
    train_dt(tmp_path / "resumed", trainer(), iterations=3, checkpoint_every=2)
    (tmp_path / "resumed" / "checkpoints" / "iter_000003").rename(tmp_path / "gone")  # killed after iteration 3
    resumed = train_dt(tmp_path / "resumed", trainer(), iterations=5, checkpoint_every=2)

    def lines(folder):
        return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]

    assert lines(resumed) == lines(straight)
    assert [r["iteration"] for r in lines(straight) if r["kind"] == "train"] == [1, 2, 3, 4, 5]
    first, second = load_policy(straight), load_policy(resumed)
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    with pytest.raises(Exception, match="another config"):
        other = DTSettings(**{**settings.__dict__, "learning_rate": 0.5})
        train_dt(tmp_path / "resumed", DTTrainer(model(other, tokenizer), tokenizer, dt_clusters(), data, [], 0), 6, 2)


def test_a_saved_policy_loads_with_the_same_outputs(tokenizer, tmp_path):
    dt = model(TINY, tokenizer, seed=5)
    save_policy(tmp_path, dt)
    batch = collate([episode(TEXTS[1], 5, 0)], tokenizer, dt_clusters(), TINY)
    torch.testing.assert_close(load_policy(tmp_path)(batch), dt(batch), rtol=0, atol=0)
    assert load_policy(tmp_path).settings == TINY
    assert all(path.stat().st_mode & 0o777 == 0o644 for path in tmp_path.iterdir())  # readable by the team


# ---------------------------------------------------------------------- deployment
def test_cluster_choice_samples_from_the_softmax_or_takes_the_argmax():
    logits = torch.tensor([[[0.0, 5.0, 0.0, 0.0], [0.0, 0.0, 0.0, -100.0]]])
    assert choose_clusters(logits, "argmax", torch.Generator()).tolist() == [[1, 0]]
    draws = torch.stack([choose_clusters(logits, "sample", torch.Generator().manual_seed(s)) for s in range(200)])
    assert (draws[:, 0, 1] == 3).sum() == 0 and 1 < (draws[:, 0, 1] == 2).sum() < 100
    with pytest.raises(ValueError, match="strategy"):
        choose_clusters(logits, "nucleus", torch.Generator())


def test_deploying_drives_the_robot_with_the_predicted_actions(tokenizer, data_dir):
    dt = model(TINY, tokenizer)
    with torch.no_grad():  # every step: both wheels' top cluster (0.9), no offset; x 4 -> 3.6 units straight ahead
        for head in dt.cluster_heads:
            head[-1].bias.copy_(torch.tensor([0.0, 0.0, 0.0, 30.0]))
        dt.offset_head[-1].weight.zero_()
        dt.offset_head[-1].bias.zero_()
    result = deploy(
        dt, tokenizer, "go right", (100.0, 400.0), trials=2, horizon=6, seed=0, action_scale=4.0, data_dir=data_dir
    )
    step = 3.6 * math.cos(math.pi / 4)  # the start faces 45 degrees (south-east, y down)
    np.testing.assert_allclose(result.trajectory, [[60 + step * t, 450 + step * t] for t in range(1, 7)], atol=1e-3)
    assert result.bd == pytest.approx(tuple(result.trajectory[-1]), abs=1e-4)
    assert result.bd_error == pytest.approx(math.dist(result.bd, (100.0, 400.0)), rel=1e-6)
    assert len(result.trial_errors) == 2 and result.bd_error == min(result.trial_errors)
    assert [entry["timestep"] for entry in result.annotation] == [0, 5]
    assert result.annotation[-1]["pos"] == pytest.approx([result.bd[0] / 3, 200 - result.bd[1] / 3], abs=1e-3)
    summary = result.to_json()
    assert json.loads(json.dumps(summary))["bd_error_mean"] == pytest.approx(result.bd_error)


def test_an_untrained_dt_deploys_reproducibly_for_a_seed(tokenizer, data_dir):
    dt = model(TINY, tokenizer, seed=1)
    first = deploy(dt, tokenizer, TEXTS[0], (300.0, 300.0), trials=3, horizon=5, seed=7, data_dir=data_dir)
    again = deploy(dt, tokenizer, TEXTS[0], (300.0, 300.0), trials=3, horizon=5, seed=7, data_dir=data_dir)
    assert first.trajectory.shape == (5, 2) and first.trial_errors == again.trial_errors
    np.testing.assert_array_equal(first.trajectory, again.trajectory)
    with pytest.raises(ValueError, match="max_steps"):
        deploy(dt, tokenizer, TEXTS[0], (300.0, 300.0), horizon=TINY.max_steps + 1)
