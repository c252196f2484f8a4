"""Throughput of the fastsim family: the batched stepper, population evaluation and one Gymnasium env.

Run: ``python benchmarks/perf/perf_fastsim.py`` (needs the maps: ``TEXTENVS_DATA_DIR`` or
``textenvs download fastsim``). Writes ``benchmarks/results/perf_fastsim.json``.

The original (C++ libfastsim) cannot be installed here, so the anchor is DESIGN.md's measurement of it on
one core of these machines: ~500,000 robot-steps/s (one robot, 3 lasers). Each figure is the best of
``REPEATS`` timed runs, because the machine is shared: the load average is recorded with the results,
and the batched stepper is also reported per CPU-second of this process.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
from common import rate, write_result

import textenvs
from textenvs.envs.fastsim import kernels
from textenvs.envs.fastsim.population import MLPPopulation, evaluate_population
from textenvs.envs.fastsim.simulator import RobotBatch, load_world

CPP_ANCHOR_ROBOT_STEPS_PER_S = 500_000
BATCH_SIZES = (1, 64, 1024)
REPEATS = 3
SECONDS = 1.0


def best_rate(step, min_calls: int = 100) -> float:
    return max(rate(step, min_seconds=SECONDS, min_calls=min_calls) for _ in range(REPEATS))


def cpu_rate(step, calls: int) -> float:
    """Calls per CPU-second of this process: less sensitive than wall time to other processes' load."""
    start = time.process_time()
    for _ in range(calls):
        step()
    return calls / (time.process_time() - start)


def batched_stepper(layout: str) -> dict[str, float]:
    """Robot-steps/s of ``RobotBatch.step`` (physics + lasers + bumpers, no text) per batch size."""
    world = load_world(layout)
    rng = np.random.default_rng(0)
    results = {}
    for n in BATCH_SIZES:
        robots = RobotBatch(world, n)
        robots.reset()
        actions = rng.uniform(-4, 4, size=(n, 2))
        robots.step(actions)  # compile / load the kernels before timing
        step = lambda robots=robots, actions=actions: robots.step(actions)  # noqa: E731
        results[f"N={n}"] = n * best_rate(step)
        results[f"N={n} per CPU-second"] = n * cpu_rate(step, max(200, 200_000 // n))
    return results


def population_evaluation(layout: str, size: int = 1024, horizon: int = 400) -> float:
    """Robot-steps/s of ``evaluate_population`` (MLPs 5-10-10-2 acting every step, batched)."""
    genomes = np.random.default_rng(0).normal(size=(size, 192)).astype(np.float32)
    population = MLPPopulation.from_genomes(genomes, (5, 10, 10, 2), output_activation="tanh", output_scale=4.0)
    evaluate_population(population, layout, 2)
    return size * horizon * best_rate(lambda: evaluate_population(population, layout, horizon), min_calls=1)


def single_env(env_id: str, obs_mode: str) -> tuple[float, float]:
    """Steps/s of one ``gym.make`` env (checker wrappers included), driving in circles: wall-clock and
    per CPU-second."""
    env = gym.make(env_id, obs_mode=obs_mode, max_steps=10**9)
    env.reset(seed=0)
    action = np.array([3.0, 2.5], np.float32)
    step = lambda: env.step(action)  # noqa: E731
    return best_rate(step), max(cpu_rate(step, 20_000 if obs_mode == "text" else 2_000) for _ in range(REPEATS))


def vector_env(env_id: str, n: int = 64) -> float:
    """Robot-steps/s of the native vector env (``textenvs.make_vec``) with text observations."""
    vec = textenvs.make_vec(env_id, n, max_steps=10**9)
    vec.reset(seed=0)
    actions = np.tile([3.0, 2.5], (n, 1))
    return n * best_rate(lambda: vec.step(actions))


def main() -> None:
    result: dict = {
        "numba": kernels.HAVE_NUMBA,
        "load_average_at_start": list(os.getloadavg()),
        "cpp_anchor_robot_steps_per_s": CPP_ANCHOR_ROBOT_STEPS_PER_S,
        "cpp_anchor_source": "DESIGN.md (libfastsim, one robot, 3 lasers, one core of these machines); "
        "libfastsim itself cannot be installed here",
    }
    stepper = batched_stepper("hardmaze")
    result["batched_stepper_robot_steps_per_s"] = stepper
    result["batched_stepper_vs_cpp"] = {k: v / CPP_ANCHOR_ROBOT_STEPS_PER_S for k, v in stepper.items()}
    population = population_evaluation("hardmaze")
    result["population_1024_mlp_robot_steps_per_s"] = population
    result["population_vs_cpp"] = population / CPP_ANCHOR_ROBOT_STEPS_PER_S
    singles = {}
    for name, env_id, mode in (
        ("text", "Fastsim-Text-HardMaze-v0", "text"),
        ("pixels", "Fastsim-Text-HardMaze-v0", "pixels"),
        ("household text", "Fastsim-Text-Household-v0", "text"),
    ):
        singles[name], singles[f"{name} per CPU-second"] = single_env(env_id, mode)
    result["single_env_steps_per_s"] = singles
    result["single_env_vs_cpp"] = {k: v / CPP_ANCHOR_ROBOT_STEPS_PER_S for k, v in singles.items()}
    result["vector_env_64_text_robot_steps_per_s"] = vector_env("Fastsim-Text-HardMaze-v0")
    result["load_average_at_end"] = list(os.getloadavg())
    path = write_result("perf_fastsim", result)
    for key, value in result.items():
        print(f"{key}: {value}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
