"""GLAM's seq2seq policy (the paper's Flan-T5): the decoder's cross-attention keys and values computed once
per prompt (``cross_attention: per_prompt``, the CPU's default) against once per (prompt, command) row
(``per_candidate``, the code before it and the GPU's default), alternating in one process on the same inputs.

A random model of Flan-T5-base's or Flan-T5-large's architecture (no weights are downloaded) and GLAM's
paper prompt (BabyAI-Text GoToLocal, the last 3 observations, 6 commands). Each repetition times, for each
variant, a rollout frame's scoring (``--prompts`` prompts: policy and value, no gradients) and a PPO
micro-batch's forward and backward pass (the same prompts, full fine-tuning as the paper). Processor time of
this process (one thread: the other jobs' load is mostly waiting, left out) and wall time. The outputs and the
gradients of the first repetition are compared.

Writes ``benchmarks/results/perf_glam_seq2seq.json``.
Run: ``python benchmarks/perf/perf_glam_seq2seq.py [--size base|large] [--prompts 8] [--repetitions 5]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import timed, write_result

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks" / "gpu")]

from check import FLAN_T5_LARGE, saved_model  # noqa: E402

from textagents.llm.lamorel import LLMHandle, LLMSpec  # noqa: E402
from textagents.llm.transformers_backend import ValueHead  # noqa: E402
from textagents.methods.glam.episodes import Episodes  # noqa: E402
from textagents.methods.glam.scoring import POLICY, CommandScores  # noqa: E402
from textagents.methods.glam.updater import VALUE, policy_outputs  # noqa: E402

SIZES = {
    "large": FLAN_T5_LARGE,
    # google/flan-t5-base's config.json
    "base": {
        **FLAN_T5_LARGE,
        "d_model": 768,
        "d_ff": 2048,
        "num_layers": 12,
        "num_decoder_layers": 12,
        "num_heads": 12,
    },
}
#: variant -> its ``cross_attention`` setting
VARIANTS = {"repeated_per_command": "per_candidate", "once_per_prompt": "per_prompt"}


def prompts(count: int) -> tuple[list[str], list[list[str]]]:
    """GLAM's paper prompts (3 observations) of ``count`` GoToLocal envs, each a few random steps in."""
    episodes = Episodes("BabyAI-Text-GoToLocal-v0", count, None, first_seed=0, prompt_observations=3)
    rng = np.random.default_rng(0)
    for _ in range(3):
        for i in range(count):
            episodes.step(i, int(rng.integers(len(episodes.candidates(i)))))
    contexts = [episodes.context(i) for i in range(count)]
    candidates = [episodes.candidates(i) for i in range(count)]
    episodes.close()
    return contexts, candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="base")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_at_start = os.getloadavg()
    contexts, candidates = prompts(args.prompts)
    # log-prob scoring: a random model's commands can have probability 0 in float32, and the paper's
    # π = softmax(p / max p) then has no gradient to compare (the work is the same)
    heads = {
        POLICY: functools.partial(CommandScores, scoring="logprob"),
        VALUE: functools.partial(ValueHead, width=1024),
    }
    with tempfile.TemporaryDirectory() as folder:
        path = saved_model("t5", SIZES[args.size], Path(folder), contexts)
        backends = {
            name: LLMSpec(str(path), heads, backend_options={"cross_attention": setting}).build()
            for name, setting in VARIANTS.items()
        }
        tokens = [len(backends["once_per_prompt"].encode(c)) for c in contexts]

    def score(backend: Any) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            return policy_outputs(LLMHandle(backend), contexts, candidates)

    def forward_backward(backend: Any) -> torch.Tensor:
        backend.model.zero_grad(set_to_none=True)
        logits, values = policy_outputs(LLMHandle(backend), contexts, candidates)
        (torch.log_softmax(logits, -1)[:, 0].sum() + values.square().sum()).backward()
        return torch.cat([p.grad.flatten() for p in backend.model.parameters() if p.grad is not None])

    pieces = [f"{piece}_{clock}" for piece in ("scoring", "forward_backward") for clock in ("cpu", "wall")]
    seconds: dict[str, dict[str, list[float]]] = {name: {piece: [] for piece in pieces} for name in VARIANTS}
    first: dict[str, Any] = {}
    for repetition in range(args.repetitions):
        for name in VARIANTS:  # before, then after: both see the same load
            outputs, scoring_s = timed(score, backends[name])
            gradients, update_s = timed(forward_backward, backends[name])
            for clock in ("cpu", "wall"):
                seconds[name][f"scoring_{clock}"].append(scoring_s[clock])
                seconds[name][f"forward_backward_{clock}"].append(update_s[clock])
            first.setdefault(name, (outputs, gradients))
            print(repetition, name, f"scoring {scoring_s}, forward+backward {update_s}", flush=True)
    (before_outputs, before_gradients), (after_outputs, after_gradients) = (first[name] for name in VARIANTS)
    gradient_error = float((after_gradients - before_gradients).norm() / before_gradients.norm())
    result = {
        "model": f"random Flan-T5-{args.size} architecture",
        "threads": args.threads,
        "repetitions": args.repetitions,
        "prompts": args.prompts,
        "commands_per_prompt": len(candidates[0]),
        "prompt_tokens_mean": float(np.mean(tokens)),
        "load_average_at_start": [round(x, 2) for x in load_at_start],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        **{f"{piece}_s_{name}": seconds[name][piece] for name in VARIANTS for piece in pieces},
        **{
            f"{piece}_speedup": float(
                np.median(seconds["repeated_per_command"][piece]) / np.median(seconds["once_per_prompt"][piece])
            )
            for piece in pieces
        },
        "outputs_max_abs_difference": max(
            float((a - b).abs().max()) for a, b in zip(before_outputs, after_outputs, strict=True)
        ),
        "gradient_relative_difference": gradient_error,
    }
    print(write_result("perf_glam_seq2seq", result).read_text())


if __name__ == "__main__":
    main()
