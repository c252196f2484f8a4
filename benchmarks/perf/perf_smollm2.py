"""SmolLM2-135M-Instruct on this machine: load time from the cache, generation tokens/s (batch 1 and 8) with
transformers and with llama.cpp on the same GGUF, and GLAM-sized ``score()`` pairs/s with and without the
prompt's forward pass reused across its candidates.

Needs `textagents download smollm2` (and, for the llama.cpp rows, `pip install "textagents[llamacpp]"`;
skipped with a note otherwise). Writes ``benchmarks/results/perf_smollm2.json``.
Run: ``python benchmarks/perf/perf_smollm2.py [--tokens 32] [--threads 2]``.
"""

from __future__ import annotations

import argparse
import time

import torch
from common import write_result
from perf_textagents import COMMANDS, glam_contexts

from textagents.llm.transformers_backend import TransformersBackend

MODEL = "smollm2-135m-instruct"
PROMPT = "You are a household robot. List three things to tidy in a living room:\n1."


def tokens_per_second(generate, prompts: list[str], tokens: int, count_tokens) -> float:
    start = time.perf_counter()
    outputs = generate(prompts, max_tokens=tokens)
    elapsed = time.perf_counter() - start
    return sum(count_tokens(o) for o in outputs) / elapsed


def transformers_rows(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    backend = TransformersBackend(MODEL, batch_size=8)
    load_s = time.perf_counter() - start
    backend.generate([PROMPT], max_tokens=4)  # warm-up

    def count(text: str) -> int:
        return len(backend.tokenizer(text, add_special_tokens=False)["input_ids"])

    rows = {"load_s": load_s}
    for batch in (1, 8):
        rows[f"generate_tokens_per_s_batch{batch}"] = tokens_per_second(
            backend.generate, [PROMPT] * batch, args.tokens, count
        )
    contexts = glam_contexts(8)
    candidates = [COMMANDS] * len(contexts)
    pairs = len(contexts) * len(COMMANDS)
    for name, scorer in (
        ("score_pairs_per_s_reuse", backend.score),
        ("score_pairs_per_s_no_reuse", backend.score_without_reuse),
    ):
        start = time.perf_counter()
        scorer(contexts, candidates)
        rows[name] = pairs / (time.perf_counter() - start)
    rows["score_reuse_speedup"] = rows["score_pairs_per_s_reuse"] / rows["score_pairs_per_s_no_reuse"]
    return rows


def llamacpp_rows(args: argparse.Namespace) -> dict:
    try:
        from textagents.llm.llamacpp_backend import LlamaCppBackend

        start = time.perf_counter()
        backend = LlamaCppBackend(MODEL, n_threads=args.threads)
    except ImportError as error:
        return {"skipped": str(error)}
    load_s = time.perf_counter() - start
    backend.generate([PROMPT], max_tokens=4)

    def count(text: str) -> int:
        return len(backend.llm.tokenize(text.encode(), add_bos=False))

    rows = {"load_s": load_s}
    for batch in (1, 8):  # llama-cpp-python decodes one sequence at a time
        rows[f"generate_tokens_per_s_batch{batch}"] = tokens_per_second(
            backend.generate, [PROMPT] * batch, args.tokens, count
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=32, help="new tokens per generation")
    parser.add_argument("--threads", type=int, default=2, help="torch and llama.cpp threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    result = {
        "model": MODEL,
        "threads": args.threads,
        "new_tokens": args.tokens,
        "transformers_float32": transformers_rows(args),
        "llama_cpp_q4_1": llamacpp_rows(args),
    }
    print(write_result("perf_smollm2", result).read_text())


if __name__ == "__main__":
    main()
