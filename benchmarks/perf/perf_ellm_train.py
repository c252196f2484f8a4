"""ELLM's training frames/s in cpu.yaml's setting with SimpleOracle goals: the code of the commit before its speed
work (``--base``, default 77016ee) against this checkout's, each in its own process on one torch thread.

Each process builds the method from cpu.yaml (``goal_source: oracle``; iterations of ``--frames`` frames,
learning from the second, by when ε has reached its end, so that its frames act greedily as most of a run's
do), plays the first iteration untimed, then times the second: play and DQN updates (an update every 4 frames
once an episode has ended). Measured: its wall-clock frames/s, its frames per second of the process's CPU
time (what the machine's other load changes least), the share of that CPU time spent in the kernel, the page
faults per frame, the updates made and the CPU time per frame of the DQN updates, of acting, of the env's step
(the reward's included) and of the agent's text input. Then the floating-point operations of one update
(``torch.utils.flop_counter``: convolutions and matrix products, forward and backward) give the updates' GFLOP
per CPU second, beside a 1024 x 1024 float32 matrix product's on the same thread: how close the update runs to
the core's peak.

The two codes run alternately, ``--repetitions`` times each, the order swapped at each repetition, so that a
change in the machine's load falls on both; the ratio (this checkout over the base) is taken per repetition
and its median reported, with the load average. The base's sources come from ``git archive`` into a temporary
folder; glibc's ``MALLOC_*`` variables are cleared for both.

Writes ``benchmarks/results/perf_ellm_train.json``.
Run: ``python benchmarks/perf/perf_ellm_train.py [--repetitions 5] [--frames 400]`` (~4 minutes on the idle machine).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from common import write_result

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "benchmarks" / "methods" / "ellm" / "cpu.yaml"
SOURCES = ("textenvs/src", "textagents/src")
BASE = "77016ee"


#: The parts of a frame timed apart: the attribute of the method holding the callable (None: the method), its name.
PARTS = {
    "dqn_update": ("agent", "learn"),
    "acting": ("agent", "act"),
    "env_step": ("env", "step"),
    "text_input": (None, "_text"),
}


def measure(frames: int) -> dict[str, float]:
    """In a worker process: cpu.yaml's run with oracle goals, ``frames`` frames untimed, then ``frames`` timed;
    then the floating-point operations of one more update and the rate of 1024 x 1024 matrix products."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from textagents.methods.core.config import config_from_dict, read_config_file
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    torch.set_num_threads(1)
    settings = {
        **read_config_file(CONFIG),
        "goal_source": "oracle",
        "frames_per_iteration": frames,
        "learning_starts": frames,
        "epsilon_frames": frames,
    }
    with tempfile.TemporaryDirectory() as run_dir:
        method = EllmMethod(config_from_dict(EllmConfig, settings, str(CONFIG)), RunContext(Path(run_dir), no_llm))
        method.train_iteration(1)
        spent = dict.fromkeys(PARTS, 0.0)
        for part, (holder, name) in PARTS.items():
            time_calls(method if holder is None else getattr(method, holder), name, spent, part)
        before, wall, cpu = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter(), time.process_time()
        method.train_iteration(2)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        after = resource.getrusage(resource.RUSAGE_SELF)
        agent, updates = method.agent, len(method.agent.losses)
        with FlopCounterMode(display=False) as flops:
            settings = agent.settings
            agent.learn(agent.replay.sample(settings.batch_size, settings.n_steps, settings.gamma, agent.rng))
        method.close()
    return {
        "frames_per_s": frames / wall,
        "frames_per_cpu_s": frames / cpu,
        "kernel_share": (after.ru_stime - before.ru_stime) / cpu,
        "page_faults_per_frame": (after.ru_minflt - before.ru_minflt) / frames,
        "updates": updates,
        **{f"cpu_ms_per_frame_{part}": 1e3 * seconds / frames for part, seconds in spent.items()},
        "update_gflop": flops.get_total_flops() / 1e9,
        "update_gflop_per_cpu_s": flops.get_total_flops() / 1e9 * updates / spent["dqn_update"],
        "matmul_gflop_per_cpu_s": matmul_rate(torch),
    }


def time_calls(holder: object, name: str, spent: dict[str, float], part: str) -> None:
    """Add the CPU seconds of each call of ``holder.name`` to ``spent[part]``."""
    call = getattr(holder, name)

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return call(*args, **kwargs)
        finally:
            spent[part] += time.process_time() - start

    setattr(holder, name, timed)


def matmul_rate(torch, size: int = 1024, seconds: float = 1.0) -> float:
    """GFLOP per CPU second of ``size`` x ``size`` float32 matrix products on the thread: the core's peak."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    products, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        a @ b
        products += 1
    return 2 * size**3 * products / (time.process_time() - start) / 1e9


def no_llm():
    raise RuntimeError("oracle goals need no LLM")


def base_sources(commit: str, folder: Path) -> str:
    """``commit``'s package sources extracted into ``folder``, as a PYTHONPATH."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, *SOURCES], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return os.pathsep.join(str(folder / s) for s in SOURCES)


def run_worker(pythonpath: str, frames: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = pythonpath
    command = [sys.executable, __file__, "--worker", "--frames", str(frames)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=Path(__file__).parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--frames", type=int, default=400, help="frames untimed, then timed, per process")
    parser.add_argument("--base", default=BASE, help="the commit to compare with")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in ("repetitions", "frames"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.worker:
        print(json.dumps(measure(args.frames)))
        return

    ours = os.pathsep.join(str(ROOT / s) for s in SOURCES)
    runs: dict[str, list[dict[str, float]]] = {"base": [], "ours": []}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        paths = {"base": base_sources(args.base, Path(folder)), "ours": ours}
        for repetition in range(args.repetitions):
            for arm in ("base", "ours") if repetition % 2 == 0 else ("ours", "base"):
                runs[arm].append(run_worker(paths[arm], args.frames))
                print(arm, {k: round(v, 3) for k, v in runs[arm][-1].items()}, flush=True)
    keys = runs["base"][0].keys()
    per_repetition = {
        key: [round(o[key] / b[key], 3) for o, b in zip(runs["ours"], runs["base"], strict=True)]
        for key in ("frames_per_s", "frames_per_cpu_s")
    }
    result = {
        "config": str(CONFIG.relative_to(ROOT)),
        "base_commit": args.base,
        "frames": args.frames,
        "repetitions": args.repetitions,
        "torch_threads": 1,
        "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        **{arm: {key: round(statistics.median(r[key] for r in done), 3) for key in keys} for arm, done in runs.items()},
        **{f"ratio_{key}": round(statistics.median(values), 3) for key, values in per_repetition.items()},
        "ratios_per_repetition": per_repetition,
    }
    print(json.dumps(result, indent=2))
    print(write_result("perf_ellm_train", result))


if __name__ == "__main__":
    main()
