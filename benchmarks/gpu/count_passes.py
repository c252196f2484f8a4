"""How many forward passes a GLAM iteration of ``check.py``'s ``glam`` parts holds, by ``forward_batch``.

``forward_batch: N`` caps a pass at N prompts and 256·N padded tokens, so long prompts split passes further.
This steps the check's 32 BabyAI-Text envs with uniform actions, tokenizes their prompts with the check's
tokenizer and counts the passes ``TransformersBackend.length_batches`` makes: per frame for scoring, per
iteration (4 frames) for the update (4 epochs of minibatches of 64 in micro-batches). CPU only, no model.

    python benchmarks/gpu/count_passes.py --iterations 3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import check  # beside this file

from textagents.llm.transformers_backend import TransformersBackend
from textagents.methods.glam.episodes import Episodes
from textagents.methods.glam.llm_learner import forward_batching

ENVS, FRAMES, EPOCHS, MINIBATCH = 32, 4, 4, 64
#: (micro_batch, forward_batch, pass_tokens) of the check's GLAM parts (None: the config's token cap).
PARTS = {
    "glam_micro_batch_64": (64, 16, None),
    "glam_batch_32": (32, 32, None),
    "glam_batch_64": (64, 64, None),
    "glam_batch_64_whole": (64, 64, 64 * 512),
}


def passes(lengths: list[int], forward_batch: int, pass_tokens: int | None) -> int:
    batching = forward_batching(forward_batch)
    backend = object.__new__(TransformersBackend)  # length_batches reads these two settings only
    backend.batch_size = batching["batch_size"]
    backend.max_batch_tokens = pass_tokens or batching["max_batch_tokens"]
    return len(backend.length_batches(lengths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    episodes = Episodes("BabyAI-Text-GoToLocal-v0", ENVS, None, first_seed=0)
    tokenizer = check.tokenizer_for([episodes.context(i) for i in range(ENVS)])
    rng = np.random.default_rng(0)
    for iteration in range(args.iterations):
        lengths: list[int] = []
        counts = {name: [0, 0] for name in PARTS}  # scoring passes, update passes
        for _ in range(FRAMES):
            frame = [len(tokenizer.encode(episodes.context(i))) for i in range(ENVS)]
            for name, (_, forward_batch, pass_tokens) in PARTS.items():
                counts[name][0] += passes(frame, forward_batch, pass_tokens)
            lengths += frame
            for i in range(ENVS):
                episodes.step(i, int(rng.integers(len(episodes.candidates(i)))))
        for name, (micro_batch, forward_batch, pass_tokens) in PARTS.items():
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
