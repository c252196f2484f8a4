"""LLM-Personalize with ``rollout_backend: llamacpp``: the planner generates with llama.cpp on a GGUF export of
each round's weights, written into the run and reused on resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.textagents.tiny_decoders import save_tiny_decoder
from textagents.methods.core.config import ConfigError, load_config
from textagents.methods.core.runner import LLMChoice, run_method
from textagents.methods.llm_personalize import rollout_backend
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig

pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (pip install 'textagents[llamacpp]')")

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "llm_personalize" / "smoke.yaml"


def _config(tmp_path: Path, iterations: int) -> Path:
    path = tmp_path / f"llamacpp_{iterations}.yaml"
    text = SMOKE.read_text().replace("iterations: 2", f"iterations: {iterations}")
    path.write_text(text + "baselines: [sayplan]\nrollout_backend: llamacpp\nrollout_gguf: f32\n")
    return path


def test_rollouts_run_on_llama_cpp_and_the_exports_are_reused_on_resume(tmp_path, monkeypatch):
    from textagents.llm.llamacpp_backend import LlamaCppBackend
    from textagents.llm.transformers_backend import TransformersBackend

    def no_transformers_generation(*args, **kwargs):
        raise AssertionError("a planner call went to transformers")

    monkeypatch.setattr(TransformersBackend, "generate_detailed", no_transformers_generation)
    exported, opened = [], []
    write_gguf, open_llama = rollout_backend.write_gguf, LlamaCppBackend.__init__

    def counting_write(model, tokenizer, out, **options):
        exported.append(Path(out).relative_to(run).as_posix())
        return write_gguf(model, tokenizer, out, **options)

    def counting_open(self, model, **options):
        opened.append(Path(model).relative_to(run).as_posix())
        open_llama(self, model, **options)

    monkeypatch.setattr(rollout_backend, "write_gguf", counting_write)
    monkeypatch.setattr(LlamaCppBackend, "__init__", counting_open)
    model = save_tiny_decoder(tmp_path / "tiny-llama", "llama")
    run = tmp_path / "run"
    run_method("llm_personalize", _config(tmp_path, 1), run, llm=LLMChoice(model=str(model)), progress=False)
    base, tuned = "models/base/model-f32.gguf", "models/iter_000001/model-f32.gguf"
    assert exported == [base, tuned]  # zero-shot on the base weights, then the imitation's
    assert opened == [base, tuned]  # zero-shot and SayPlan on the first, the evaluation after IL on the second

    calls = [json.loads(line) for line in (run / "llm_calls.jsonl").read_text().splitlines()]
    chats = [c for c in calls if c["kind"] == "chat"]
    assert chats and {c["model"] for c in chats} == {"tiny-llama"}
    first = chats[0]["request"]
    replayed = LlamaCppBackend(run / base, chat_prompt=lambda messages: _encode(model, messages))
    sampling = {k: v for k, v in first.items() if k not in ("kind", "messages")}
    assert replayed.chat(first["messages"], **sampling) == chats[0]["response"]
    replayed.llm.close()

    stamp = (run / tuned).stat().st_mtime_ns
    exported.clear()
    opened.clear()
    run_method(
        "llm_personalize", _config(tmp_path, 2), run, llm=LLMChoice(model=str(model)), progress=False, resume=True
    )
    assert base not in exported and tuned not in exported and (run / tuned).stat().st_mtime_ns == stamp
    assert opened[0] == tuned  # the self-training rollouts of the resumed run plan with the checkpoint's model
    assert exported in ([], ["models/iter_000002/model-f32.gguf"])  # a self-training round with pairs exports
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["iteration"]) for r in records] == [("train", 1), ("eval", 1), ("train", 2), ("eval", 2)]


def test_plans_decoded_together_are_the_plans_decoded_one_at_a_time(tmp_path, monkeypatch):
    """``rollout_parallel: 3``: the planner is ``ParallelLlamaCppBackend``, and on the float32 export every
    recorded answer, hence every metric, equals the run's with one plan at a time."""
    from textagents.llm.llamacpp_parallel import ParallelLlamaCppBackend

    batches = []
    complete_all = ParallelLlamaCppBackend._complete_all
    monkeypatch.setattr(
        ParallelLlamaCppBackend,
        "_complete_all",
        lambda self, prompts, settings: batches.append(len(prompts)) or complete_all(self, prompts, settings),
    )
    model = save_tiny_decoder(tmp_path / "tiny-llama", "llama")
    runs = {}
    for parallel in (1, 3):
        config = _config(tmp_path, 1)
        config.write_text(config.read_text() + f"rollout_parallel: {parallel}\n")
        runs[parallel] = run = tmp_path / f"run{parallel}"
        run_method("llm_personalize", config, run, llm=LLMChoice(model=str(model)), progress=False)
        assert (max(batches) > 1) if parallel == 3 else not batches  # a round's plans asked together
    answers = {
        parallel: [json.loads(line)["response"] for line in (run / "llm_calls.jsonl").read_text().splitlines()]
        for parallel, run in runs.items()
    }
    assert len(answers[1]) > 10 and answers[3] == answers[1]
    metrics = {
        parallel: [
            {k: v for k, v in json.loads(line).items() if "seconds" not in k and "per_s" not in k and k != "time"}
            for line in (run / "metrics.jsonl").read_text().splitlines()
        ]
        for parallel, run in runs.items()
    }
    assert metrics[3] == metrics[1]


def _encode(model: Path, messages):
    """The transformers backend's prompt tokens for ``messages`` (its tokenizer and chat template)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    return tokenizer(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))["input_ids"]


def test_bad_rollout_settings_are_refused(tmp_path):
    path = tmp_path / "bad.yaml"
    for text, message in (
        ("rollout_backend: vllm\n", r"rollout_backend must be one of \['transformers', 'llamacpp'\], got 'vllm'"),
        ("rollout_gguf: q4_0\n", r"rollout_gguf must be one of \['f16', 'q8_0', 'f32'\], got 'q4_0'"),
        ("rollout_backend: llamacpp\nfine_tuning: openai\n", "rollout_backend: llamacpp .* needs fine_tuning: local"),
        ("rollout_parallel: 0\n", r"rollout_parallel must be >= 1 \(1: one plan at a time\), got 0"),
    ):
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_config(LLMPersonalizeConfig, path)
