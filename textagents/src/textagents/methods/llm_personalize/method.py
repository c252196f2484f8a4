"""``llm_personalize``: the planner tidies Housekeep-Text houses; imitation of the demonstrator, then
reinforced self-training (Han et al. 2024). Self-training keeps the planning calls that raised the number of
correctly placed objects, only their succeeded steps, de-duplicated as the original (first object moved, its
receptacles before and after, correct set before). Iteration 1 = zero-shot evaluation + imitation learning;
iteration k > 1 = self-training round k - 1. Each round's dataset is saved in the run (``datasets/``), each
fine-tuned model in ``models/iter_N`` (safetensors) with what it was trained on (``trained.json``).

A run stopped inside an iteration resumes where it stopped, with the results of an uninterrupted run: each
stage's answers are logged as they come (``answers/``, ``answer_log.py``) and replayed, and a fine-tune that
had finished on the same inputs is loaded instead of trained again.

Fine-tuning: ``local`` (trl SFT on the run's transformers model) or ``openai`` (a job through OpenAI's
fine-tuning API on the run's ``--base-url`` model). With ``served_weights`` the planner asks an OpenAI-compatible
server that serves each round's locally fine-tuned weights (``served.py``). A run that replays a recording
(``--llm-replay``) trains nothing: its answers come from the recorded fine-tuned models, so it reproduces the
recorded run's success rates and diagnostics exactly."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from textagents.llm.base import LLMBackend
from textagents.llm.record import RecordingBackend, ReplayBackend
from textagents.methods.core.method import Method, RunContext
from textagents.methods.core.run_dir import Checkpoint
from textagents.methods.llm_personalize.answer_log import AnswerLog
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.coverage import placements, preference_coverage, trained_plans
from textagents.methods.llm_personalize.demonstrations import Pair, select_demonstrations
from textagents.methods.llm_personalize.finetune import FinetuneSettings, finetune
from textagents.methods.llm_personalize.openai_finetune import OpenAIFineTuner, export_chat_jsonl
from textagents.methods.llm_personalize.planner import (
    Rollout,
    play,
    selection_counts,
    self_training_selection,
    summarize,
)
from textagents.methods.llm_personalize.report import (
    plot_table1,
    render_diagnostics,
    render_selection,
    render_table1,
    table1_over_seeds,
    table1_rows,
)
from textagents.methods.llm_personalize.rollout_backend import BASE_MODEL_DIR, LlamaCppPlanner
from textagents.methods.llm_personalize.served import ServedPlanner, served_planner
from textenvs.core.files import write_bytes_atomic
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.sampling import paper_split_indices

ANSWERS = "answers"  # the run's folder of answer logs, one per stage played (answer_log.py)
TRAINED = "trained.json"  # beside a fine-tuned model's weights: what it was trained on, and the result


class LLMPersonalizeMethod(Method):
    name = "llm_personalize"
    summary = "LLM-Personalize: a Housekeep planner, imitation of the demonstrator, reinforced self-training"
    config_class = LLMPersonalizeConfig
    comparison_x = "fine-tunings (0 zero-shot, 1 IL, k > 1 self-training round k - 1)"

    def __init__(self, config: LLMPersonalizeConfig, context: RunContext):
        super().__init__(config, context)
        self.model_dir: str | None = None  # the last locally fine-tuned model, relative to the run folder
        self.tuned_at = 0  # the iteration of the last fine-tune (in a replay: of the recorded run's), 0: none
        self.model_name: str | None = None  # the last model fine-tuned through OpenAI's API
        self._llamacpp: LlamaCppPlanner | None = None  # rollout_backend: llamacpp, built on first use
        self.served: ServedPlanner | None = None  # built on first use (``_served``)

    # ------------------------------------------------------------------ the model
    def _tuned_backend(self) -> Any:
        """The backend that fine-tuning changes (under the run's recording wrapper), or None when the run
        replays a recording: its answers already come from the fine-tuned models, nothing is trained."""
        llm = self.context.llm()
        backend = getattr(llm, "backend", llm)
        if isinstance(backend, ReplayBackend):
            return None
        served = self._served()
        if served is not None:
            return served.trained()
        if self.config.fine_tuning == "openai":
            if not hasattr(getattr(backend, "client", None), "fine_tuning"):
                raise RuntimeError("fine_tuning: openai fine-tunes a model behind an OpenAI API: give --base-url")
            return backend
        if not hasattr(backend, "model"):
            raise RuntimeError(
                "LLM-Personalize fine-tunes a local transformers model: give --model PATH or a downloaded name, "
                "or set fine_tuning: openai for a model behind OpenAI's API"
            )
        return backend

    def _finetune(self, pairs: list[Pair], dataset: Path, iteration: int, epochs: float) -> dict[str, float]:
        backend = self._tuned_backend()
        start = self._model_tag()  # the weights this fine-tune starts from
        self.tuned_at = iteration
        if backend is None:
            return {}
        if self.config.fine_tuning == "openai":
            tuner = OpenAIFineTuner(backend, poll_s=self.config.openai_poll_s)
            job = tuner.finetune(dataset, epochs=epochs, suffix=f"llm-personalize-{iteration}")
            self.model_name = job["model"]
            return {"trained_tokens": float(job["trained_tokens"] or 0)}
        settings = FinetuneSettings(
            epochs=epochs,
            learning_rate=self.config.learning_rate,
            batch_size=self.config.batch_size,
            micro_batch=self.config.micro_batch,
            lora=self.config.lora,
            lora_r=self.config.lora_r,
            max_length=self.config.max_length,
            seed=self.config.seed + iteration,
        )
        out = self.context.run_dir / "models" / f"iter_{iteration:06d}"
        inputs = _digest({"model": self.config.model, "from": start, "pairs": pairs, **asdict(settings)})
        served = self._served()
        if served is not None:
            served.pause()
        trained = _read_json(out / TRAINED)
        if trained is not None and trained.get("inputs") == inputs:  # fine-tuned before the run stopped
            _load_weights(backend, out)
            result = trained["result"]
        else:
            result = finetune(backend, pairs, out, settings)
            write_bytes_atomic(out / TRAINED, json.dumps({"inputs": inputs, "result": result}).encode())
            if self.config.rollout_backend == "llamacpp":
                self._llamacpp_planner().export(backend, out)
        self.model_dir = out.relative_to(self.context.run_dir).as_posix()
        if served is not None:
            served.serve(out)
        return result

    def _model_tag(self) -> str:
        """Which weights the planner has now, as the answer logs name them: ``base``, or the iteration of the last
        fine-tune with a digest of what it started from and trained on (an OpenAI job: of the model it made; a
        replay has no weights: ``replayed``)."""
        if self.tuned_at == 0:
            return "base"
        if self.model_name is not None:
            weights = _digest(self.model_name)
        elif self.model_dir is not None:
            trained = _read_json(self._model_path(self.model_dir) / TRAINED)
            weights = trained["inputs"] if trained is not None else "unrecorded"  # a run from before the logs
        else:
            weights = "replayed"
        return f"iter{self.tuned_at}-{weights}"

    def _served(self) -> ServedPlanner | None:
        """The server the planner asks (``served_weights``); None when the planner is the run's LLM, and when the
        run replays a recording (its answers are the served ones)."""
        if self.served is None and self.config.served_weights != "none":
            llm = self.context.llm()
            if not isinstance(getattr(llm, "backend", llm), ReplayBackend):
                self.served = served_planner(self.config, self.context)
        return self.served

    def _save_dataset(self, name: str, pairs: list[Pair]) -> Path:
        """The pairs in the chat JSONL that OpenAI's fine-tuning API accepts, in the run's ``datasets/``."""
        return export_chat_jsonl(pairs, self.context.run_dir / "datasets" / f"{name}.jsonl")

    # ------------------------------------------------------------------ iterations
    def _planner_backend(self, variant: str) -> LLMBackend:
        """The LLM the planner asks this round: the served model (``served_weights``), llama.cpp on the current
        weights' GGUF for generation (``rollout_backend``), or the run's LLM."""
        served = self._served()
        if served is not None:
            return served.llm()
        tuned = self._tuned_backend() if self.config.rollout_backend == "llamacpp" and variant != "saycan" else None
        if tuned is None:
            return self.context.llm()
        folder = self._model_path(self.model_dir) if self.model_dir else self.context.run_dir / BASE_MODEL_DIR
        return self._llamacpp_planner().backend(tuned, folder)

    def _llamacpp_planner(self) -> LlamaCppPlanner:
        if self._llamacpp is None:
            import torch

            llm = self.context.llm()
            record = llm.path if isinstance(llm, RecordingBackend) else None
            # the run's --threads (torch's), not llama.cpp's default of every core: runs side by side share them
            threads = torch.get_num_threads()
            config = self.config
            max_steps = config.max_steps_per_plan if config.rollout_stop_after_read_steps else None
            self._llamacpp = LlamaCppPlanner(
                config.model,
                config.rollout_gguf,
                record,
                threads,
                config.rollout_state_cache_mb,
                max_steps,
                parallel=config.rollout_parallel,
            )
        return self._llamacpp

    def _play(self, jobs: list[tuple[str, int]], stage: str, variant: str = "planner") -> list[Rollout]:
        """Play ``jobs`` with ``variant``; the answers are logged in the run (``answers/``, ``answer_log.py``)
        under the ``stage`` (``eval`` or ``rollouts``), the variant and the planner's weights."""
        seed, sampling, rules = self.config.seed, self.config.sampling(), self.config.plan_rules(variant)
        log = AnswerLog(
            self.context.run_dir / ANSWERS / f"{stage}-{variant}-{self._model_tag()}.jsonl",
            {"jobs": jobs, "variant": variant, "seed": seed, "sampling": sampling, "rules": asdict(rules)},
        )
        backend = self._planner_backend(variant)
        return play(self._make_env, backend, jobs, variant=variant, seed=seed, sampling=sampling, rules=rules, log=log)

    def _make_env(self) -> HousekeepTextEnv:
        return HousekeepTextEnv(scenes=list(self.config.scenes), episode_source="llm_personalize")

    def train_iteration(self, iteration: int) -> dict[str, Any]:
        if iteration == 1:
            self._tuned_backend()  # fail now, before the evaluations, when the model cannot be fine-tuned
            before = {f"zero_shot/{k}": v for k, v in self._evaluate("planner").items()}
            for baseline in self.config.baselines:
                episodes = self.config.baseline_eval_episodes
                before.update({f"{baseline}/{k}": v for k, v in self._evaluate(baseline, episodes).items()})
            chosen = select_demonstrations(
                self.config.scenes, self.config.train_demonstrations, self.config.validation_demonstrations
            )
            pairs = [p for scene in self.config.scenes for p in chosen.train[scene]]
            dataset = self._save_dataset("imitation_train", pairs)
            self._save_dataset("imitation_validation", [p for s in self.config.scenes for p in chosen.validation[s]])
            per_scene = {f"pairs/{scene}": len(chosen.train[scene]) for scene in self.config.scenes}
            finetuned = self._finetune(pairs, dataset, iteration, self.config.epochs)
            return {**before, "pairs": len(pairs), **per_scene, **self._coverage(iteration), **finetuned}
        indices = paper_split_indices("train")[: self.config.self_training_rollouts]
        jobs = [(scene, index) for scene in self.config.scenes for index in indices]
        rollouts = self._play(jobs, "rollouts")
        calls = [call for run in rollouts for call in run.calls]
        scenes = [scene for (scene, _), run in zip(jobs, rollouts, strict=True) for _ in run.calls]
        selection = self_training_selection(calls)
        pairs = [pair for _, pair in selection if pair is not None]
        dataset = self._save_dataset(f"self_training_{iteration - 1}", pairs)
        metrics = {
            "rollout_success_rate": sum(r.metrics["success_rate"] for r in rollouts) / len(rollouts),
            "rollout_plan_score": sum(call.score for call in calls) / max(1, len(calls)),
            "rollouts": len(rollouts),
            "planning_calls": len(calls),
            "steps": sum(len(call.played) for call in calls),
            "pairs": len(pairs),
            **selection_counts(zip(scenes, (outcome for outcome, _ in selection), strict=True), self.config.scenes),
            **self._coverage(iteration),
        }
        if pairs:
            metrics.update(self._finetune(pairs, dataset, iteration, 1.0))
        return metrics

    def _coverage(self, iteration: int) -> dict[str, float]:
        """Of the evaluation episodes' misplaced objects, the share whose correct placement is in a pair the
        planner has been trained on by the end of ``iteration`` (``coverage.py``), per split and scene."""
        names = ["imitation_train", *(f"self_training_{k}" for k in range(1, iteration))]
        plans = trained_plans([self.context.run_dir / "datasets" / f"{name}.jsonl" for name in names])
        placed = placements(plans)
        result = {}
        for split in ("test", "train"):
            indices = paper_split_indices(split)[: self.config.eval_episodes]
            jobs = [(scene, index) for scene in self.config.scenes for index in indices]
            for key, share in preference_coverage(self._make_env, jobs, placed).items():
                result[f"coverage/{split}" if key == "all" else f"coverage/{split}/{key}"] = share
        return result

    def evaluate(self) -> dict[str, Any]:
        return self._evaluate(self.config.eval_planner)

    def _evaluate(self, variant: str, episodes: int | None = None) -> dict[str, Any]:
        """The first ``episodes`` (default ``eval_episodes``) of each scene's train and test split, played
        together."""
        count = episodes or self.config.eval_episodes
        splits = {split: paper_split_indices(split)[:count] for split in ("train", "test")}
        jobs = [(split, scene, i) for split, indices in splits.items() for scene in self.config.scenes for i in indices]
        runs = self._play([(scene, i) for _, scene, i in jobs], "eval", variant)
        result = {}
        for split in splits:
            per_scene = {
                scene: [r for (s, sc, _), r in zip(jobs, runs, strict=True) if s == split and sc == scene]
                for scene in self.config.scenes
            }
            result.update({f"{split}/{k}": v for k, v in summarize(per_scene).items()})
        return result

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, iteration: int) -> Checkpoint:
        return Checkpoint(
            iteration, {"model_dir": self.model_dir, "model_name": self.model_name, "tuned_at": self.tuned_at}
        )

    def restore(self, checkpoint: Checkpoint) -> None:
        self.model_dir = checkpoint.state.get("model_dir")
        self.model_name = checkpoint.state.get("model_name")
        self.tuned_at = checkpoint.state.get("tuned_at", checkpoint.iteration)  # older runs: a fine-tune a round
        backend = self._tuned_backend()
        if backend is None:
            return
        if self.model_name is not None:
            backend.model_name = self.model_name
        elif self.model_dir is not None:
            path = self._model_path(self.model_dir)
            _load_weights(backend, path)
            if self.served is not None:
                self.served.resume(path)

    def _model_path(self, model_dir: str) -> Path:
        """A checkpoint's model folder; older runs recorded it as an absolute path."""
        path = Path(model_dir)
        if path.is_absolute() and not path.is_dir():
            path = Path(*path.parts[-2:])  # models/iter_N, wherever the run folder is now
        return path if path.is_absolute() else self.context.run_dir / path

    def close(self) -> None:
        if self._llamacpp is not None:
            self._llamacpp.close()
        if self.served is not None:
            self.served.close()

    def report_sections(self, metrics: list[dict[str, Any]]) -> list[str]:
        rows = table1_rows(metrics)
        if not rows:
            return []
        plot = plot_table1(rows, self.context.run_dir / "table1.png")
        table = [render_table1(rows), f"![Table 1, ours beside the paper's]({plot.name})", render_diagnostics(rows)]
        return [*table, render_selection({self.config.seed: metrics})]

    @staticmethod
    def comparison_curves(metrics: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
        """Success over the fine-tunings, test and train: the zero-shot planner at 0, then each evaluation."""
        first = next((r for r in metrics if r.get("kind") == "train" and r.get("iteration") == 1), {})
        evaluations = [r for r in metrics if r.get("kind") == "eval"]
        curves = {}
        for split in ("test", "train"):
            key = f"{split}/success_rate"
            points = [(0.0, first[f"zero_shot/{key}"])] if f"zero_shot/{key}" in first else []
            curves[key] = points + [(float(r["iteration"]), r[key]) for r in evaluations if key in r]
        return curves

    @staticmethod
    def comparison_sections(runs: dict[str, dict[int, list[dict[str, Any]]]], out: Path) -> list[str]:
        """Table 1 over the seeds of each compared value, with its claims, diagnostics and plot."""
        sections = []
        for index, (label, by_seed) in enumerate(runs.items()):
            plot = out / ("success_by_round.png" if len(runs) == 1 else f"success_by_round_{index}.png")
            sections += table1_over_seeds(by_seed, plot, f" ({label})")
        return sections


def _load_weights(backend: Any, folder: Path) -> None:
    """Give the transformers ``backend`` the fine-tuned weights saved in ``folder``."""
    from textagents.llm.transformers_backend import TransformersBackend

    backend.model = TransformersBackend(folder, device=backend.device, dtype=backend.model.dtype).model


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=True).encode()).hexdigest()[:16]


def _read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None
