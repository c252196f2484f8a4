"""LLM-Personalize's planning calls on SmolLM2-135M-Instruct: transformers, one batch of 16 first prompts of a
``cpu.yaml`` evaluation (2 episodes per scene and split; ``chat_batch``, as ``planner.play`` sends a round's
prompts), against llama.cpp on the F16
GGUF export of the same weights (``rollout_backend: llamacpp``: one call after another), alternated in one
process, one thread each, ``cpu.yaml``'s sampling (temperature 1, top_p 0.9, penalties 0.2). Reports planning
calls per second of wall time and of this process's CPU time, new tokens/s, the ratios llama.cpp /
transformers, and episodes/hour at the planning calls per episode of the recorded CPU run (``results/cpu``:
zero-shot 6.1, IL 4.2), with the machine's load average before and after.

Also checks the export (skipped with ``--no-agreement``): llama.cpp's logits on the exported F16 GGUF (float32
KV cache) against transformers' on the float32 safetensors, at every position of 10 prompts (top-1 agreement,
largest |difference|), beside the downloaded Q4_1 GGUF's.

``--pieces`` times what a ``cpu.yaml`` run is made of, each piece once, and projects the run's time from them
(``projection``): the prompt alone (``max_tokens`` 1), and so the cost of a prompt token and of a new token,
on each backend; whole zero-shot episodes of the faithful loop (one per scene, a test episode) on each
backend: episodes per CPU hour; one SayPlan episode (on the rollout backend) and one SayCan episode
(transformers' scores), with the baselines' command budget; choosing the demonstrations; one imitation
fine-tuning on 16 pairs (CPU seconds per pair); the GGUF export. The projection counts, per seed, every piece
``cpu.yaml`` runs, in CPU seconds of one thread (a seed per idle core: two seeds side by side take about as
long as one), with the calls per episode of a fine-tuned planner (``TRAINED_CALLS_PER_EPISODE``), its
prompts' and answers' lengths and the pairs a self-training round keeps (``SELF_TRAINING_PAIRS``) assumed:
no fine-tuned planner is measured.

Needs `textagents download smollm2` and llama-cpp-python. Writes
``benchmarks/results/perf_llm_personalize_backends.json``.
Run: ``python benchmarks/perf/perf_llm_personalize_backends.py [--rounds 1] [--threads 1] [--no-agreement]
[--pieces]`` (one round of each: ~5 minutes on the 2 shared cores; ``--pieces``: ~15 minutes more on an idle
core).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import write_result

from textagents.llm.base import chat_batch
from textagents.llm.models import gguf_path
from textagents.llm.transformers_backend import TransformersBackend
from textagents.methods.core.config import load_config
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.demonstrations import select_demonstrations
from textagents.methods.llm_personalize.finetune import FinetuneSettings, finetune
from textagents.methods.llm_personalize.planner import PAPER_SAMPLING, planner_messages, play
from textagents.methods.llm_personalize.rollout_backend import LlamaCppPlanner, gguf_in
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.sampling import paper_split_indices

MODEL = "smollm2-135m-instruct"
CPU_YAML = Path(__file__).resolve().parents[1] / "methods" / "llm_personalize" / "cpu.yaml"
#: Planning calls per episode of the recorded CPU run (docs/methods/llm_personalize.md, results/cpu).
CALLS_PER_EPISODE = {"zero_shot": 6.1, "il": 4.2}
#: Assumed for a fine-tuned planner (none is measured here): planning calls per episode (results/cpu's IL),
#: prompt tokens per call (results/cpu's IL evaluation: 336 for the first prompts, ~860 once the rooms are
#: swept), new tokens per answer (the demonstrations' plans: 40-250 characters, ~60 tokens) and pairs kept per
#: self-training round (the target of issue #36: tens).
TRAINED_CALLS_PER_EPISODE = 4.2
TRAINED_PROMPT_TOKENS = 750
TRAINED_TOKENS_PER_CALL = 60
SELF_TRAINING_PAIRS = 40
ROUND_EPISODES = 2  # per scene and split: the 16 prompts of the rounds measured before (commits 59ff67f, dfef3c7)
SFT_PAIRS = 16
EXTRA_PROMPTS = ("You are a household robot. List three things to tidy in a living room:\n1.", "step 1: go to")
GGML_TYPE_F32 = 0


def round_prompts(config: LLMPersonalizeConfig, per_scene: int = ROUND_EPISODES) -> list[list[dict[str, str]]]:
    """The first planning prompt of the first ``per_scene`` evaluation episodes of each scene and split (a
    lockstep batch of ``cpu.yaml``'s evaluation rounds: 16 prompts, whatever its ``eval_episodes``)."""
    env = HousekeepTextEnv(scenes=list(config.scenes), episode_source="llm_personalize")
    prompts = []
    for split in ("train", "test"):
        for scene in config.scenes:
            for index in paper_split_indices(split)[:per_scene]:
                obs, _ = env.reset(seed=index, options={"scene": scene, "episode_index": index})
                prompts.append(planner_messages(obs["text"]))
    env.close()
    return prompts


def timed_round(backend: Any, prompts: list, sampling: dict[str, Any], seed: int) -> dict[str, float]:
    usage = backend.usage
    before, prompt_before = usage.completion_tokens, usage.prompt_tokens
    start, cpu_start = time.perf_counter(), time.process_time()
    chat_batch(backend, prompts, **sampling, seed=seed)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "calls": len(prompts),
        "prompt_tokens": usage.prompt_tokens - prompt_before,
        "new_tokens": usage.completion_tokens - before,
    }


