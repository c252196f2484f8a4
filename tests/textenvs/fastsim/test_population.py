"""Batched population evaluation equals single-env rollouts, and the C++ where the policy is constant."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import textenvs  # noqa: F401  (registers the ids)
from tests.textenvs.fastsim.golden import GoldenTrace
from textenvs.envs.fastsim.captioner import annotate_trajectory
from textenvs.envs.fastsim.population import MLPPopulation, evaluate_population
from textenvs.envs.fastsim.simulator import load_world

LAYERS = (5, 10, 10, 2)
GENOME_SIZE = 5 * 10 + 10 + 10 * 10 + 10 + 10 * 2 + 2


def random_population(size: int, seed: int = 0) -> tuple[np.ndarray, MLPPopulation]:
    genomes = np.random.default_rng(seed).normal(0, 1, size=(size, GENOME_SIZE)).astype(np.float32)
    return genomes, MLPPopulation.from_genomes(genomes, LAYERS, output_activation="tanh", output_scale=4.0)


@pytest.mark.parametrize(
    ("env_id", "layout"), [("Fastsim-Text-HardMaze-v0", "hardmaze"), ("Fastsim-Text-Household-v0", "household")]
)
def test_population_results_equal_single_env_rollouts(env_id: str, layout: str):
    horizon = 150
    _genomes, population = random_population(4)
    result = evaluate_population(population, layout, horizon, record_trajectories=True)
    world = load_world(layout)
    for k in range(population.size):
        one = MLPPopulation(
            tuple(w[k : k + 1] for w in population.weights),
            tuple(b[k : k + 1] for b in population.biases),
            "tanh",
            "tanh",
            4.0,
        )
        env = gym.make(env_id, max_steps=horizon)
        obs, _info = env.reset(seed=0)
        for t in range(horizon):
            obs, _reward, _terminated, truncated, info = env.step(one.act(obs["sensors"][None])[0])
            assert result.trajectories[k, t].tolist() == info["robot_pos"][:2]
        assert truncated and result.bd[k].tolist() == info["bd"]
        assert annotate_trajectory(world, result.trajectories[k]) == info["trajectory_annotation"]
        assert result.fitness[k] == info["episode_metrics"]["fitness"]
        assert result.task_solved[k] == info["episode_metrics"]["task_solved"]


def test_a_constant_policy_reproduces_the_cpp_trace(golden_dir: Path):
    golden = GoldenTrace(golden_dir, "maze_hard", "const_44")
    weights = (np.zeros((1, 2, 5), np.float32),)
    biases = (np.full((1, 2), 4.0, np.float32),)
    result = evaluate_population(MLPPopulation(weights, biases), "hardmaze", len(golden.actions), True)
    np.testing.assert_allclose(result.trajectories[0], golden.poses[1:, :2], atol=1e-4, rtol=0)


def test_genomes_are_unflattened_weight_then_bias_per_layer():
    genomes, population = random_population(2)
    first = genomes[1, : 5 * 10].reshape(10, 5)
    assert np.array_equal(population.weights[0][1], first)
    assert np.array_equal(population.biases[0][1], genomes[1, 50:60])
    assert np.array_equal(population.biases[-1][1], genomes[1, -2:])


def test_genomes_of_the_wrong_size_are_refused():
    with pytest.raises(ValueError, match=r"expected \[population, 192\]"):
        MLPPopulation.from_genomes(np.zeros((3, 100)), LAYERS)
    with pytest.raises(ValueError, match="activation 'relu6'"):
        MLPPopulation.from_genomes(np.zeros((3, GENOME_SIZE)), LAYERS, hidden_activation="relu6")
