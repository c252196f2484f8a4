"""The novelty search that builds the archive (the original's ``NoveltySearch`` with its paper settings),
as a state that steps one generation at a time and saves to arrays + JSON for an exact resume."""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.novelty import (
    archive_additions,
    archive_survivors,
    mutate,
    novelty,
    select_most_novel,
)
from textagents.methods.lgqd.policies import evaluate, genome_size, initial_genomes, layer_sizes


@dataclass(frozen=True)
class Individuals:
    """Individuals as parallel arrays: ``genomes`` float64[n, G], ``bd`` float64[n, 2] (final x, y, real
    units), ``novelty`` float64[n] (as last computed), ``ids`` int64[n] (unique over the search),
    ``parents`` int64[n] (the id mutated into it; -1 for the first population's random ancestors),
    ``born`` int64[n] (its generation) and ``added`` int64[n] (when it joined the archive; -1 outside it)."""

    genomes: np.ndarray
    bd: np.ndarray
    novelty: np.ndarray
    ids: np.ndarray
    parents: np.ndarray
    born: np.ndarray
    added: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, rows: np.ndarray | list[int]) -> Individuals:
        rows = np.asarray(rows, np.int64)
        return Individuals(*(getattr(self, f.name)[rows] for f in fields(self)))

    def joined(self, other: Individuals) -> Individuals:
        return Individuals(*(np.concatenate([getattr(self, f.name), getattr(other, f.name)]) for f in fields(self)))

    def replace(self, **arrays: np.ndarray) -> Individuals:
        return Individuals(**{f.name: arrays.get(f.name, getattr(self, f.name)) for f in fields(self)})

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The fields as ``{prefix + name: array}`` (for npz / safetensors files)."""
        return {f"{prefix}{f.name}": getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_arrays(cls, arrays: Any, prefix: str) -> Individuals:
        return cls(**{f.name: np.asarray(arrays[f"{prefix}{f.name}"]) for f in fields(cls)})

    @classmethod
    def empty(cls, genes: int) -> Individuals:
        ints = np.zeros(0, np.int64)
        return cls(np.zeros((0, genes)), np.zeros((0, 2)), np.zeros(0), ints, ints, ints, ints)


class NoveltySearch:
    """Novelty search as the original's ``generate_paper_dataset`` runs it.

    The first population: ``population`` random networks mutated (``offspring`` mutants drawn, ``population``
    kept). Each generation: ``offspring`` parents drawn with replacement and mutated; the children
    evaluated (one batched env call; parents keep their results, the env is deterministic); novelty of
    parents + children against archive + parents + children; the ``population`` most novel become the
    parents; then the archive rules over the new parents + the children (``novelty.archive_additions``,
    ``novelty.archive_survivors``). One ``random.Random`` drives every draw, DEAP's included.
    """

    def __init__(self, config: LGQDConfig):
        self.config = config
        self.sizes = layer_sizes(config.hidden_size, config.hidden_layers)
        self.rng = random.Random(config.seed)
        self.generation = 0
        self.next_id = 0
        self.parents = Individuals.empty(genome_size(self.sizes))
        self.archive = Individuals.empty(genome_size(self.sizes))

    # ------------------------------------------------------------------ the search
    def start(self) -> None:
        """Make and evaluate the first population (generation 0)."""
        config = self.config
        ancestors = np.asarray(initial_genomes(self.sizes, config.population, self.rng))
        first, _ = self._children(ancestors, np.full(config.population, -1, np.int64), keep=config.population)
        self.parents = first.replace(novelty=novelty(first.bd, first.bd, config.novelty_k))

    def step(self) -> dict[str, float]:
        """One generation; its figures (archive size, additions, the pool's novelty, children at the goal)."""
        config = self.config
        self.generation += 1
        children, reached = self._children(self.parents.genomes, self.parents.ids, keep=config.offspring)
        pool = self.parents.joined(children)
        scores = novelty(pool.bd, np.concatenate([self.archive.bd, pool.bd]), config.novelty_k)
        pool = pool.replace(novelty=scores)
        children = pool.take(np.arange(len(self.parents), len(pool)))
        self.parents = pool.take(select_most_novel(scores, config.population))
        candidates = self.parents.joined(children)
        chosen = archive_additions(candidates.novelty, config.archive_additions, config.archive_threshold, self.rng)
        joining = candidates.take(chosen).replace(added=np.full(len(chosen), self.generation, np.int64))
        self.archive = self.archive.joined(joining)
        kept = archive_survivors(len(self.archive), config.archive_max, self.rng)
        if kept is not None:
            self.archive = self.archive.take(kept)
        return {
            "archive_size": len(self.archive),
            "added": len(chosen),
            "novelty_mean": float(scores.mean()),
            "novelty_max": float(scores.max()),
            "children_reached_goal": reached,
        }

    def _children(self, genomes: np.ndarray, ids: np.ndarray, keep: int) -> tuple[Individuals, int]:
        """``offspring`` mutants of parents drawn with replacement, ``keep`` of them (in a random order),
        evaluated together; and how many of them reached the goal."""
        config = self.config
        drawn = self.rng.choices(range(len(genomes)), k=config.offspring)
        mutated = mutate(
            genomes[drawn], config.mutation_eta, config.gene_low, config.gene_high, config.mutation_indpb, self.rng
        )
        kept = self.rng.sample(range(config.offspring), k=keep)
        genomes = mutated[kept]
        result = evaluate(genomes, self.sizes, config.output_activation, config.env_id, config.horizon)
        new_ids = np.arange(self.next_id, self.next_id + keep, dtype=np.int64)
        self.next_id += keep
        children = Individuals(
            genomes=genomes,
            bd=result.bd,
            novelty=np.zeros(keep),
            ids=new_ids,
            parents=np.asarray(ids, np.int64)[np.asarray(drawn)[kept]],
            born=np.full(keep, self.generation, np.int64),
            added=np.full(keep, -1, np.int64),
        )
        return children, int(result.reached_goal.sum())

    # ------------------------------------------------------------------ saving and restoring
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything a resumed search needs: JSON (counters, the RNG state) and arrays."""
        version, internal, gauss = self.rng.getstate()
        state = {"generation": self.generation, "next_id": self.next_id, "rng": [version, list(internal), gauss]}
        return state, {**self.parents.arrays("parents_"), **self.archive.arrays("archive_")}

    def restore(self, state: dict[str, Any], arrays: Any) -> None:
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self.generation = int(state["generation"])
        self.next_id = int(state["next_id"])
        self.parents = Individuals.from_arrays(arrays, "parents_")
        self.archive = Individuals.from_arrays(arrays, "archive_")