def summary(rounds: list[dict[str, float]]) -> dict[str, Any]:
    """Rates over wall time (what a run on this machine gets, under its load) and over this process's CPU
    time (one thread each: what an idle core would give, less sensitive to the other jobs)."""
    seconds = sum(r["seconds"] for r in rounds)
    cpu_seconds = sum(r["cpu_seconds"] for r in rounds)
    calls = sum(r["calls"] for r in rounds)
    tokens = sum(r["new_tokens"] for r in rounds)
    per_s = calls / seconds
    return {
        "rounds": rounds,
        "planning_calls_per_s": per_s,
        "planning_calls_per_cpu_s": calls / cpu_seconds,
        "new_tokens_per_s": tokens / seconds,
        "new_tokens_per_call": tokens / calls,
        **{f"episodes_per_hour_{k}": 3600 * per_s / v for k, v in CALLS_PER_EPISODE.items()},
        **{f"episodes_per_cpu_hour_{k}": 3600 * calls / cpu_seconds / v for k, v in CALLS_PER_EPISODE.items()},
    }


def logit_agreement(llama_path: Path, local: TransformersBackend, prompts: list[list[int]]) -> dict[str, float]:
    """llama.cpp's logits (float32 KV cache) against transformers' at every position of ``prompts``."""
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(llama_path),
        n_ctx=1024,
        n_threads=torch.get_num_threads(),
        logits_all=True,
        verbose=False,
        type_k=GGML_TYPE_F32,
        type_v=GGML_TYPE_F32,
    )
    agree = positions = last_agree = 0
    largest = 0.0
    try:
        for ids in prompts:
            llm.reset()
            llm.eval(ids)
            ours = np.asarray(llm.scores[: len(ids)])
            with torch.no_grad():
                expected = local.model(torch.tensor([ids])).logits[0].float().numpy()
            agree += int((ours.argmax(-1) == expected.argmax(-1)).sum())
            last_agree += int(ours[-1].argmax() == expected[-1].argmax())
            positions += len(ids)
            largest = max(largest, float(np.abs(ours - expected).max()))
    finally:
        llm.close()
    return {
        "prompts": len(prompts),
        "positions": positions,
        "top1_agreement": agree / positions,
        "last_position_top1_agreement": last_agree / len(prompts),
        "max_abs_logit_difference": largest,
    }


class CpuClock:
    """Wall and CPU seconds of a block (``with CpuClock() as clock: ...; clock.cpu_seconds``)."""

    def __enter__(self) -> CpuClock:
        self.start, self.cpu_start = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
        self.cpu_seconds = time.process_time() - self.cpu_start


