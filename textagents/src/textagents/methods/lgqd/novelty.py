"""Novelty search's operators as the original runs them: novelty from the nearest behaviour descriptors,
(mu + lambda) selection by novelty, DEAP's polynomial bounded mutation, and the archive's rules."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from deap import tools
from sklearn.neighbors import NearestNeighbors


def novelty(queries: np.ndarray, reference: np.ndarray, k: int) -> np.ndarray:
    """Each query's mean distance to its ``k`` nearest descriptors of ``reference`` with the first dropped:
    every query is itself in ``reference`` (the original queries a tree built over archive + population
    and drops the first column, the individual itself), so the mean is over ``k - 1`` others."""
    neighbours = NearestNeighbors(n_neighbors=min(k, len(reference))).fit(reference)
    distances, _ = neighbours.kneighbors(queries)
    return distances[:, 1:].mean(axis=1)


def select_most_novel(scores: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` highest scores, highest first (the original's ``selBest`` without its
    median threshold); ties keep the earlier index."""
    return np.argsort(-scores, kind="stable")[:count]


def mutate(genomes: np.ndarray, eta: float, low: float, high: float, indpb: float, rng: random.Random) -> np.ndarray:
    """A mutated copy of every genome [n, G] by DEAP's ``mutPolynomialBounded``. DEAP draws from the
    ``random`` module; ``rng``'s state is swapped in for the call (and the caller's put back), so the
    search's randomness is its own and resumes exactly."""
    saved = random.getstate()
    random.setstate(rng.getstate())
    try:
        mutated = [
            tools.mutPolynomialBounded(genome.tolist(), eta=eta, low=low, up=high, indpb=indpb)[0] for genome in genomes
        ]
        rng.setstate(random.getstate())
    finally:
        random.setstate(saved)
    return np.asarray(mutated, np.float64).reshape(genomes.shape)


def archive_additions(scores: Sequence[float], additions: int, threshold: float, rng: random.Random) -> list[int]:
    """Indices of the candidates that join the archive this generation: ``additions`` drawn at random
    without replacement (the original's ``growth_strategy="random"``), kept when their novelty exceeds
    ``threshold``."""
    drawn = rng.sample(range(len(scores)), additions)
    return [i for i in drawn if scores[i] > threshold]


def archive_survivors(size: int, maximum: int, rng: random.Random) -> list[int] | None:
    """Once the archive holds ``maximum`` or more, the indices it keeps: ``maximum`` of them drawn at random
    (the original's ``removal_strategy="random"``, which also reshuffles an archive of exactly
    ``maximum``); None below that."""
    return rng.sample(range(size), maximum) if size >= maximum else None
