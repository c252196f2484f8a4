"""Cost of language-grounded QD's archive stage at the paper's settings (population 50 + 50 offspring,
400 steps, 302-parameter MLPs), measured over a few generations and extrapolated to the paper's 1000.

Run: ``python benchmarks/perf/perf_lgqd_archive.py [GENERATIONS]`` (default 20; needs the fastsim maps:
``TEXTENVS_DATA_DIR`` or ``textenvs download fastsim``). Writes ``benchmarks/results/perf_lgqd_archive.json``.

Measured: whole generations of ``NoveltySearch`` (wall and CPU seconds); its parts — the batched env
evaluating 50 children in one call, DEAP's mutation of 50 genomes, novelty + selection against an empty
archive and against the 6,000 entries the paper's archive reaches by generation 1000 (6 additions a
generation at most); and, for scale, the same 50 children evaluated one at a time in the single Gymnasium
env (what one of the original's scoop workers does per agent, with our env's text on top). The 1000
generation figure is an extrapolation: 1000 x (evaluation + mutation + the mean of the two novelty costs,
novelty's cost growing with the archive), not a run of 1000 generations.
"""

from __future__ import annotations

import dataclasses
import os
import random
import sys
import time

import gymnasium as gym
import numpy as np
from common import write_result

import textenvs  # noqa: F401  (registers the ids)
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.novelty import mutate, novelty, select_most_novel
from textagents.methods.lgqd.policies import evaluate, layer_sizes, population
from textagents.methods.lgqd.search import NoveltySearch

REPEATS = 5
PAPER_GENERATIONS = 1000
ARCHIVE_AT_THE_END = 6000


def best_seconds(call, repeats: int = REPEATS) -> float:
    """The best wall time of ``repeats`` calls (the machine is shared: the best is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def search_generations(config: LGQDConfig, generations: int) -> dict[str, float]:
    search = NoveltySearch(config)
    search.start()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(generations):
        search.step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "generations_run": generations,
        "archive_after": len(search.archive),
        "seconds_per_generation": wall / generations,
        "cpu_seconds_per_generation": cpu / generations,
    }


def parts(config: LGQDConfig, genomes: np.ndarray) -> dict[str, float]:
    sizes = layer_sizes(config.hidden_size, config.hidden_layers)
    rng = random.Random(0)
    bd_pool = np.random.default_rng(0).uniform(0, 600, (config.population + config.offspring, 2))
    archive = np.random.default_rng(1).uniform(0, 600, (ARCHIVE_AT_THE_END, 2))

    def novelty_and_selection(reference: np.ndarray) -> None:
        scores = novelty(bd_pool, np.concatenate([reference, bd_pool]), config.novelty_k)
        select_most_novel(scores, config.population)

    return {
        "batched_env_50_children_s": best_seconds(
            lambda: evaluate(genomes, sizes, config.output_activation, config.env_id, config.horizon)
        ),
        "mutation_50_genomes_s": best_seconds(
            lambda: mutate(genomes, config.mutation_eta, config.gene_low, config.gene_high, config.mutation_indpb, rng)
        ),
        "novelty_selection_empty_archive_s": best_seconds(lambda: novelty_and_selection(np.zeros((0, 2)))),
        f"novelty_selection_archive_{ARCHIVE_AT_THE_END}_s": best_seconds(lambda: novelty_and_selection(archive)),
    }


def single_env_children(config: LGQDConfig, genomes: np.ndarray, count: int = 5) -> float:
    """Seconds to evaluate 50 children one at a time in the Gymnasium env (``count`` timed, scaled to 50)."""
    sizes = layer_sizes(config.hidden_size, config.hidden_layers)
    env = gym.make(config.env_id, max_steps=config.horizon)
    start = time.perf_counter()
    for genome in genomes[:count]:
        policy = population(genome[None], sizes, config.output_activation)
        observation, _ = env.reset(seed=0)
        for _ in range(config.horizon):
            observation, *_ = env.step(policy.act(observation["sensors"][None])[0])
    env.close()
    return (time.perf_counter() - start) / count * config.offspring


def main(generations: int) -> None:
    config = LGQDConfig()
    search = NoveltySearch(config)
    search.start()  # also compiles / loads the env's kernels
    genomes = search.parents.genomes
    measured = parts(config, genomes)
    whole = search_generations(dataclasses.replace(config, generations=generations), generations)
    novelty_mean = (
        measured["novelty_selection_empty_archive_s"] + measured[f"novelty_selection_archive_{ARCHIVE_AT_THE_END}_s"]
    ) / 2
    per_generation = measured["batched_env_50_children_s"] + measured["mutation_50_genomes_s"] + novelty_mean
    single = single_env_children(config, genomes)
    result = {
        "settings": {
            "population": config.population,
            "offspring": config.offspring,
            "horizon": config.horizon,
            "genes": int(genomes.shape[1]),
            "env_id": config.env_id,
        },
        "measured_generations": whole,
        "parts_best_of_5": measured,
        "extrapolated_1000_generations_s": PAPER_GENERATIONS * per_generation,
        "extrapolated_1000_generations_from_whole_generations_s": PAPER_GENERATIONS * whole["seconds_per_generation"],
        "single_env_50_children_one_by_one_s": single,
        "single_env_1000_generations_s": PAPER_GENERATIONS * single,
        "note": (
            "extrapolated from the generations run and the parts measured, not a 1000-generation run; "
            "load average during the run is recorded: figures on this shared machine are load-sensitive"
        ),
        "load_average": list(os.getloadavg()),
    }
    print(write_result("perf_lgqd_archive", result))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