def timed_episodes(backend: Any, config: LLMPersonalizeConfig, variant: str, jobs: list) -> dict[str, float]:
    """Whole episodes of ``variant`` played together with ``config``'s sampling and rules."""
    make_env = lambda: HousekeepTextEnv(scenes=list(config.scenes), episode_source="llm_personalize")  # noqa: E731
    before = backend.usage.completion_tokens
    with CpuClock() as clock:
        runs = play(
            make_env, backend, jobs, variant=variant, sampling=config.sampling(), rules=config.plan_rules(variant)
        )
    calls = sum(len(run.calls) for run in runs)
    return {
        "episodes": len(runs),
        "seconds": clock.seconds,
        "cpu_seconds": clock.cpu_seconds,
        "planning_calls_per_episode": calls / len(runs),
        "new_tokens_per_call": (backend.usage.completion_tokens - before) / max(1, calls),
        "cpu_seconds_per_call": clock.cpu_seconds / max(1, calls),
        "episodes_per_cpu_hour": 3600 * len(runs) / clock.cpu_seconds,
        "episodes_per_hour": 3600 * len(runs) / clock.seconds,
    }


def measure_pieces(local: Any, llama: Any, prompts: list, config: LLMPersonalizeConfig, folder: Path) -> dict:
    """Each piece of a ``cpu.yaml`` run, once (the module docstring)."""
    sampling = {**PAPER_SAMPLING, **config.sampling()}
    prompt_only = {**sampling, "max_tokens": 1}
    test = [(scene, paper_split_indices("test")[0]) for scene in config.scenes]
    pieces: dict[str, Any] = {}
    for name, backend in (("transformers", local), ("llama_cpp", llama)):
        pieces[name] = {
            "prompt_only_round": timed_round(backend, prompts, prompt_only, 0),
            "zero_shot_episodes": timed_episodes(backend, config, "planner", test),
        }
    planner = llama if config.rollout_backend == "llamacpp" else local
    pieces["sayplan_episode"] = timed_episodes(planner, config, "sayplan", test[:1])
    pieces["saycan_episode"] = timed_episodes(local, config, "saycan", test[:1])  # scores stay on transformers
    with CpuClock() as clock:
        chosen = select_demonstrations(config.scenes, config.train_demonstrations, config.validation_demonstrations)
    pairs = [pair for scene in config.scenes for pair in chosen.train[scene]]
    pieces["demonstrations"] = {"cpu_seconds": clock.cpu_seconds, "imitation_pairs": len(pairs)}
    settings = FinetuneSettings(
        epochs=1.0,
        learning_rate=config.learning_rate,
        batch_size=config.batch_size,
        lora=config.lora,
        lora_r=config.lora_r,
        max_length=config.max_length,
    )
    with CpuClock() as clock:
        finetune(local, pairs[:SFT_PAIRS], folder / "sft", settings)
    pieces["sft"] = {
        "pairs": SFT_PAIRS,
        "cpu_seconds": clock.cpu_seconds,
        "cpu_seconds_per_pair": clock.cpu_seconds / SFT_PAIRS,
    }
    return pieces


