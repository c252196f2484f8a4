"""GLAM's prefix sharing: the ``cpu.yaml`` setting's scoring and PPO-update time per frame with
``prefix_sharing`` off and on, alternating in one process (two LLM callers built from the same seed), and a
``cpu.yaml`` run's projected minutes.

The frames are a rollout of the ``cpu.yaml`` level (``envs`` x ``frames_per_env``) with uniformly random
commands (a rollout with the LLM would cost more than the measurement). Each repetition scores the
rollout's frames as a rollout does (one call per frame for every env, the score cache on: the prompts not
yet computed under the current weights) and then updates on one minibatch of its rows (``minibatch_size``
rows, ``micro_batch`` per forward pass, one optimizer step, which empties the cache); off runs first, then
on, on the same inputs. The first repetition's outputs and update losses are compared (the two callers
have the same weights then).

The projection scales ``perf_glam_cache.json``'s measured ``cpu.yaml`` run with the score cache (its
rollout and evaluations: scoring; its update) by the measured ratios; an estimate, not a measured run.

Needs `textagents download smollm2`. Writes ``benchmarks/results/perf_glam_prefix.json``.
Run: ``python benchmarks/perf/perf_glam_prefix.py [--threads 1] [--repetitions 3]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import RESULTS_DIR, timed, write_result

from textagents.llm.lamorel import Caller
from textagents.methods.core.config import load_config
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.episodes import Episodes
from textagents.methods.glam.llm_learner import llm_spec, ppo_settings
from textagents.methods.glam.scoring import POLICY
from textagents.methods.glam.updater import VALUE, PPOUpdater

CPU_YAML = Path(__file__).resolve().parents[1] / "methods" / "glam" / "cpu.yaml"
VARIANTS = {"prefix_sharing_false": False, "prefix_sharing_true": True}


def random_rollout(config: GlamConfig) -> tuple[list[list[str]], list[list[list[str]]]]:
    """Per frame, the envs' prompts and commands, the envs played with uniformly random commands."""
    envs = Episodes(config.env_id, config.envs, config.max_steps, config.seed * 1_000_003, config.prompt_observations)
    rng = np.random.default_rng(config.seed)
    contexts, candidates = [], []
    for _ in range(config.frames_per_env):
        contexts.append([envs.context(i) for i in range(config.envs)])
        candidates.append([envs.candidates(i) for i in range(config.envs)])
        for i in range(config.envs):
            envs.step(i, int(rng.integers(len(candidates[-1][i]))))
    envs.close()
    return contexts, candidates


def update_inputs(rows: int, commands: int, seed: int) -> dict[str, Any]:
    """PPO's per-row inputs for ``rows`` rows (their values do not change the work done)."""
    rng = np.random.default_rng(seed)
    return {
        "actions": rng.integers(0, commands, rows).tolist(),
        "logprobs": np.log(np.full(rows, 1 / commands)).tolist(),
        "values": rng.normal(size=rows).tolist(),
        "advantages": rng.normal(size=rows).tolist(),
        "returns": rng.normal(size=rows).tolist(),
    }


def score_rollout(caller: Caller, frames: list[list[str]], candidates: list[list[list[str]]]) -> list[dict]:
    """The policy's and value's outputs for every env at every frame, one call per frame."""
    outputs = []
    for contexts, options in zip(frames, candidates, strict=True):
        outputs += caller.custom_module_fns([POLICY, VALUE], contexts, options)
    return outputs


