"""GLAM's speed-ups measured end to end: a whole ``cpu.yaml`` run of the GLAM agent with the score cache and
prefix sharing off (``score_cache=false``, ``prefix_sharing=false``: every call runs the model, every row's
prompt in full) and one with both on (the defaults), the same seed, side by side (one process and one torch
thread each, on the 2 cores), through ``textagents method compare``.

For each run: its wall time and processor time (from ``/usr/bin/time -v``, written to ``ARM.log``), the
training frames per wall-clock hour, and the time in evaluations (the metrics' timestamps: an evaluation is
the time between an ``eval`` record and the record before it; the zero-shot evaluation, before iteration 1,
is read from the first training record minus the run's start). Equal results: every evaluation's success rate
and episode length, and every training record's frames, episodes and success rate, must be the same in both
runs; the losses to 1e-4 (float rounding differs with the batch shapes).

Run (about 1 h on 2 idle cores: the slower run took 57 min):
``python benchmarks/perf/perf_glam_end_to_end.py --out runs/glam-e2e``; runs already finished in ``--out`` are
analysed, not run again. Writes ``benchmarks/results/perf_glam_end_to_end.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import write_result

ROOT = Path(__file__).resolve().parents[2]
CPU_YAML = ROOT / "benchmarks" / "methods" / "glam" / "cpu.yaml"
ARMS = {"off": ["--set", "score_cache=false", "--set", "prefix_sharing=false"], "on": []}
RESULTS = ("success_rate", "episode_length", "frames", "episodes")


def command(arm: str, out: Path, seed: int) -> list[str]:
    textagents = str(Path(sys.executable).with_name("textagents"))
    run = [textagents, "method", "compare", "glam", str(CPU_YAML), "--out", str(out / arm)]
    return ["/usr/bin/time", "-v", *run, "--vary", "agent=glam", "--seeds", str(seed), "--threads", "1",
            "--no-progress", *ARMS[arm]]  # fmt: skip


def run_folder(out: Path, arm: str, seed: int) -> Path:
    return out / arm / f"agent=glam_seed{seed}"


def rusage(log: Path) -> dict[str, float]:
    """Wall and processor seconds and peak memory from ``/usr/bin/time -v``'s report."""
    text = log.read_text()

    def field(name: str) -> str:
        return re.search(rf"{re.escape(name)}: (.+)", text).group(1).strip()

    parts = [float(p) for p in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
    wall = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": float(field("Maximum resident set size (kbytes)")) / 1024}


def timeline(folder: Path, start: float) -> dict[str, Any]:
    """Seconds in evaluations from the records' timestamps (``start``: the run's start). The first record
    closes the zero-shot evaluation and the first iteration's training together: that training is taken as
    the median of the other iterations'."""
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    periods = {"train": [], "eval": []}
    for before, record in itertools.pairwise(records):
        periods[record["kind"]].append(record["time"] - before["time"])
    zero_shot = records[0]["time"] - start - float(np.median(periods["train"]))
    return {
        "records": records,
        "evaluation_s": zero_shot + sum(periods["eval"]),
        "run_s": records[-1]["time"] - start,
        "frames": records[-1]["frames"],
    }


def same_results(off: list[dict[str, Any]], on: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the two runs' records agree: ``RESULTS`` keys exactly, the losses to 1e-4."""
    exact, close, worst = True, True, 0.0
    for a, b in zip(off, on, strict=True):
        for key in a.keys() - {"time"}:
            if any(key.endswith(name) for name in RESULTS):
                exact &= a[key] == b[key]
            elif isinstance(a[key], float):
                difference = abs(a[key] - b[key]) / max(1.0, abs(a[key]))
                worst = max(worst, difference)
                close &= difference <= 1e-4
    return {"results_identical": exact, "losses_within_1e-4": close, "largest_relative_loss_difference": worst}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    running = {}
    for arm in ARMS:
        log = args.out / f"{arm}.log"
        if not log.exists() or "Elapsed (wall clock)" not in log.read_text():
            with log.open("w") as handle:
                handle.write(f"start {time.time()}\n")
                handle.flush()
                running[arm] = subprocess.Popen(
                    command(arm, args.out, args.seed), stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT
                )
    for arm, process in running.items():
        if process.wait() != 0:
            raise SystemExit(f"the {arm} run failed: see {args.out / f'{arm}.log'}")
    arms = {}
    for arm in ARMS:
        log = args.out / f"{arm}.log"
        start = float(re.search(r"start ([0-9.]+)", log.read_text()).group(1))
        arms[arm] = {**rusage(log), **timeline(run_folder(args.out, arm, args.seed), start)}
    off, on = arms["off"], arms["on"]
    summary = {
        arm: {
            "wall_s": a["wall_s"],
            "cpu_s": a["cpu_s"],
            "peak_rss_mib": a["peak_rss_mib"],
            "frames": a["frames"],
            "training_frames_per_wall_hour": a["frames"] / a["wall_s"] * 3600,
            "evaluation_share_of_run": a["evaluation_s"] / a["run_s"],
        }
        for arm, a in arms.items()
    }
    result = {
        "config": str(CPU_YAML.relative_to(ROOT)),
        "agent": "glam",
        "seed": args.seed,
        "git": {
            arm: json.loads((run_folder(args.out, arm, args.seed) / "config.json").read_text())["git"] for arm in ARMS
        },
        **{f"score_cache_and_prefix_sharing_{arm}": values for arm, values in summary.items()},
        "speedup_wall": off["wall_s"] / on["wall_s"],
        "speedup_cpu": off["cpu_s"] / on["cpu_s"],
        **same_results(off["records"], on["records"]),
    }
    print(write_result("perf_glam_end_to_end", result).read_text())


if __name__ == "__main__":
    main()
