"""How many forward passes a GLAM iteration of ``check.py``'s ``glam`` parts holds, by ``forward_batch``.

``forward_batch: N`` caps a pass at N prompts and 256·N padded tokens, so long prompts split passes further.
This steps the check's 32 BabyAI-Text envs with uniform actions, tokenizes their prompts with the check's
tokenizer and counts the passes ``transformers_backend.length_batches`` makes: per frame for scoring, per
iteration (4 frames) for the update (4 epochs of minibatches of 64 in micro-batches). CPU only, no model.

    python benchmarks/gpu/count_passes.py --iterations 3
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import check  # beside this file

from textagents.llm.transformers_backend import length_batches
from textagents.methods.glam.episodes import Episodes
from textagents.methods.glam.llm_learner import forward_batching

ENVS, FRAMES, EPOCHS, MINIBATCH = 32, 4, 4, 64
COUNTED = ("glam_micro_batch_64", "glam_batch_32", "glam_batch_32_whole", "glam_batch_64", "glam_batch_64_whole")


def part_settings(name: str) -> tuple[int, int, int | None]:
    """(micro_batch, forward_batch, pass_tokens) of ``check.PARTS[name]``: its keywords, else ``glam``'s defaults."""
    defaults = {key: p.default for key, p in inspect.signature(check.glam).parameters.items()}
    settings = {**defaults, **check.PARTS[name].keywords}
    return settings["micro_batch"], settings["forward_batch"], settings["pass_tokens"]


def passes(lengths: list[int], forward_batch: int, pass_tokens: int | None) -> int:
    batching = forward_batching(forward_batch)
    return len(length_batches(lengths, batching["batch_size"], pass_tokens or batching["max_batch_tokens"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    episodes = Episodes("BabyAI-Text-GoToLocal-v0", ENVS, None, first_seed=0)
    tokenizer = check.tokenizer_for([episodes.context(i) for i in range(ENVS)])
    rng = np.random.default_rng(0)
    parts = {name: part_settings(name) for name in COUNTED}
    for iteration in range(args.iterations):
        lengths: list[int] = []
        counts = {name: [0, 0] for name in parts}  # scoring passes, update passes
        for _ in range(FRAMES):
            frame = [len(tokenizer.encode(episodes.context(i))) for i in range(ENVS)]
            for name, (_, forward_batch, pass_tokens) in parts.items():
                counts[name][0] += passes(frame, forward_batch, pass_tokens)
            lengths += frame
            for i in range(ENVS):
                episodes.step(i, int(rng.integers(len(episodes.candidates(i)))))
        for name, (micro_batch, forward_batch, pass_tokens) in parts.items():
            for _ in range(EPOCHS):
                order = rng.permutation(len(lengths))
                for start in range(0, len(lengths), MINIBATCH):
                    minibatch = order[start : start + MINIBATCH]
                    for m in range(0, len(minibatch), micro_batch):
                        micro = [lengths[j] for j in minibatch[m : m + micro_batch]]
                        counts[name][1] += passes(micro, forward_batch, pass_tokens)
        print(
            f"iteration {iteration}: prompt tokens mean {np.mean(lengths):.0f}, max {max(lengths)}; passes "
            + ", ".join(f"{name} {score} + {update}" for name, (score, update) in counts.items())
        )
    episodes.close()


if __name__ == "__main__":
    main()
