"""GRPO with ``trl`` whose rollouts are textenvs episodes: SmolLM2-135M-Instruct plays BabyAI-Text turn by turn.

``GRPOTrainer`` gets ``rollout_func=TextEnvRolloutFunc(...)`` (``textagents.hub.grpo``): each group of
``num_generations`` completions is the same episode (env id + seed) played ``num_generations`` times by the
policy being trained, one command per turn, after a two-turn demonstration of the env's expert on another
seed; the reward functions read each episode's return and its share of valid commands. The policy also
plays ``eval_seeds`` (held-out episodes) before and after training.

Writes ``benchmarks/results/grpo_textenvs.json`` (config, versions, per-step reward, loss and episode
outcomes, the evaluations, example episodes) and ``grpo_textenvs.png``.
Run: ``python benchmarks/examples/grpo_textenvs.py [--config benchmarks/examples/grpo_textenvs.yaml]
[--max-steps N]`` (needs ``textagents download smollm2``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from textagents.device import check_device
from textenvs.data import read_yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "perf"))
from common import RESULTS_DIR, write_result  # noqa: E402

REWARD_FUNCTIONS = ("episode_return", "valid_command", "success")


@dataclasses.dataclass(frozen=True)
class ExampleConfig:
    """The YAML config (``grpo_textenvs.yaml`` documents each key)."""

    env_id: str
    model: str
    train_seeds: tuple[int, int]
    eval_seeds: tuple[int, int]
    max_turns: int
    turn_tokens: int
    max_completion_length: int
    num_generations: int
    episodes_per_step: int
    max_steps: int
    learning_rate: float
    temperature: float
    reward_weights: dict[str, float]
    demonstration_seed: int | None = None
    demonstration_turns: int = 2
    seed: int = 0
    threads: int = 1
    device: str = "auto"

    @classmethod
    def load(cls, path: Path) -> ExampleConfig:
        data = read_yaml(path)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown}; valid keys: {sorted(fields)}")
        bad = sorted(set(data.get("reward_weights", {})) - set(REWARD_FUNCTIONS))
        if bad:
            raise ValueError(f"{path}: unknown reward functions {bad}; valid: {list(REWARD_FUNCTIONS)}")
        data["train_seeds"] = tuple(data["train_seeds"])
        data["eval_seeds"] = tuple(data["eval_seeds"])
        return cls(**data)


def reward_functions(weights: dict[str, float]) -> tuple[list[Any], list[float]]:
    from textagents.hub.grpo import episode_return_reward, success_reward, valid_command_reward

    table = {"episode_return": episode_return_reward, "valid_command": valid_command_reward, "success": success_reward}
    names = list(weights)
    return [table[n] for n in names], [float(weights[n]) for n in names]


def episode_examples(rollouts: list[Any], count: int = 2) -> list[dict[str, Any]]:
    return [
        {
            "seed": r.spec.seed,
            "turns": [{"output": o, "command": c} for o, c in zip(r.outputs, r.commands, strict=True)],
            "return": r.episode_return,
            "success": r.success,
        }
        for r in rollouts[:count]
    ]


def step_records(log_history: list[dict[str, Any]], rollouts: list[dict[str, float]]) -> list[dict[str, Any]]:
    keys = ("reward", "reward_std", "loss", "grad_norm", "step_time", "completions/mean_length", "frac_reward_zero_std")
    logged = [entry for entry in log_history if "reward" in entry]
    rewards = [{k: v for k, v in entry.items() if k in keys or k.startswith("rewards/")} for entry in logged]
    return [{"step": i + 1, **r, **episodes} for i, (r, episodes) in enumerate(zip(rewards, rollouts, strict=False))]


def plot(steps: list[dict[str, Any]], before: dict[str, float], after: dict[str, float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from textagents.methods.lgqd.artifacts import save_figure

    x = [s["step"] for s in steps]
    figure, axes = plt.subplots(1, 3, figsize=(11, 3.0))
    reward, std = np.array([s["reward"] for s in steps]), np.array([s["reward_std"] for s in steps])
    axes[0].plot(x, reward, "o-", markersize=3)
    axes[0].fill_between(x, reward - std, reward + std, alpha=0.2)
    axes[0].set_title("GRPO reward (mean ± std of the batch)", fontsize=9)
    for ax, key, title in (
        (axes[1], "success_rate", "success rate"),
        (axes[2], "valid_fraction", "turns naming a valid command"),
    ):
        ax.plot(x, [s[key] for s in steps], "o-", markersize=3, label="training episodes")
        ax.axhline(before[key], color="grey", linestyle="--", label="held-out, before")
        ax.axhline(after[key], color="black", linestyle="-", label="held-out, after")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("optimizer step", fontsize=8)
        ax.grid(alpha=0.3)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=HERE / "grpo_textenvs.yaml")
    parser.add_argument("--max-steps", type=int, help="override the config's max_steps")
    parser.add_argument("--device", help="override the config's device: auto, cpu, cuda or cuda:N")
    parser.add_argument("--name", default="grpo_textenvs", help="result files benchmarks/results/<name>.{json,png}")
    args = parser.parse_args()
    config = ExampleConfig.load(args.config)
    if args.max_steps is not None:
        config = dataclasses.replace(config, max_steps=args.max_steps)
    if args.device is not None:
        config = dataclasses.replace(config, device=args.device)
    check_device(config.device)
    torch.set_num_threads(config.threads)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in trl; we know

    import transformers
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    from textagents.hub.chat import ChatStyle
    from textagents.hub.grpo import (
        RolloutSettings,
        TextEnvRolloutFunc,
        episode_dataset,
        grpo_config,
        play_with_model,
        summarize,
    )
    from textagents.hub.rollout import expert_demonstration
    from textagents.llm.models import resolve_model

    transformers.set_seed(config.seed)
    start = time.perf_counter()
    path = resolve_model(config.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    style = ChatStyle()
    if config.demonstration_seed is not None:
        style = expert_demonstration(config.env_id, config.demonstration_seed, config.demonstration_turns)
    rows = episode_dataset(config.env_id, range(*config.train_seeds), style)
    eval_rows = episode_dataset(config.env_id, range(*config.eval_seeds), style)
    settings = RolloutSettings(max_turns=config.max_turns, turn_tokens=config.turn_tokens, style=style)
    rollout = TextEnvRolloutFunc(rows, settings)
    functions, weights = reward_functions(config.reward_weights)
    with tempfile.TemporaryDirectory() as output_dir:
        trainer_config = grpo_config(
            output_dir,
            config.device,
            max_steps=config.max_steps,
            per_device_train_batch_size=config.episodes_per_step * config.num_generations,
            num_generations=config.num_generations,
            max_completion_length=config.max_completion_length,
            learning_rate=config.learning_rate,
            temperature=config.temperature,
            reward_weights=weights,
            beta=0.0,
            seed=config.seed,
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=functions,
            args=trainer_config,
            train_dataset=Dataset.from_list(rows),
            processing_class=tokenizer,
            rollout_func=rollout,
        )

        def evaluate() -> list[Any]:
            return play_with_model(
                trainer.model, tokenizer, eval_rows, settings, trainer.generation_config, config.max_completion_length
            )

        eval_start = time.perf_counter()
        before = evaluate()
        eval_s = time.perf_counter() - eval_start
        train_start = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - train_start
        after = evaluate()
    steps = step_records(trainer.state.log_history, rollout.history)
    result = {
        "config": dataclasses.asdict(config),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__},
        "dataset": {"train_episodes": len(rows), "eval_episodes": len(eval_rows)},
        "first_prompt": rows[0]["prompt"],
        "seconds": {"total": time.perf_counter() - start, "train": train_s, "one_evaluation": eval_s},
        "eval_before": summarize(before),
        "eval_after": summarize(after),
        "steps": steps,
        "examples_before": episode_examples(before),
        "examples_after": episode_examples(after),
    }
    json_path = write_result(args.name, result)
    plot(steps, result["eval_before"], result["eval_after"], RESULTS_DIR / f"{args.name}.png")
    print(f"wrote {json_path} and {args.name}.png")
    for s in steps:
        print(
            f"step {s['step']:3d}  reward {s['reward']:.3f} ± {s['reward_std']:.3f}  success {s['success_rate']:.2f}"
            f"  valid {s['valid_fraction']:.2f}  {s.get('step_time', float('nan')):.0f} s"
        )
    print(f"held-out before: {result['eval_before']}\nheld-out after:  {result['eval_after']}")


if __name__ == "__main__":
    main()
