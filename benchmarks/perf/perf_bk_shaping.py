"""BK's training frames/s on ELLM's Crafter (``Crafter-Text-ELLM-v0``, ``cpu_crafter.yaml``'s PPO settings,
torch on ``--threads`` threads): PPO alone against PPO shaped by a BK-Code potential run in the sandbox
(``code_file``: the hand-written ``reference_potentials/crafter.py.txt``), with every Φ sent to the sandbox
one call at a time (``code_cache_entries: 0, code_batch: false``, as before the cache) and with the cache
alone and the cache and batched requests (the defaults).

Each arm is its own run; their iterations are interleaved (iteration i of every arm, then i + 1), so that a
change in the machine's load falls on all of them; the first iteration (labelling, building) is not timed.
Frames/s is the frames of the timed iterations (collection + PPO update) over their seconds, and each
shaped arm's ratio to PPO alone is taken in the same run. Needs bubblewrap (or ``--unsafe-local-exec``).

Writes ``benchmarks/results/perf_bk_shaping.json``.
Run: ``python benchmarks/perf/perf_bk_shaping.py [--iterations 3] [--frames 8192] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml
from common import write_result

from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.method import BKMethod
from textagents.methods.core.method import RunContext
from textagents.sb3.threads import training_threads

BK = Path(__file__).resolve().parents[1] / "methods" / "bk"
CONFIG = BK / "cpu_crafter.yaml"
POTENTIAL = BK / "reference_potentials" / "crafter.py.txt"
RUN_KEYS = ("iterations", "eval_every", "checkpoint_every", "model")  # the runner's, not the method's
ARMS = {
    "unshaped": {"shaping": "none"},
    "shaped_before": {"code_cache_entries": 0, "code_batch": False},
    "shaped_cache": {"code_batch": False},
    "shaped_cache_batch": {},
}


def config(frames: int, options: dict) -> BKConfig:
    settings = {k: v for k, v in yaml.safe_load(CONFIG.read_text()).items() if k not in RUN_KEYS}
    return BKConfig(**{**settings, "code_file": str(POTENTIAL), "frames_per_iteration": frames, **options})


def no_llm():
    raise RuntimeError("a code_file needs no LLM")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=3, help="per arm, the first untimed")
    parser.add_argument("--frames", type=int, default=8192, help="frames per iteration")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--unsafe-local-exec", action="store_true")
    args = parser.parse_args()
    if args.iterations < 2:
        parser.error(f"--iterations must be >= 2 (the first is not timed), got {args.iterations}")

    with tempfile.TemporaryDirectory() as folder, training_threads(args.threads):
        methods = {}
        for name, options in ARMS.items():
            run_dir = Path(folder) / name
            run_dir.mkdir()
            methods[name] = BKMethod(config(args.frames, options), RunContext(run_dir, no_llm, args.unsafe_local_exec))
        seconds = dict.fromkeys(ARMS, 0.0)
        metrics: dict[str, dict] = {}
        try:
            for iteration in range(1, args.iterations + 1):
                for name, method in methods.items():
                    start = time.perf_counter()
                    metrics[name] = method.train_iteration(iteration)
                    if iteration > 1:
                        seconds[name] += time.perf_counter() - start
        finally:
            for method in methods.values():
                method.close()

    timed_frames = (args.iterations - 1) * args.frames
    rates = {name: timed_frames / seconds[name] for name in ARMS}
    result = {
        "env_id": "Crafter-Text-ELLM-v0",
        "config": str(CONFIG.relative_to(BK.parents[1])),
        "code_file": str(POTENTIAL.relative_to(BK.parents[1])),
        "threads": args.threads,
        "frames_per_iteration": args.frames,
        "timed_iterations": args.iterations - 1,
        "frames_per_s": rates,
        "ratio_to_unshaped": {name: rates[name] / rates["unshaped"] for name in ARMS if name != "unshaped"},
        "sandbox": {
            name: {k.removeprefix("sandbox/"): v for k, v in metrics[name].items() if k.startswith("sandbox/")}
            for name in ARMS
            if name != "unshaped"
        },
    }
    print(write_result("perf_bk_shaping", result).read_text())


if __name__ == "__main__":
    main()
