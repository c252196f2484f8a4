"""The cost of drawing one batch from ELLM's replay (``NStepReplay.sample``, on the CPU): the original's draw
(``replay_sampling: episode``, a finished episode then a start in it, rewards clipped) against the earlier
one, a transition uniformly with unclipped rewards (``transition``), in the same run on the same contents.

The replay holds ``--size`` transitions of ``--frame-size`` greyscale frames x 4 and a 384-wide text vector
(cpu.yaml's: 60k, 84, the caption's embedding) in episodes of 50 to 400 steps, then a running one; both
arms draw from the same replay, switched between the two settings. Each draw
is timed alone (index arithmetic and the copy of 64 frames, next frames and texts) and with the frames
shrunk to one byte (the index arithmetic alone). The arms are interleaved over ``--rounds`` so that a change
in the machine's load falls on both; the ratio is taken per round and its median reported. The C allocator
keeps freed memory, as in ELLM's runs (``core/allocator.py``); without it a draw faulted its batch's pages in
anew and cost several times as much.

Writes ``benchmarks/results/perf_ellm_replay.json``.
Run: ``python benchmarks/perf/perf_ellm_replay.py [--size 60000] [--frame-size 84] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from common import rate, write_result

from textagents.methods.core.allocator import keep_freed_memory
from textagents.methods.ellm.dqn import NStepReplay

ARMS = {"transition_unclipped": ("transition", False), "episode_clipped": ("episode", True)}


def filled(size: int, frame_shape: tuple[int, ...], text_size: int) -> NStepReplay:
    """A replay of ``size`` filled with episodes of 50 to 400 steps (seed 0), the last one still running."""
    replay = NStepReplay(size, text_size, frame_shape)
    rng = np.random.default_rng(0)
    frame, text = np.zeros(frame_shape, np.uint8), np.zeros(text_size, np.float32)
    left = 0
    for _ in range(size + 200):
        if left == 0:
            left = int(rng.integers(50, 401))
        left -= 1
        replay.add(frame, text, int(rng.integers(139)), float(rng.random()), frame, text, left == 0, False)
    return replay


def time_arms(replay: NStepReplay, batch: int, rounds: int) -> dict[str, float]:
    """Median µs per draw of each arm, and the median of the per-round ratios, episode over transition."""
    rng = np.random.default_rng(1)
    microseconds: dict[str, list[float]] = {name: [] for name in ARMS}
    for _ in range(rounds):
        for name, (sampling, clip_reward) in ARMS.items():
            replay.sampling, replay.clip_reward = sampling, clip_reward
            microseconds[name].append(1e6 / rate(lambda: replay.sample(batch, 3, 0.99, rng), 1.0, 50))
    ratios = [e / t for t, e in zip(*microseconds.values(), strict=True)]
    return {
        **{f"{name}_us": round(statistics.median(v), 1) for name, v in microseconds.items()},
        "episode_over_transition": round(statistics.median(ratios), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=60_000)
    parser.add_argument("--frame-size", type=int, default=84)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for name in ("size", "frame_size", "batch", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")

    keep_freed_memory()
    result: dict = {"size": args.size, "frame_size": args.frame_size, "batch": args.batch, "rounds": args.rounds}
    shapes = {"index_only": ((1,), 0), "full_batch": ((args.frame_size, args.frame_size, 4), 384)}
    for part, (frame_shape, text_size) in shapes.items():
        result[part] = time_arms(filled(args.size, frame_shape, text_size), args.batch, args.rounds)
        print(part, result[part])
    print(write_result("perf_ellm_replay", result))


if __name__ == "__main__":
    main()
