"""Each method's GPU path, a few time-boxed iterations with paper-sized random models, and the same code on the CPU
for a small fixed number of steps: throughput and peak GPU memory per part, written to a JSON file as it goes.

No network and no pretrained weights are needed: the LLMs are built from their configs (Flan-T5-large's for
GLAM, SmolLM2-135M's for LLM-Personalize) with random weights and a tokenizer trained here, and the RL parts
(ELLM's DQN, LGQD's decision transformer) learn from synthetic inputs of the paper's shapes; GLAM's rollouts and
BK's PPO run on BabyAI-Text itself. Each part is in its own try/except, so one failure loses only that part.
``--merge`` re-measures some parts into an earlier JSON of the same machine and settings (each part dated).

    python benchmarks/gpu/check.py --device cuda --budget-s 30 --out $OUT/gpu_check.json   # on a GPU machine
    python benchmarks/gpu/check.py --device cpu --quick --out /tmp/gpu_check.json            # here: tiny sizes
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from textagents.bench.store import write_json_atomic
from textagents.device import resolve_device, resolve_dtype

#: Flan-T5-large's architecture (google/flan-t5-large config.json), GLAM's paper model.
FLAN_T5_LARGE = {
    "d_model": 1024,
    "d_ff": 2816,
    "d_kv": 64,
    "num_layers": 24,
    "num_decoder_layers": 24,
    "num_heads": 16,
    "feed_forward_proj": "gated-gelu",
    "tie_word_embeddings": False,
    "vocab_size": 32128,
}
#: SmolLM2-135M-Instruct's architecture (its config.json), LLM-Personalize's model here.
SMOLLM2_135M = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 8192,
    "rope_theta": 100000.0,
    "tie_word_embeddings": True,
    "vocab_size": 49152,
}
#: The same architectures, small, for --quick.
QUICK_T5 = {"d_model": 64, "d_ff": 128, "d_kv": 16, "num_layers": 2, "num_heads": 4, "vocab_size": 1000}
QUICK_LLAMA = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}

PROMPT = (
    "You are in a room. Your goal is to go to the red ball. You see a wall 2 steps forward, a red ball 1 step left "
    "and 2 steps forward, a grey key 3 steps right. Possible actions: turn left, turn right, go forward, pick up, "
    "drop, toggle. Action:"
)
COMMANDS = ["turn left", "turn right", "go forward", "pick up", "drop", "toggle"]


def tokenizer_for(texts: list[str]):
    from textagents.testing import train_tokenizer

    return train_tokenizer([*texts, PROMPT, *COMMANDS])


def saved_model(kind: str, sizes: dict[str, Any], folder: Path, texts: list[str] | None = None) -> Path:
    """A random ``kind`` (t5 / llama) model with ``sizes`` and a tokenizer trained here (also on ``texts``),
    saved in ``folder``."""
    from transformers import LlamaConfig, LlamaForCausalLM, T5Config, T5ForConditionalGeneration

    tokenizer = tokenizer_for(texts or [])
    ids = {"pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # a random init of 780M weights: ~15 s on a CPU
        if kind == "t5":
            model = T5ForConditionalGeneration(T5Config(**sizes, **ids, decoder_start_token_id=tokenizer.pad_token_id))
        else:
            model = LlamaForCausalLM(LlamaConfig(**sizes, **ids, bos_token_id=tokenizer.eos_token_id))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def cuda_peak() -> float | None:
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None


def synced(device: str) -> float:
    """``time.perf_counter()`` once the device has finished its queued work."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def allocator_counts(device: str) -> dict[str, int]:
    """On CUDA, how often the caching allocator called cudaMalloc and how often it had to free its cache and
    retry (a sign of memory pressure that costs time); nothing elsewhere."""
    if torch.device(device).type != "cuda":
        return {}
    stats = torch.cuda.memory_stats(device)
    return {"cuda_mallocs": int(stats.get("num_device_alloc", 0)), "alloc_retries": int(stats["num_alloc_retries"])}


def timed(step: Callable[[], int], device: str, budget_s: float, max_steps: int) -> tuple[int, float, int]:
    """Run ``step`` (it returns the units it processed) until ``budget_s`` or ``max_steps``, on CUDA after one
    warm-up step that is not counted (kernels, allocator): (units, seconds, steps)."""
    if device != "cpu":
        step()
    units, steps, start = 0, 0, time.perf_counter()
    while steps < max_steps and time.perf_counter() - start < budget_s:
        units += step()
        steps += 1
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return units, time.perf_counter() - start, steps


