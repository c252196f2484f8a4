"""Throughput, reset time and memory of ``Crafter-Text-v0`` against stock ``crafter.Env``.

Same run, same machine: steps/s of our text mode (no rendering) and text+pixels mode against stock
``crafter.Env().step`` (which renders every frame), on the same seeded stream of random actions, resets
excluded from the timing; median reset times with numba, without it (in a subprocess) and of stock
crafter; the memory of one env in a fresh process (resident growth over 1,000 steps, Python allocation
peak). Writes ``benchmarks/results/perf_crafter_text.json``.
Run: ``python benchmarks/perf/perf_crafter_text.py [--steps 3000]``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import crafter
import gymnasium as gym
import numpy as np
from common import write_result

import textenvs  # noqa: F401  (registers Crafter-Text-v0)
from textenvs.envs.crafter_text import COMMANDS

_MEMORY_PROBE = """
import resource, tracemalloc, gymnasium as gym, textenvs, crafter
def rss_kib():
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmRSS")).split()[1])
before = rss_kib()
tracemalloc.start()
env = gym.make("Crafter-Text-v0", obs_mode=OBS_MODE)
env.reset(seed=0)
for i in range(1000):
    if any(env.step(COMMANDS[i % len(COMMANDS)])[2:4]):
        env.reset()
_current, peak = tracemalloc.get_traced_memory()
print(before, rss_kib(), peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

_RESET_WITHOUT_NUMBA = """
import sys, time, statistics
sys.modules["numba"] = None  # opensimplex falls back to pure Python
import gymnasium as gym, textenvs
env = gym.make("Crafter-Text-v0")
times = []
for seed in range(RESETS):
    start = time.perf_counter(); env.reset(seed=seed); times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def step_rate(step: Callable[[int], bool], reset: Callable[[], None], actions: list[int]) -> float:
    """Steps per second over ``actions``, timing only the steps (a reset follows each episode's end)."""
    reset()
    elapsed = 0.0
    for action in actions:
        start = time.perf_counter()
        done = step(action)
        elapsed += time.perf_counter() - start
        if done:
            reset()
    return len(actions) / elapsed


def stock_crafter() -> tuple[Callable[[int], bool], Callable[[], None]]:
    env = crafter.Env(seed=0)
    return (lambda a: env.step(a)[2]), env.reset


def crafter_text(obs_mode: str) -> tuple[Callable[[int], bool], Callable[[], None]]:
    env = gym.make("Crafter-Text-v0", obs_mode=obs_mode)
    env.reset(seed=0)

    def step(action: int) -> bool:
        _obs, _reward, terminated, truncated, _info = env.step(COMMANDS[action])
        return terminated or truncated

    return step, env.reset


def python_probe(code: str, **names: object) -> str:
    prelude = "".join(f"{k} = {v!r}\n" for k, v in names.items())
    out = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3000, help="timed steps per env and round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the best of each is kept")
    parser.add_argument("--resets", type=int, default=15, help="timed resets (with numba)")
    args = parser.parse_args()

    actions = np.random.default_rng(0).integers(0, len(COMMANDS), args.steps).tolist()
    envs = {
        "stock_crafter": stock_crafter(),
        "crafter_text_text": crafter_text("text"),
        "crafter_text_text+pixels": crafter_text("text+pixels"),
    }
    best = dict.fromkeys(envs, 0.0)
    for _ in range(args.rounds):
        for name, (step, reset) in envs.items():
            best[name] = max(best[name], step_rate(step, reset, actions))

    env = gym.make("Crafter-Text-v0")
    env.reset(seed=0)  # compiles/loads numba's cache outside the timing
    resets = []
    for seed in range(1, args.resets + 1):
        start = time.perf_counter()
        env.reset(seed=seed)
        resets.append(time.perf_counter() - start)
    reset_without_numba = float(python_probe(_RESET_WITHOUT_NUMBA, RESETS=3))

    stock = crafter.Env(seed=0)
    stock.reset()
    stock_resets = []
    for _ in range(args.resets):
        start = time.perf_counter()
        stock.reset()
        stock_resets.append(time.perf_counter() - start)

    memory = {}
    for obs_mode in ("text", "text+pixels"):
        probe = python_probe(_MEMORY_PROBE, OBS_MODE=obs_mode, COMMANDS=COMMANDS)
        before, after, python_peak, process_peak = map(int, probe.split())
        memory[obs_mode] = {
            "env_rss_mib": round((after - before) / 1024, 1),
            "env_python_peak_mib": round(python_peak / 2**20, 1),
            "process_peak_rss_mib": round(process_peak / 1024, 1),
        }

    result = {
        "env": "Crafter-Text-v0 (text actions, caption_style=smartplay)",
        "baseline": "stock crafter.Env().step (renders a 64x64 frame every step)",
        "steps_per_second": {name: round(value, 1) for name, value in best.items()},
        "ratio_text_vs_stock": round(best["crafter_text_text"] / best["stock_crafter"], 2),
        "ratio_text_pixels_vs_stock": round(best["crafter_text_text+pixels"] / best["stock_crafter"], 2),
        "target_ratio_text_vs_stock": 3.0,
        "reset_seconds_median_numba": round(statistics.median(resets), 4),
        "reset_seconds_median_without_numba": round(reset_without_numba, 3),
        "reset_seconds_median_stock_crafter": round(statistics.median(stock_resets), 4),
        "target_reset_seconds_numba": 0.1,
        "memory_one_env_1000_steps": memory,
        "crafter_version": importlib.metadata.version("crafter"),
    }
    path = write_result("perf_crafter_text", result)
    print(json.dumps(result, indent=1), "->", path)


if __name__ == "__main__":
    main()
