"""Throughput of ``score()`` with context reuse against one forward pass per (context, candidate), and the
round-trip latency of ``textagents serve``.

A GLAM-sized decision: 32 BabyAI-Text prompts (GLAM's template over real captions of seeded rollouts),
6 candidate commands each, a local random GPT-2-architecture model built in a temp dir (no download).
Both scorers run in this process on the same batch; their scores are checked equal. Then the model is
served on loopback and the real ``openai`` client measures chat latency and ``score`` through the server.
Writes ``benchmarks/results/perf_textagents.json`` (target: reuse/no-reuse >= 3).
Run: ``python benchmarks/perf/perf_textagents.py [--seconds 5] [--hidden 256] [--layers 4]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import gymnasium as gym
import numpy as np
import openai
import torch
from common import rate, write_result

import textenvs  # noqa: F401  (registers the ids)
from textagents.agents import GlamPrompt
from textagents.llm import OpenAIBackend
from textagents.llm.server import ModelHTTPServer
from textagents.llm.transformers_backend import TransformersBackend
from textagents.testing import build_tiny_models

COMMANDS = ["turn left", "turn right", "go forward", "pick up", "drop", "toggle"]


def glam_contexts(count: int, seed: int = 0) -> list[str]:
    """``count`` GLAM prompts from random rollouts of BabyAI-Text-GoToLocal (3 observations, 2 actions)."""
    env = gym.make("BabyAI-Text-GoToLocal-v0")
    rng = np.random.default_rng(seed)
    contexts: list[str] = []
    while len(contexts) < count:
        obs, info = env.reset(seed=int(rng.integers(1 << 30)))
        builder = GlamPrompt()
        builder.reset(obs, info)
        for _ in range(3):
            prompt = builder.build(obs, info).text
            command = COMMANDS[int(rng.integers(3))]
            builder.record(command)
            obs, _, terminated, truncated, info = env.step(command)
            if terminated or truncated:
                break
        contexts.append(prompt)
    return contexts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: stable on shared machines)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    contexts = glam_contexts(32)
    candidates = [COMMANDS] * len(contexts)
    with tempfile.TemporaryDirectory() as tmp:
        models = build_tiny_models(tmp, hidden_size=args.hidden, layers=args.layers)
        backend = TransformersBackend(models.causal, batch_size=32)
        context_tokens = [len(backend.encode(c)) for c in contexts]

        reused = backend.score(contexts, candidates)
        baseline = backend.score_without_reuse(contexts, candidates)
        max_diff = float(np.max(np.abs(np.asarray(reused) - np.asarray(baseline))))

        decisions = len(contexts)
        reuse_rate = decisions * rate(lambda: backend.score(contexts, candidates), args.seconds, 3)
        baseline_rate = decisions * rate(lambda: backend.score_without_reuse(contexts, candidates), args.seconds, 3)

        server = ModelHTTPServer(backend, port=0, model_name="bench").start()
        try:
            client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)
            messages = [{"role": "user", "content": "go to the red ball"}]
            latencies = []
            for _ in range(30):
                start = time.perf_counter()
                client.chat.completions.create(model="bench", messages=messages, max_tokens=1, temperature=0)
                latencies.append(time.perf_counter() - start)
            models_latency = []
            for _ in range(30):
                start = time.perf_counter()
                client.models.list()
                models_latency.append(time.perf_counter() - start)
            remote = OpenAIBackend("bench", base_url=server.url, tokenizer=backend.tokenizer)
            remote_scores = remote.score(contexts[:4], candidates[:4])
            remote_diff = float(np.max(np.abs(np.asarray(remote_scores) - np.asarray(reused[:4]))))
            remote_rate = 4 * rate(lambda: remote.score(contexts[:4], candidates[:4]), args.seconds, 2)
        finally:
            server.stop()

    result = {
        "model": {
            "architecture": "gpt2",
            "hidden_size": args.hidden,
            "layers": args.layers,
            "torch_threads": args.threads,
        },
        "batch": {
            "contexts": decisions,
            "candidates_per_context": len(COMMANDS),
            "mean_context_tokens": float(np.mean(context_tokens)),
        },
        "score_decisions_per_s": {"context_reuse": reuse_rate, "one_pass_per_pair": baseline_rate},
        "reuse_speedup": reuse_rate / baseline_rate,
        "target_speedup": 3.0,
        "max_abs_score_difference": max_diff,
        "serve": {
            "chat_1_token_latency_ms_median": 1000 * statistics.median(latencies),
            "chat_1_token_latency_ms_p90": 1000 * float(np.percentile(latencies, 90)),
            "models_latency_ms_median": 1000 * statistics.median(models_latency),
            "score_decisions_per_s_through_server": remote_rate,
            "max_abs_score_difference_vs_in_process": remote_diff,
        },
    }
    path = write_result("perf_textagents", result)
    print(f"reuse {reuse_rate:.1f} vs {baseline_rate:.1f} decisions/s: x{result['reuse_speedup']:.2f} -> {path}")


if __name__ == "__main__":
    main()