# ---------------------------------------------------------------------- parts
def glam(
    device: str,
    budget_s: float,
    quick: bool,
    max_steps: int,
    micro_batch: int = 4,
    forward_batch: int = 16,
    frames_per_env: int | None = None,
    cross_attention: str = "auto",
    pass_tokens: int | None = None,
) -> dict[str, Any]:
    """GLAM's PPO on the LLM (lamorel-style Caller), as ``glam.llm_learner`` runs it: each frame scores every
    env's commands and values its state (BabyAI-Text GoToLocal, GLAM's prompt), samples the commands and steps
    the envs; an iteration is 4 frames of the paper's 32 envs, then the paper's update (4 epochs, minibatches
    of 64 in ``micro_batch``es, the paper's 4; the same update work per frame as its 40 frames), with at most
    ``forward_batch`` prompts a forward pass (the config's, default 16). On the CPU: 8 envs, 1 frame.
    ``frames_per_env`` sets another length (a short iteration to profile); ``cross_attention`` as the config's
    (``auto``: ``per_candidate`` on a GPU); ``pass_tokens`` another cap on a pass's padded tokens than the
    config's 256 a prompt, which splits GLAM's longer prompts (up to ~380 tokens) into more passes. The
    tokenizer is a small BPE trained here (longer token sequences than T5's would be: a conservative rate)."""
    from transformers import AutoTokenizer

    from textagents.llm.lamorel import Caller, LLMSpec
    from textagents.llm.transformers_backend import ValueHead
    from textagents.methods.glam.episodes import Episodes
    from textagents.methods.glam.llm_learner import forward_batching
    from textagents.methods.glam.ppo import PPOSettings
    from textagents.methods.glam.scoring import POLICY, CommandScores
    from textagents.methods.glam.updater import VALUE, PPOUpdater

    envs, frames = (4, 2) if quick else (32, 4) if device != "cpu" else (8, 1)  # the CPU: a sample
    frames_per_env = frames_per_env or frames
    episodes = Episodes("BabyAI-Text-GoToLocal-v0", envs, None, first_seed=0)
    settings = PPOSettings(epochs=4, minibatch_size=64)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        texts = [episodes.context(i) for i in range(envs)]
        path = saved_model("t5", QUICK_T5 if quick else FLAN_T5_LARGE, Path(folder), texts)
        heads = {POLICY: CommandScores, VALUE: functools.partial(ValueHead, width=64 if quick else 1024)}
        options = {**forward_batching(forward_batch), "cross_attention": cross_attention}
        if pass_tokens is not None:
            options["max_batch_tokens"] = pass_tokens
        spec = LLMSpec(str(path), heads, device=device, dtype="auto", backend_options=options)
        scored: list[str] = []
        phases: list[dict[str, float]] = []  # per iteration: seconds scoring, updating, in all
        with Caller(spec, PPOUpdater(settings, micro_batch=micro_batch)) as caller:

            def iteration() -> int:
                contexts, candidates, actions, logprobs, values = [], [], [], [], []
                phase = {"score_s": 0.0, "update_s": 0.0, "iteration_s": synced(device)}
                for _ in range(frames_per_env):
                    step_contexts = [episodes.context(i) for i in range(envs)]
                    scored.extend(step_contexts)
                    step_candidates = [episodes.candidates(i) for i in range(envs)]
                    start = synced(device)
                    rows = caller.custom_module_fns([POLICY, VALUE], step_contexts, step_candidates)
                    phase["score_s"] += synced(device) - start
                    for i, row in enumerate(rows):
                        scores = np.asarray(row[POLICY], dtype=np.float64)
                        log_probs = scores - np.logaddexp.reduce(scores)
                        action = int(rng.choice(len(log_probs), p=np.exp(log_probs)))
                        episodes.step(i, action)
                        actions.append(action)
                        logprobs.append(float(log_probs[action]))
                        values.append(float(row[VALUE][0]))
                    contexts += step_contexts
                    candidates += step_candidates
                n = len(contexts)
                start = synced(device)
                caller.update(
                    contexts,
                    candidates,
                    actions=actions,
                    logprobs=logprobs,
                    values=values,
                    advantages=rng.normal(size=n).tolist(),
                    returns=rng.normal(size=n).tolist(),
                    minibatches=max(1, round(n / settings.minibatch_size)),
                    seed=0,
                )
                phase["update_s"] = synced(device) - start
                phase["iteration_s"] = synced(device) - phase["iteration_s"]
                phases.append(phase)
                return n

            frames, seconds, steps = timed(iteration, device, budget_s, max_steps)
        timed_phases = phases[-steps:]  # not the warm-up's
        tokenizer = AutoTokenizer.from_pretrained(path)  # the one saved with the model
        tokens = [len(tokenizer.encode(text)) for text in scored]  # every prompt scored, the warm-up's too
    episodes.close()
    return {
        "frames_per_s": frames / seconds,
        "frames": frames,
        "iterations": steps,
        "seconds": seconds,
        "prompt_tokens_mean": float(np.mean(tokens)),
        **{f"{key}_per_iteration": float(np.mean([p[key] for p in timed_phases])) for key in timed_phases[0]},
        **allocator_counts(device),
    }


