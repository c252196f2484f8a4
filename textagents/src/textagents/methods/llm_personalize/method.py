"""``llm_personalize``: the planner tidies Housekeep-Text houses; imitation of the demonstrator, then
reinforced self-training (Han et al. 2024). Self-training keeps the planning calls that raised the number of
correctly placed objects, only their succeeded steps, de-duplicated as the paper (objects moved, receptacles
before and after, correct set before). Iteration 1 = zero-shot evaluation + imitation learning;
iteration k > 1 = self-training round k - 1. Each round's dataset is saved in the run (``datasets/``), each
fine-tuned model in ``models/iter_N`` (safetensors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textagents.methods.core.method import Method, RunContext
from textagents.methods.core.run_dir import Checkpoint
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.demonstrations import Pair, select_demonstrations
from textagents.methods.llm_personalize.finetune import FinetuneSettings, finetune
from textagents.methods.llm_personalize.planner import evaluate, rollout
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.expert import format_plan
from textenvs.envs.housekeep.sampling import paper_split_indices

#: LLM-Personalize Table 1, 4-scene averages of the success rate (%), test / train.
PAPER_TABLE1 = {
    "zero-shot": (-11.95, -11.73),
    "SayCan": (-4.67, -2.23),
    "SayPlan": (-8.00, -6.04),
    "IL": (20.07, 8.59),
    "ST iteration 1": (24.80, 23.53),
    "ST iteration 2": (29.63, 26.69),
}


class LLMPersonalizeMethod(Method):
    name = "llm_personalize"
    summary = "LLM-Personalize: a Housekeep planner, imitation of the demonstrator, reinforced self-training"
    config_class = LLMPersonalizeConfig

    def __init__(self, config: LLMPersonalizeConfig, context: RunContext):
        super().__init__(config, context)
        self.env = HousekeepTextEnv(scenes=list(config.scenes), episode_source="llm_personalize")
        self.model_dir: str | None = None

    # ------------------------------------------------------------------ the model
    def _local(self) -> Any:
        """The transformers backend under the run's recording wrapper: the one that is fine-tuned."""
        backend = getattr(self.context.llm(), "backend", None)
        if not hasattr(backend, "model"):
            raise RuntimeError(
                "LLM-Personalize fine-tunes a local transformers model: give --model PATH or a downloaded name "
                "(a server or a replayed recording cannot be fine-tuned)"
            )
        return backend

    def _finetune(self, pairs: list[Pair], iteration: int, epochs: float) -> dict[str, float]:
        settings = FinetuneSettings(
            epochs=epochs,
            learning_rate=self.config.learning_rate,
            batch_size=self.config.batch_size,
            lora=self.config.lora,
            lora_r=self.config.lora_r,
            max_length=self.config.max_length,
            seed=self.config.seed + iteration,
        )
        out = self.context.run_dir / "models" / f"iter_{iteration:06d}"
        result = finetune(self._local(), pairs, out, settings)
        self.model_dir = str(out)
        return result

    def _save_dataset(self, name: str, pairs: list[Pair]) -> None:
        folder = self.context.run_dir / "datasets"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"messages": p}) + "\n" for p in pairs))

    # ------------------------------------------------------------------ iterations
    def _play(self, scene: str, index: int):
        return rollout(
            self.env,
            self.context.llm(),
            seed=index,
            options={"scene": scene, "episode_index": index},
            sampling={"max_tokens": self.config.max_new_tokens},
            max_steps_per_plan=self.config.max_steps_per_plan,
            command_budget=self.config.command_budget,
        )

    def train_iteration(self, iteration: int) -> dict[str, Any]:
        if iteration == 1:
            self._local()  # fail now, before the evaluation, when the model cannot be fine-tuned
            zero_shot = {f"zero_shot/{k}": v for k, v in self.evaluate().items()}
            chosen = select_demonstrations(
                self.config.scenes, self.config.train_demonstrations, self.config.validation_demonstrations
            )
            pairs = [p for scene in self.config.scenes for p in chosen.train[scene]]
            self._save_dataset("imitation_train", pairs)
            self._save_dataset("imitation_validation", [p for s in self.config.scenes for p in chosen.validation[s]])
            return {**zero_shot, "pairs": len(pairs), **self._finetune(pairs, iteration, self.config.epochs)}
        pairs, seen, rollouts = [], set(), []
        for scene in self.config.scenes:
            for index in paper_split_indices("train")[: self.config.self_training_rollouts]:
                run = self._play(scene, index)
                rollouts.append(run)
                for call in run.calls:
                    done = [command for command, ok in call.played if ok and command is not None]
                    if not call.raised_correct_count or not done:
                        continue  # only plans that raised the number of correctly placed objects
                    if call.dedup_key not in seen:
                        seen.add(call.dedup_key)
                        pairs.append([*call.messages, {"role": "assistant", "content": format_plan(done)}])
        self._save_dataset(f"self_training_{iteration - 1}", pairs)
        metrics = {
            "rollout_success_rate": sum(r.metrics["success_rate"] for r in rollouts) / len(rollouts),
            "pairs": len(pairs),
        }
        if pairs:
            metrics.update(self._finetune(pairs, iteration, 1.0))
        return metrics

    def evaluate(self) -> dict[str, Any]:
        result = {}
        for split in ("train", "test"):
            indices = paper_split_indices(split)[: self.config.eval_episodes]
            scores = evaluate(
                self.env,
                self.context.llm(),
                self.config.scenes,
                indices,
                sampling={"max_tokens": self.config.max_new_tokens},
                max_steps_per_plan=self.config.max_steps_per_plan,
                command_budget=self.config.command_budget,
            )
            result.update({f"{split}/{k}": v for k, v in scores.items()})
        return result

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, iteration: int) -> Checkpoint:
        return Checkpoint(iteration, {"model_dir": self.model_dir})

    def restore(self, checkpoint: Checkpoint) -> None:
        from textagents.llm.transformers_backend import TransformersBackend

        self.model_dir = checkpoint.state.get("model_dir")
        if self.model_dir is not None:
            local = self._local()
            local.model = TransformersBackend(Path(self.model_dir)).model

    def report_sections(self, metrics: list[dict[str, Any]]) -> list[str]:
        evals = [r for r in metrics if r.get("kind") == "eval"]
        first = next((r for r in metrics if "zero_shot/test/success_rate" in r), None)
        rows = []
        if first is not None:
            rows.append(("zero-shot", first["zero_shot/test/success_rate"], first["zero_shot/train/success_rate"]))
        for index, record in enumerate(evals):
            label = "IL" if index == 0 else f"ST iteration {index}"
            rows.append((label, record["test/success_rate"], record["train/success_rate"]))
        lines = ["## Table 1 (success rate %, test / train; 4-scene average in the paper)", ""]
        lines += ["| planner | ours test | ours train | paper test | paper train |", "|---|---:|---:|---:|---:|"]
        for label, test, train in rows:
            paper = PAPER_TABLE1.get(label, (float("nan"), float("nan")))
            lines.append(f"| {label} | {100 * test:.1f} | {100 * train:.1f} | {paper[0]:.2f} | {paper[1]:.2f} |")
        return ["\n".join(lines)]

    def close(self) -> None:
        self.env.close()
