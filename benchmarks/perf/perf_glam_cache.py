"""GLAM's score cache: a ``cpu.yaml`` run's pieces with ``score_cache`` off and on, back to back in one process
with the same seed: the zero-shot evaluation (training level and test level), one training iteration (the
rollout and the PPO update timed apart) and the training level's evaluation after it; the cache's hit rate;
and, from these pieces, a whole ``cpu.yaml`` run's projected wall time, evaluation fraction and training
frames per wall-clock hour (its iterations and evaluations counted from the config's schedule).

The projection times every evaluation as the measured one; a trained policy's episodes are shorter than
the untrained one's (fewer calls) and repeat more (more hits), so it is an estimate, not a measured run.

Needs `textagents download smollm2`. Writes ``benchmarks/results/perf_glam_cache.json``.
Run: ``python benchmarks/perf/perf_glam_cache.py [--threads 1] [--iterations 1]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import write_result

from textagents.methods.core.config import load_config
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.episodes import evaluate_policy
from textagents.methods.glam.llm_learner import LLMLearner

CPU_YAML = Path(__file__).resolve().parents[1] / "methods" / "glam" / "cpu.yaml"


def timed(call: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = call(*args, **kwargs)
    return result, time.perf_counter() - start


def evaluations(config: GlamConfig) -> tuple[int, int]:
    """How many training-level and test-level evaluations a run of ``config`` makes (``GlamMethod``'s
    schedule: the untrained agent, every ``eval_every`` iterations, the last iteration; the test levels at
    every ``test_levels_every``-th of them, the untrained agent and the last)."""
    points = [i for i in range(1, config.iterations + 1) if config.eval_every and i % config.eval_every == 0]
    points = sorted({*points, config.iterations})
    test = [i for i in points if i == config.iterations or (i // config.eval_every) % config.test_levels_every == 0]
    return 1 + len(points), 1 + len(test)


class Variant:
    """One learner of the config (the cache on or off) and the seconds its pieces took."""

    def __init__(self, config: GlamConfig):
        self.config = config
        self.learner = LLMLearner(config, str(config.model))
        self.seconds: dict[str, float] = {"update": 0.0}
        self.results: dict[str, Any] = {}
        update = self.learner.caller.update

        def timed_update(*args: Any, **kwargs: Any) -> Any:
            result, spent = timed(update, *args, **kwargs)
            self.seconds["update"] += spent
            return result

        self.learner.caller.update = timed_update  # the rollout's time is the iteration's less the update's

    def piece(self, name: str, call: Any, **kwargs: Any) -> None:
        self.results[name], self.seconds[name] = timed(call, **kwargs)

    def test_level(self) -> dict[str, float]:
        config = self.config
        (env_id,) = config.test_env_ids
        return evaluate_policy(
            self.learner.choose,
            env_id,
            config.test_eval_episodes or config.eval_episodes,
            config.envs,
            config.max_steps,
            config.seed,
            config.eval_greedy,
            config.prompt_observations,
        )

    def summary(self, iterations: int) -> dict[str, Any]:
        config, seconds = self.config, self.seconds
        stats = self.learner.caller.cache_stats()
        train_s = sum(seconds[f"iteration_{i}"] for i in range(1, iterations + 1))
        per_iteration = train_s / iterations
        train_evals, test_evals = evaluations(config)
        eval_train_s = (seconds["eval_train_level_zero_shot"] + seconds["eval_train_level_trained"]) / 2
        run_eval_s = train_evals * eval_train_s + test_evals * seconds["eval_test_level"]
        run_s = per_iteration * config.iterations + run_eval_s
        frames = config.envs * config.frames_per_env
        calls = stats["hits"] + stats["misses"]
        pieces = ("eval_train_level_zero_shot", "eval_test_level", "eval_train_level_trained")
        return {
            "iteration_s": per_iteration,
            "rollout_s": (train_s - seconds["update"]) / iterations,
            "update_s": seconds["update"] / iterations,
            **{f"{name}_s": seconds[name] for name in pieces},
            "cache_hits": stats["hits"],
            "cache_misses": stats["misses"],
            "cache_hit_rate": stats["hits"] / calls if calls else 0.0,
            "projected_run_s": run_s,
            "projected_eval_fraction": run_eval_s / run_s,
            "projected_training_frames_per_hour": frames * config.iterations / run_s * 3600,
            "training_iteration_frames_per_s": frames / per_iteration,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, default=CPU_YAML)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=1, help="training iterations timed per variant")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = load_config(GlamConfig, args.config)
    off, on = (Variant(dataclasses.replace(config, score_cache=cache)) for cache in (False, True))
    pieces: list[tuple[str, Any, dict[str, Any]]] = [
        ("eval_train_level_zero_shot", lambda v: v.learner.evaluate, {"test_levels": False}),
        ("eval_test_level", lambda v: v.test_level, {}),
    ]
    for i in range(1, args.iterations + 1):
        pieces.append((f"iteration_{i}", lambda v: v.learner.train_frames, {"iteration": i}))
    pieces.append(("eval_train_level_trained", lambda v: v.learner.evaluate, {"test_levels": False}))
    try:
        for name, call, kwargs in pieces:  # each piece off then on: both variants see the same load
            for variant in (off, on):
                variant.piece(name, call(variant), **kwargs)
            print(name, off.seconds[name], on.seconds[name], flush=True)
        rows = {"score_cache_false": off.summary(args.iterations), "score_cache_true": on.summary(args.iterations)}
    finally:
        off.learner.close()
        on.learner.close()
    cold, warm = rows["score_cache_false"], rows["score_cache_true"]
    result = {
        "config": str(args.config.relative_to(CPU_YAML.parents[2])),
        "model": config.model,
        "threads": args.threads,
        "iterations_timed": args.iterations,
        "run_iterations": config.iterations,
        "evaluations_per_run": dict(zip(("train_level", "test_level"), evaluations(config), strict=True)),
        **rows,
        "same_results": same_results(off.results, on.results),
        "results": on.results,
        "training_frames_per_hour_speedup": warm["projected_training_frames_per_hour"]
        / cold["projected_training_frames_per_hour"],
        "iteration_speedup": cold["iteration_s"] / warm["iteration_s"],
        "eval_train_level_speedup": cold["eval_train_level_zero_shot_s"] / warm["eval_train_level_zero_shot_s"],
        "eval_test_level_speedup": cold["eval_test_level_s"] / warm["eval_test_level_s"],
    }
    print(write_result("perf_glam_cache", result).read_text())


def same_results(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> bool:
    """The evaluations and each iteration's frames, episodes, returns and success exactly; the losses to
    1e-5 (with the cache, a pair computed in a smaller batch can differ in the last float bits)."""
    try:
        for piece in a:
            np.testing.assert_equal(a[piece].keys(), b[piece].keys())
            exact = [k for k in a[piece] if "loss" not in k and k not in ("entropy", "approx_kl", "grad_norm")]
            np.testing.assert_equal([a[piece][k] for k in exact], [b[piece][k] for k in exact])
            np.testing.assert_allclose(list(a[piece].values()), list(b[piece].values()), rtol=1e-5, atol=1e-7)
    except AssertionError:
        return False
    return True


if __name__ == "__main__":
    main()
