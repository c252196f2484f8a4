"""SB3 on Crafter-Text: ``textagents train``'s batched vector env (``SB3VectorEnv`` over ``CrafterTextVectorEnv``)
against SB3's ``DummyVecEnv`` of single ``CrafterTextEnv``s, the same trajectories either way (tested).

Two measures per vectorization, each round in a fresh subprocess with one torch thread, the two alternating
over ``--rounds`` (medians and ranges reported):

- ``rollout``: the VecEnv alone, stepped with uniformly random actions (env steps, captions, bag-of-words
  features, resets): what the batched env changes;
- ``train``: PPO (``n_steps`` 128, bag-of-words features, SB3's defaults otherwise) for ``--frames`` frames
  through ``textagents.sb3.train``: the rollout plus the policy's forward passes and the updates.

Writes ``benchmarks/results/perf_sb3_vectorization.json``. Run: ``python benchmarks/perf/perf_sb3_vectorization.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_result

VECTORIZATIONS = ("batched", "dummy")

_ROUND = """
import json, sys, tempfile, time
import numpy as np, torch
from textagents.sb3.features import HashedBagOfWords
from textagents.sb3.train import TrainConfig, make_vec_env, train
measure, vectorization, envs, frames = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
config = TrainConfig("Crafter-Text-v0", total_timesteps=frames, n_envs=envs, progress_bar=False,
                     algo_kwargs={"n_steps": 128}, vectorization=vectorization)
if measure == "rollout":
    env = make_vec_env(config, HashedBagOfWords())
    env.reset()
    rng = np.random.default_rng(0)
    steps = frames // envs
    start = time.perf_counter()
    for _ in range(steps):
        env.step(rng.integers(0, 17, envs))
    elapsed = time.perf_counter() - start
else:
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        train(config, run_dir, threads=1)
        elapsed = time.perf_counter() - start
print(json.dumps({"frames_per_s": frames / elapsed}))
"""


def one_round(measure: str, vectorization: str, envs: int, frames: int) -> float:
    command = [sys.executable, "-c", _ROUND, measure, vectorization, str(envs), str(frames)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["frames_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument(
        "--frames", type=int, default=8192, help="frames per round (PPO: 8 envs x 128 = 1,024 a rollout)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates: dict[str, dict[str, list[float]]] = {m: {v: [] for v in VECTORIZATIONS} for m in ("rollout", "train")}
    for r in range(args.rounds):
        for measure in rates:
            order = VECTORIZATIONS if r % 2 == 0 else VECTORIZATIONS[::-1]
            for vectorization in order:
                rates[measure][vectorization].append(one_round(measure, vectorization, args.envs, args.frames))
                print(measure, vectorization, f"{rates[measure][vectorization][-1]:.0f} frames/s", flush=True)
    summary = {
        measure: {
            **{v: {"median": statistics.median(x), "range": [min(x), max(x)], "rounds": x} for v, x in by.items()},
            "ratio_batched_to_dummy": statistics.median(by["batched"]) / statistics.median(by["dummy"]),
        }
        for measure, by in rates.items()
    }
    path = write_result(
        "perf_sb3_vectorization",
        {
            "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout[:10],
            "env_id": "Crafter-Text-v0",
            "envs": args.envs,
            "frames": args.frames,
            "torch_threads": 1,
            **summary,
        },
    )
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