def projection(cached_run: dict[str, Any], config: GlamConfig, scoring_ratio: float, update_ratio: float) -> dict:
    """``perf_glam_cache.json``'s projected ``cpu.yaml`` run (score cache on) with its scoring (rollouts,
    evaluations) ``scoring_ratio`` times and its updates ``update_ratio`` times faster."""
    update_s = cached_run["update_s"] * config.iterations
    scoring_s = cached_run["projected_run_s"] - update_s
    faster_s = scoring_s / scoring_ratio + update_s / update_ratio
    return {
        "projected_run_min_prefix_sharing_false": cached_run["projected_run_s"] / 60,
        "projected_run_min_prefix_sharing_true": faster_s / 60,
        "projected_update_fraction_prefix_sharing_false": update_s / cached_run["projected_run_s"],
        "projected_run_speedup": cached_run["projected_run_s"] / faster_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, default=CPU_YAML)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_at_start = os.getloadavg()
    config = load_config(GlamConfig, args.config)
    frames, candidates = random_rollout(config)
    rows = [
        (c, tuple(o))
        for frame, options in zip(frames, candidates, strict=True)
        for c, o in zip(frame, options, strict=True)
    ]
    order = np.random.default_rng(config.seed).permutation(len(rows))
    minibatches = [order[i : i + config.minibatch_size] for i in range(0, len(order), config.minibatch_size)]
    callers = {
        name: Caller(
            llm_spec(dataclasses.replace(config, prefix_sharing=on), str(config.model)),
            PPOUpdater(ppo_settings(config), config.micro_batch),
        )
        for name, on in VARIANTS.items()
    }
    pieces = [f"{piece}_{clock}" for piece in ("scoring", "update") for clock in ("cpu", "wall")]
    seconds: dict[str, dict[str, list[float]]] = {name: {piece: [] for piece in pieces} for name in VARIANTS}
    first: dict[str, Any] = {}
    try:
        for repetition in range(args.repetitions):
            batch = minibatches[repetition % len(minibatches)]
            inputs = update_inputs(len(batch), len(candidates[0][0]), repetition)
            for name, caller in callers.items():  # off, then on: both see the same load
                outputs, scoring_s = timed(score_rollout, caller, frames, candidates)
                (losses,), update_s = timed(
                    caller.update,
                    [rows[i][0] for i in batch],
                    [list(rows[i][1]) for i in batch],
                    minibatches=1,
                    seed=repetition,
                    **inputs,
                )
                for clock in ("cpu", "wall"):
                    seconds[name][f"scoring_{clock}"].append(scoring_s[clock] / len(rows))
                    seconds[name][f"update_{clock}"].append(update_s[clock] / len(batch))
                first.setdefault(name, {"outputs": outputs, "losses": losses})
                print(repetition, name, f"scoring {scoring_s}, update {update_s}", flush=True)
    finally:
        for caller in callers.values():
            caller.close()
    off, on = (seconds[name] for name in VARIANTS)
    ratios = {piece: float(np.median(off[piece]) / np.median(on[piece])) for piece in pieces}
    scoring_ratio, update_ratio = ratios["scoring_cpu"], ratios["update_cpu"]
    cached_run = json.loads((RESULTS_DIR / "perf_glam_cache.json").read_text())["score_cache_true"]
    distinct = [len({rows[i] for i in minibatches[r % len(minibatches)]}) for r in range(args.repetitions)]
    rollout = {"frames": len(rows), "distinct_prompts": len(set(rows))}
    result = {
        "config": str(args.config.relative_to(CPU_YAML.parents[2])),
        "model": config.model,
        "threads": args.threads,
        "repetitions": args.repetitions,
        "load_average_at_start": [round(x, 2) for x in load_at_start],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "rollout": rollout,
        "rows_per_update": config.minibatch_size,
        "distinct_prompts_per_update": distinct,
        **{f"{piece}_s_per_frame_{name}": seconds[name][piece] for name in VARIANTS for piece in pieces},
        **{f"{piece}_speedup": ratio for piece, ratio in ratios.items()},
        "same_results": same_results(*(first[name] for name in VARIANTS)),
        **projection(cached_run, config, scoring_ratio, update_ratio),
    }
    print(write_result("perf_glam_prefix", result).read_text())


def same_results(off: dict[str, Any], on: dict[str, Any]) -> bool:
    """The first repetition's scores, policy logits, values and update losses, to 1e-5."""
    try:
        for a, b in zip(off["outputs"], on["outputs"], strict=True):
            for key in a:
                np.testing.assert_allclose(a[key], b[key], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(list(off["losses"].values()), list(on["losses"].values()), rtol=1e-5, atol=1e-5)
    except AssertionError:
        return False
    return True


if __name__ == "__main__":
    main()
