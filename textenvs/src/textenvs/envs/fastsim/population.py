"""Evaluating a population of MLP policies in one batched loop (what novelty search needs per generation)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from textenvs.envs.fastsim.layouts import Layout
from textenvs.envs.fastsim.simulator import RobotBatch, load_world

_ACTIVATIONS = {"tanh": np.tanh, "identity": lambda x: x, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x))}


@dataclass(frozen=True)
class MLPPopulation:
    """``P`` fully connected policies of one shape: ``weights[k]`` float32[P, out_k, in_k] and
    ``biases[k]`` float32[P, out_k]; hidden layers use ``hidden_activation``, the output layer
    ``output_activation`` (then times ``output_scale``)."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    hidden_activation: str = "tanh"
    output_activation: str = "identity"
    output_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in (self.hidden_activation, self.output_activation):
            if name not in _ACTIVATIONS:
                raise ValueError(f"activation {name!r} is not one of {', '.join(map(repr, _ACTIVATIONS))}")

    @classmethod
    def from_genomes(cls, genomes: np.ndarray, layer_sizes: Sequence[int], **kwargs: object) -> MLPPopulation:
        """Unflatten genomes [P, G] laid out as the paper's ``SmallFC_FW.get_flattened_weights``: per
        layer, the weight matrix (out x in, row-major) then the bias."""
        genomes = np.asarray(genomes, np.float32)
        shapes = list(zip(layer_sizes[1:], layer_sizes[:-1], strict=True))
        expected = sum(o * i + o for o, i in shapes)
        if genomes.ndim != 2 or genomes.shape[1] != expected:
            raise ValueError(
                f"genomes of shape {genomes.shape} do not fit layer sizes {list(layer_sizes)}: "
                f"expected [population, {expected}]"
            )
        weights, biases, start = [], [], 0
        for out_dim, in_dim in shapes:
            weights.append(genomes[:, start : start + out_dim * in_dim].reshape(-1, out_dim, in_dim))
            start += out_dim * in_dim
            biases.append(genomes[:, start : start + out_dim])
            start += out_dim
        return cls(tuple(weights), tuple(biases), **kwargs)  # type: ignore[arg-type]

    @property
    def size(self) -> int:
        return self.weights[0].shape[0]

    def act(self, observations: np.ndarray) -> np.ndarray:
        """Actions [P, out] for observations [P, in]."""
        hidden = _ACTIVATIONS[self.hidden_activation]
        values = np.asarray(observations, np.float32)
        for k, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            if k:
                values = hidden(values)
            values = np.einsum("poi,pi->po", weight, values) + bias
        return _ACTIVATIONS[self.output_activation](values) * np.float32(self.output_scale)


@dataclass(frozen=True)
class PopulationResult:
    """Per policy: ``bd`` float[P, 2] (final x, y), ``fitness`` (summed reward), ``reached_goal``,
    ``task_solved`` (final distance < the paper's 42) and, when asked for, ``trajectories`` float[P, T, 2]."""

    bd: np.ndarray
    fitness: np.ndarray
    reached_goal: np.ndarray
    task_solved: np.ndarray
    trajectories: np.ndarray | None


def evaluate_population(
    policies: MLPPopulation,
    layout: str | Layout = "hardmaze",
    horizon: int = 400,
    record_trajectories: bool = False,
    data_dir: str | os.PathLike[str] | None = None,
) -> PopulationResult:
    """Run every policy for ``horizon`` steps from the layout's start, all robots in one batch.

    Each step feeds every robot's sensors (as ``FastsimNavEnv`` observes them) to its policy and applies
    the actions as the env does (rounded in the household layout, clipped to +-4), so each policy's
    result equals a single-env rollout of it.
    """
    if horizon < 1:
        raise ValueError(f"horizon must be a positive number of steps, got {horizon!r}")
    world = load_world(layout, data_dir)
    goal = np.asarray(world.layout.goal, np.float64)
    goal_radius = world.layout.goal_diameter / 2
    robots = RobotBatch(world, policies.size)
    robots.reset()
    fitness = np.zeros(policies.size)
    reached = np.zeros(policies.size, bool)
    trajectories = np.zeros((policies.size, horizon, 2)) if record_trajectories else None
    for t in range(horizon):
        robots.step(policies.act(robots.sensors))
        position = robots.state[:, :2].astype(np.float64)
        inside = np.hypot(*(position - goal).T) <= goal_radius
        fitness += inside
        reached |= inside
        if trajectories is not None:
            trajectories[:, t] = position
    final_distance = np.hypot(*(robots.state[:, :2].astype(np.float64) - goal).T)
    return PopulationResult(
        bd=robots.state[:, :2].astype(np.float64),
        fitness=fitness,
        reached_goal=reached,
        task_solved=final_distance < world.layout.solved_radius,
        trajectories=trajectories,
    )