def ellm(
    device: str, budget_s: float, quick: bool, max_steps: int, cuda_graphs: bool = False, replay_on_device: bool = False
) -> dict[str, Any]:
    """ELLM's DQN (dueling, double, 3-step) at the paper's sizes on synthetic 84x84x4 frames and 384-d caption
    embeddings: acting and an update every 4 frames, batch 64; ``cuda_graphs`` and ``replay_on_device`` as the
    options."""
    from textagents.methods.core.allocator import keep_freed_memory
    from textagents.methods.ellm.dqn import DQNAgent, DQNSettings

    keep_freed_memory()  # as EllmMethod does: without it each batch drawn from the replay faults its pages in anew
    shape, hidden, text = ((36, 36, 1), 32, 16) if quick else ((84, 84, 4), 512, 384)
    settings = DQNSettings(
        buffer_size=20_000, learning_starts=256, epsilon_frames=10**9, cuda_graphs=cuda_graphs,
        replay_on_device=replay_on_device,
    )  # fmt: skip
    agent = DQNAgent(text, 17, settings, frame_shape=shape, hidden=hidden, device=resolve_device(device))
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (256, *shape), dtype=np.uint8)
    texts = rng.normal(size=(256, text)).astype(np.float32)

    def chunk() -> int:
        for _ in range(64):
            t = agent.frames
            frame, caption = frames[t % 256], texts[t % 256]
            action = agent.act(frame, caption, epsilon=0.0)
            ended = t % 400 == 399  # 400-frame episodes: the replay draws finished episodes only
            agent.observe(frame, caption, action, 0.0, frame, caption, ended, False)
        return 64

    while agent.frames < settings.learning_starts:
        chunk()
    done, seconds, _ = timed(chunk, device, budget_s, max_steps)
    return {"frames_per_s": done / seconds, "frames": done, "updates": len(agent.losses), "seconds": seconds}


def bk(
    device: str, budget_s: float, quick: bool, max_steps: int, vec_env: str = "sync", envs: int = 8
) -> dict[str, Any]:
    """BK's PPO (SB3 with the original's update and policy network) on BabyAI-Text, no shaping: an iteration is
    one update on ``envs`` envs (the paper's 8) x 128 steps, the envs in this process or (``vec_env``) in
    subprocesses. Quick: 16 steps per env (and 2 envs where the paper's 8 are asked)."""
    import textenvs  # noqa: F401  (registers the envs)
    from textagents.methods.bk.config import BKConfig
    from textagents.methods.bk.method import BKMethod
    from textagents.methods.core.config import config_from_dict
    from textagents.methods.core.method import RunContext

    settings: dict[str, Any] = {"shaping": "none", "device": device, "eval_episodes": 1, "vec_env": vec_env}
    settings.update(envs=envs, steps_per_env=128)
    if quick:
        settings.update(envs=2 if envs == 8 else envs, steps_per_env=16, minibatch_size=32)
    settings["frames_per_iteration"] = settings["envs"] * settings["steps_per_env"]  # one update
    config = config_from_dict(BKConfig, settings, "gpu check")
    with tempfile.TemporaryDirectory() as folder:
        method = BKMethod(config, RunContext(Path(folder), llm=lambda: None))
        count = iter(range(1, 10**6))
        try:

            def iteration() -> int:
                before = method.frames
                method.train_iteration(next(count))
                return method.frames - before

            frames, seconds, steps = timed(iteration, device, budget_s, max_steps)
        finally:
            method.close()
    return {"frames_per_s": frames / seconds, "frames": frames, "iterations": steps, "seconds": seconds}


