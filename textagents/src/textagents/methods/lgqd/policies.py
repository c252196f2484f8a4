"""The archive's policies: small MLPs as flat genomes (the original's ``SmallFC_FW`` layout), evaluated as a
population by the batched fastsim env."""

from __future__ import annotations

import itertools
import random

import gymnasium as gym
import numpy as np

import textenvs  # noqa: F401  (registers the ids)
from textenvs.envs.fastsim.population import MLPPopulation, PopulationResult, evaluate_population

#: fastsim's policy input (three lasers, two bumpers) and output (two wheel speeds).
INPUTS, OUTPUTS = 5, 2
#: The output scale of a ``tanh`` output layer: the wheels' speed limit.
MAX_SPEED = 4.0


def layer_sizes(hidden_size: int, hidden_layers: int) -> tuple[int, ...]:
    """``(5, hidden, ..., hidden, 2)``: the paper's ``(5, 10, 10, 10, 2)`` by default."""
    return (INPUTS, *(hidden_size,) * hidden_layers, OUTPUTS)


def genome_size(sizes: tuple[int, ...]) -> int:
    """Weights and biases of every layer (302 for the paper's network)."""
    return sum(o * i + o for i, o in itertools.pairwise(sizes))


def initial_genomes(sizes: tuple[int, ...], count: int, rng: random.Random) -> list[list[float]]:
    """``count`` genomes initialised as torch's ``nn.Linear`` does (the original's agents are torch
    modules): every weight and bias of a layer uniform in +-1/sqrt(its inputs)."""
    genomes = []
    for _ in range(count):
        genome: list[float] = []
        for fan_in, fan_out in itertools.pairwise(sizes):
            bound = fan_in**-0.5
            genome += [rng.uniform(-bound, bound) for _ in range(fan_out * fan_in + fan_out)]
        genomes.append(genome)
    return genomes


def population(genomes: np.ndarray, sizes: tuple[int, ...], output_activation: str) -> MLPPopulation:
    """The policies of ``genomes`` [P, G]: tanh hidden layers; a ``tanh`` output is scaled to the wheels'
    +-4, an ``identity`` one is clipped there by the env."""
    scale = MAX_SPEED if output_activation == "tanh" else 1.0
    return MLPPopulation.from_genomes(
        genomes, sizes, hidden_activation="tanh", output_activation=output_activation, output_scale=scale
    )


def layout_of(env_id: str) -> str:
    """The fastsim layout a registered id runs (``Fastsim-Text-Household-v0`` -> ``household``)."""
    try:
        spec = gym.spec(env_id)
    except gym.error.Error as error:
        raise ValueError(f"env_id {env_id!r} is not a registered env: {error}") from error
    if "layout" not in spec.kwargs:
        raise ValueError(f"env_id {env_id!r} is not a fastsim env (it has no layout)")
    return str(spec.kwargs["layout"])


def evaluate(
    genomes: np.ndarray, sizes: tuple[int, ...], output_activation: str, env_id: str, horizon: int
) -> PopulationResult:
    """Every genome's episode from the start, all in one call of the batched env (``bd``: the final x, y
    in real units)."""
    return evaluate_population(population(genomes, sizes, output_activation), layout_of(env_id), horizon)
