"""How many operators GLAM's seq2seq policy launches: ``cross_attention: per_prompt`` against ``per_candidate``.

On a GPU a forward pass of GLAM's sizes looks bound by launching its operators (the GPU check: halving the
forward passes of an iteration made it 1.47x faster, docs/gpu.md), so the operator count, which is the same on
any device, tells which variant a GPU should prefer; on the CPU the arithmetic decides (``perf_glam_seq2seq.py``).
A random model with Flan-T5-large's layers and vocabulary at a small width (the operators a pass calls do not
depend on the widths), ``--prompts`` of GLAM's paper prompts in one forward pass (``forward_batch``: the GPU
check's 32), bfloat16 autocast as on a GPU; for each variant, the operators of a rollout
frame's scoring (no gradients) and of a PPO micro-batch's forward and backward pass, counted by
``torch.profiler`` (the ``aten::`` calls that no other ``aten::`` call made).

Writes ``benchmarks/results/perf_glam_operator_calls.json``.
Run: ``python benchmarks/perf/perf_glam_operator_calls.py [--prompts 32]`` (a minute).
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from common import write_result
from perf_glam_seq2seq import SIZES, prompts

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks" / "gpu")]

from check import saved_model  # noqa: E402

from textagents.device import autocast  # noqa: E402
from textagents.llm.lamorel import LLMHandle, LLMSpec  # noqa: E402
from textagents.llm.transformers_backend import ValueHead  # noqa: E402
from textagents.methods.glam.llm_learner import forward_batching  # noqa: E402
from textagents.methods.glam.scoring import POLICY, CommandScores  # noqa: E402
from textagents.methods.glam.updater import VALUE, policy_outputs  # noqa: E402

VARIANTS = ("per_prompt", "per_candidate")
#: Flan-T5-large's layers, heads' count and vocabulary, narrow.
NARROW_LARGE = {**SIZES["large"], "d_model": 64, "d_ff": 128, "d_kv": 16}


def operator_calls(run: Callable[[], None]) -> int:
    """The ``aten::`` operators ``run()`` calls that no other ``aten::`` operator called."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    return sum(
        1
        for event in prof.events()
        if event.name.startswith("aten::")
        and (event.cpu_parent is None or not event.cpu_parent.name.startswith("aten::"))
    )


def scoring(llm: LLMHandle, contexts: list[str], candidates: list[list[str]]) -> None:
    with torch.no_grad(), autocast(llm.backend.device, torch.bfloat16):
        policy_outputs(llm, contexts, candidates)


def forward_backward(llm: LLMHandle, contexts: list[str], candidates: list[list[str]]) -> None:
    with autocast(llm.backend.device, torch.bfloat16):
        logits, values = policy_outputs(llm, contexts, candidates)
    (logits.float().logsumexp(-1).sum() + values.sum()).backward()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=32)
    args = parser.parse_args()
    contexts, candidates = prompts(args.prompts)
    heads = {POLICY: CommandScores, VALUE: functools.partial(ValueHead, width=64)}
    counts: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = saved_model("t5", NARROW_LARGE, Path(folder), contexts)
        for variant in VARIANTS:
            options = {**forward_batching(args.prompts), "cross_attention": variant}
            backend = LLMSpec(str(path), heads, backend_options=options).build()
            llm = LLMHandle(backend)
            counts[variant] = {
                "scoring": operator_calls(functools.partial(scoring, llm, contexts, candidates)),
                "forward_backward": operator_calls(functools.partial(forward_backward, llm, contexts, candidates)),
            }
            print(variant, counts[variant], flush=True)
    result = {
        "model": "random Flan-T5-large layers and vocabulary, width 64",
        "prompts": args.prompts,
        "commands_per_prompt": len(candidates[0]),
        "operator_calls": counts,
        "per_prompt_over_per_candidate": {
            piece: counts["per_prompt"][piece] / counts["per_candidate"][piece] for piece in counts["per_prompt"]
        },
    }
    print(write_result("perf_glam_operator_calls", result).read_text())


if __name__ == "__main__":
    main()