def llm_personalize(device: str, budget_s: float, quick: bool, max_steps: int) -> dict[str, Any]:
    """LLM-Personalize's trl SFT (LoRA) on plans, then the planner's generation, on a SmolLM2-135M-sized model."""
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.methods.llm_personalize.finetune import FinetuneSettings, finetune

    torch_device = resolve_device(device)
    pairs = [
        [
            {"role": "system", "content": "You plan a household robot's tasks."},
            {"role": "user", "content": f"Room {i}: a cup on the floor, a book on the bed. Where does each go?"},
            {"role": "assistant", "content": "1. pick up cup\n2. place cup in cabinet\n3. pick up book"},
        ]
        for i in range(16)
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = saved_model("llama", QUICK_LLAMA if quick else SMOLLM2_135M, Path(folder) / "model")
        backend = TransformersBackend(path, device=torch_device, dtype=resolve_dtype("auto", torch_device))
        start = time.perf_counter()
        losses = finetune(backend, pairs, Path(folder) / "tuned", FinetuneSettings(epochs=1, max_length=256))
        sft_s = time.perf_counter() - start
        prompts = [backend.chat_prompt(pair[:2]) for pair in pairs[:8]]
        max_tokens = 8 if quick else 64

        def generate() -> int:  # sampled: a random model's greedy choice can be its end token at once
            before = backend.usage.completion_tokens
            backend.generate(prompts, max_tokens=max_tokens, temperature=1.0, seed=0)
            return backend.usage.completion_tokens - before

        tokens, seconds, steps = timed(generate, device, budget_s / 2, max_steps)
    return {
        "sft_examples_per_s": len(pairs) / sft_s,
        "sft_seconds": sft_s,
        "loss_first": losses["loss_first"],
        "generated_tokens_per_s": tokens / seconds,
        "generated_tokens": tokens,
        "generate_calls": steps,
    }


def lgqd(device: str, budget_s: float, quick: bool, max_steps: int) -> dict[str, Any]:
    """LGQD's decision transformer at the paper's sizes (2 layers, 4 heads, 360-d, batch 30, 400 steps) on
    synthetic episodes of the archive's shapes."""
    from textagents.methods.lgqd.action_clusters import ActionClusters
    from textagents.methods.lgqd.config import LGQDConfig
    from textagents.methods.lgqd.dt import DecisionTransformer, DTTrainer, Episode

    settings = LGQDConfig().dt_settings()
    steps = 40 if quick else settings.max_steps
    rng = np.random.default_rng(0)
    descriptions = [
        f"the robot drives to the {w} of the {r}" for w in ("left", "right", "door") for r in ("hall", "bed")
    ]
    episodes = [
        Episode(
            descriptions[i % len(descriptions)],
            rng.uniform(0, 600, 2),
            rng.uniform(0, 1, (steps, 5)),
            rng.uniform(-4, 4, (steps, 2)),
        )
        for i in range(120)
    ]
    tokenizer = tokenizer_for(descriptions)
    clusters = ActionClusters(np.tile(np.linspace(-3, 3, 4), (2, 1)))
    torch.manual_seed(0)
    model = DecisionTransformer(settings, len(tokenizer), clusters)
    trainer = DTTrainer(model, tokenizer, clusters, episodes, episodes[:30], seed=0, device=resolve_device(device))
    count = iter(range(1, 10**6))

    def iteration() -> int:
        trainer.train_iteration(next(count))
        return settings.batch_size * settings.steps_per_iteration

    samples, seconds, done = timed(iteration, device, budget_s, max_steps)
    return {"samples_per_s": samples / seconds, "samples": samples, "steps": done, "seconds": seconds}


PARTS = {
    "glam": glam,
    "glam_micro_batch_64": functools.partial(glam, micro_batch=64),
    "glam_batch_32": functools.partial(glam, micro_batch=32, forward_batch=32),
    "glam_batch_32_per_prompt": functools.partial(glam, micro_batch=32, forward_batch=32, cross_attention="per_prompt"),
    "glam_batch_64": functools.partial(glam, micro_batch=64, forward_batch=64),
    "glam_batch_64_whole": functools.partial(glam, micro_batch=64, forward_batch=64, pass_tokens=64 * 512),
    "glam_batch_32_whole": functools.partial(glam, micro_batch=32, forward_batch=32, pass_tokens=32 * 512),
    "ellm": ellm,
    "ellm_cuda_graphs": functools.partial(ellm, cuda_graphs=True),
    "ellm_replay_on_device": functools.partial(ellm, cuda_graphs=True, replay_on_device=True),
    "bk": bk,
    "bk_subproc": functools.partial(bk, vec_env="subproc"),
    "bk_subproc_32": functools.partial(bk, vec_env="subproc", envs=32),
    "bk_subproc_64": functools.partial(bk, vec_env="subproc", envs=64),
    "llm_personalize": llm_personalize,
    "lgqd": lgqd,
}

#: Run only when named: the parts that need more than an 80 GB GPU (an H100 ran out), ``glam_batch_32_whole``
#: (``glam_batch_64``'s number of passes in passes of 32 whole prompts: ~12k tokens a pass against 16k; does it
#: fit an H100?), ``glam_batch_32`` with the CPU's cross-attention (an A/B of ``cross_attention``) and BK's PPO on
#: 4x and 8x the paper's envs (does a step's fixed cost, one policy forward and one round trip to the env
#: processes, bound it at 8?).
NAMED_ONLY = (
    "glam_batch_64",
    "glam_batch_64_whole",
    "glam_batch_32_whole",
    "glam_batch_32_per_prompt",
    "bk_subproc_32",
    "bk_subproc_64",
)
#: What a plain run measures.
DEFAULT_PARTS = [name for name in PARTS if name not in NAMED_ONLY]


# ---------------------------------------------------------------------- driver
def run_part(name: str, device: str, budget_s: float, quick: bool, max_steps: int) -> dict[str, Any]:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    try:
        result = {"ok": True, **PARTS[name](device, budget_s, quick, max_steps)}
    except Exception as error:  # one part's failure must not lose the others
        result = {"ok": False, "error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()[-3000:]}
    result["wall_s"] = time.perf_counter() - start
    if resolve_device(device).type == "cuda":
        result["peak_gpu_mib"] = cuda_peak()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "gpu_check.json")
    parser.add_argument("--budget-s", type=float, default=30.0, help="seconds each part times on --device")
    parser.add_argument(
        "--cpu-steps", type=int, default=1, help="steps each part but GLAM's times on the CPU too (0: none)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny models (a run here, on the CPU, in a minute)")
    parser.add_argument("--parts", nargs="+", choices=sorted(PARTS), default=DEFAULT_PARTS)
    parser.add_argument("--merge", action="store_true", help="keep --out's other parts (same GPU and settings)")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    device = resolve_device(args.device)
    report: dict[str, Any] = {
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "torch": torch.__version__,
        "quick": args.quick,
        "budget_s": args.budget_s,
        "parts": {},
    }
    if args.merge and args.out.exists():
        earlier = json.loads(args.out.read_text())
        if {k: v for k, v in earlier.items() if k != "parts"} != {k: v for k, v in report.items() if k != "parts"}:
            raise SystemExit(f"--merge: {args.out} was measured on another machine or with other settings")
        report["parts"] = earlier["parts"]
    for name in args.parts:
        entry = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        entry[str(device)] = run_part(name, str(device), args.budget_s, args.quick, 10**6)
        if device.type == "cuda" and args.cpu_steps and not name.startswith("glam"):  # a GLAM step takes minutes
            entry["cpu"] = run_part(name, "cpu", args.budget_s, args.quick, args.cpu_steps)
        report["parts"][name] = entry
        write_json_atomic(args.out, report)
        shown = {d: {k: v for k, v in r.items() if k != "traceback"} for d, r in entry.items() if d != "date"}
        print(json.dumps({name: shown}))


if __name__ == "__main__":
    main()