def project(config: LLMPersonalizeConfig, rounds: dict, pieces: dict, export_cpu_s: float) -> dict[str, Any]:
    """CPU seconds of one thread for each piece of one seed's ``config`` run (the module docstring)."""
    backend = "llama_cpp" if config.rollout_backend == "llamacpp" else "transformers"
    measured = pieces[backend]
    full = rounds["llama_cpp_sequential" if backend == "llama_cpp" else "transformers_batched"]["rounds"]
    prompt = measured["prompt_only_round"]
    prompt_token_s = prompt["cpu_seconds"] / prompt["prompt_tokens"]
    token_s = (sum(r["cpu_seconds"] for r in full) - len(full) * prompt["cpu_seconds"]) / sum(
        r["new_tokens"] for r in full
    )
    trained_call_s = TRAINED_PROMPT_TOKENS * prompt_token_s + TRAINED_TOKENS_PER_CALL * token_s
    evaluated = 2 * config.eval_episodes * len(config.scenes)
    baseline_episodes = 2 * (config.baseline_eval_episodes or config.eval_episodes) * len(config.scenes)
    rollouts = config.self_training_rollouts * len(config.scenes)
    imitation_pairs = pieces["demonstrations"]["imitation_pairs"]
    pair_s = pieces["sft"]["cpu_seconds_per_pair"]
    seconds = {
        "demonstrations": pieces["demonstrations"]["cpu_seconds"],
        "zero_shot_evaluation": evaluated / measured["zero_shot_episodes"]["episodes_per_cpu_hour"] * 3600,
        "fine_tuned_evaluations": config.iterations * evaluated * TRAINED_CALLS_PER_EPISODE * trained_call_s,
        "self_training_rollouts": (config.iterations - 1) * rollouts * TRAINED_CALLS_PER_EPISODE * trained_call_s,
        "imitation_sft": imitation_pairs * config.epochs * pair_s,
        "self_training_sft": (config.iterations - 1) * SELF_TRAINING_PAIRS * pair_s,
        "gguf_exports": (config.iterations + 1) * export_cpu_s if backend == "llama_cpp" else 0.0,
    }
    for baseline in config.baselines:
        episode = pieces[f"{baseline}_episode"]
        seconds[baseline] = baseline_episodes * episode["cpu_seconds"] / episode["episodes"]
    return {
        "rollout_backend": config.rollout_backend,
        "assumed": {
            "trained_calls_per_episode": TRAINED_CALLS_PER_EPISODE,
            "trained_prompt_tokens": TRAINED_PROMPT_TOKENS,
            "trained_tokens_per_call": TRAINED_TOKENS_PER_CALL,
            "self_training_pairs_per_round": SELF_TRAINING_PAIRS,
        },
        "cpu_seconds_per_prompt_token": prompt_token_s,
        "cpu_seconds_per_new_token": token_s,
        "cpu_seconds_per_fine_tuned_call": trained_call_s,
        "cpu_seconds_per_seed": seconds,
        "hours_per_seed_on_one_idle_core": sum(seconds.values()) / 3600,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds per backend, alternated")
    parser.add_argument("--threads", type=int, default=1, help="torch and llama.cpp threads")
    parser.add_argument("--no-agreement", action="store_true", help="skip the logits check of the export")
    parser.add_argument("--pieces", action="store_true", help="time each piece of a cpu.yaml run and project it")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    config = load_config(LLMPersonalizeConfig, CPU_YAML)
    sampling = {**PAPER_SAMPLING, **config.sampling()}
    prompts = round_prompts(config)
    local = TransformersBackend(MODEL, batch_size=len(prompts), dtype=torch.float32)
    agreement: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        planner = LlamaCppPlanner(MODEL, "f16", record=None, threads=args.threads)
        with CpuClock() as export:
            planner.export(local, folder)
        llama = planner.backend(local, folder)
        exported = gguf_in(folder, "f16")
        if not args.no_agreement:
            probe = [local.encode(local.chat_prompt(m)) for m in prompts[:8]]
            probe += [local.encode(t) for t in EXTRA_PROMPTS]
            agreement = {
                "f16_export": logit_agreement(exported, local, probe),
                "downloaded_q4_1": logit_agreement(gguf_path(MODEL), local, probe),
            }
        warm = {**sampling, "max_tokens": 4}
        chat_batch(local, prompts[:2], **warm, seed=0)
        chat_batch(llama, prompts[:2], **warm, seed=0)
        timings: dict[str, list[dict[str, float]]] = {"transformers_batched": [], "llama_cpp_sequential": []}
        for seed in range(args.rounds):
            timings["transformers_batched"].append(timed_round(local, prompts, sampling, seed))
            timings["llama_cpp_sequential"].append(timed_round(llama, prompts, sampling, seed))
        pieces = measure_pieces(local, llama, prompts, config, folder) if args.pieces else {}
        gguf_bytes = exported.stat().st_size
        planner.close()
    rows = {name: summary(rounds) for name, rounds in timings.items()}
    llama_row, transformers_row = rows["llama_cpp_sequential"], rows["transformers_batched"]
    result = {
        "model": MODEL,
        "threads": args.threads,
        "batch": len(prompts),
        "sampling": {k: v for k, v in sampling.items() if k != "stop"},
        "load_average_before_after": [load_before, os.getloadavg()],
        "export_f16_s": export.seconds,
        "export_f16_cpu_s": export.cpu_seconds,
        "export_f16_bytes": gguf_bytes,
        **({"logits_against_transformers": agreement} if agreement else {}),
        **rows,
        "llama_cpp_over_transformers": {
            key: llama_row[key] / transformers_row[key]
            for key in ("planning_calls_per_s", "planning_calls_per_cpu_s", "new_tokens_per_s")
        },
    }
    if pieces:
        result["pieces"] = pieces
        result["projection"] = project(config, rows, pieces, export.cpu_seconds)
    print(write_result("perf_llm_personalize_backends", result).read_text())


if __name__ == "__main__":
    main()
