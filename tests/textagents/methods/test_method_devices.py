"""Each method's device path, run here on the CPU named explicitly (CI has no GPU; benchmarks/gpu/check.py runs the
same code on CUDA): the smoke runs with ``--device cpu``, the LLM trained under autocast, the replay sampled onto
the device, the SFT trainer's precision from the model's."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.textagents.methods.sandbox_support import needs_bubblewrap
from textagents.methods.core.runner import LLMChoice, run_method
from textagents.methods.registry import METHODS

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", [pytest.param(m, marks=needs_bubblewrap) if m == "bk" else m for m in sorted(METHODS)]
)
def test_the_smoke_run_runs_on_the_device_named(method, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "run"
    run_method(method, f"benchmarks/methods/{method}/smoke.yaml", out, llm=LLMChoice(device="cpu"), progress=False)
    assert json.loads((out / "config.json").read_text())["config"]["device"] == "cpu"
    assert (out / "report.md").is_file()


def test_a_run_resumes_on_another_device(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    out, smoke = tmp_path / "run", "benchmarks/methods/example/smoke.yaml"
    run_method("example", smoke, out, llm=LLMChoice(device="auto"), progress=False)
    run_method("example", smoke, out, llm=LLMChoice(device="cpu"), progress=False, resume=True)


def test_the_llm_trains_under_autocast_in_the_dtype_named(tiny_models):
    from textagents.llm.lamorel import Caller, LLMSpec
    from textagents.llm.transformers_backend import ValueHead
    from textagents.methods.glam.ppo import PPOSettings
    from textagents.methods.glam.scoring import POLICY, CommandScores
    from textagents.methods.glam.updater import VALUE, PPOUpdater

    heads = {POLICY: CommandScores, VALUE: functools.partial(ValueHead, width=8)}
    spec = LLMSpec(str(tiny_models.causal), heads, seed=3, device="cpu", dtype="bfloat16")
    contexts, candidates = ["Goal: go to the door", "Goal: wait"], [["go left", "go right"], ["wait", "go left"]]
    values = {"values": [0.1, 0.2], "advantages": [1.0, -1.0], "returns": [1.0, 0.0]}
    with Caller(spec, PPOUpdater(PPOSettings(epochs=1), micro_batch=2)) as caller:
        rows = caller.custom_module_fns([VALUE], contexts, candidates)
        logprobs = [float(np.log(np.exp(r["__score"][0]) / np.exp(r["__score"]).sum())) for r in rows]
        (result,) = caller.update(
            contexts, candidates, actions=[0, 0], logprobs=logprobs, minibatches=1, seed=0, **values
        )
        state = caller.trainable_state()
    assert np.isfinite(result["loss"])
    assert all(t.device.type == "cpu" and t.dtype == torch.float32 for k, t in state.items() if k.startswith("model."))


def test_the_replay_is_sampled_onto_the_agents_device():
    from textagents.methods.ellm.dqn import DQNAgent, DQNSettings

    settings = DQNSettings(batch_size=4, buffer_size=16, learning_starts=4, train_every=1, target_update_every=4)
    agent = DQNAgent(3, 2, settings, frame_shape=(36, 36, 1), hidden=8, head_layers=1, device="cpu")
    rng = np.random.default_rng(0)
    for step in range(6):
        frame = rng.integers(0, 255, (36, 36, 1), dtype=np.uint8)
        agent.observe(
            frame,
            np.ones(3, np.float32),
            agent.act(frame, np.ones(3, np.float32)),
            1.0,
            frame,
            np.ones(3),
            step == 1,  # an episode ends, so the replay has one to draw from
            False,
        )
    assert len(agent.losses) == 3
    batch = agent.replay.sample(4, 3, 0.99, rng, torch.device("cpu"))
    assert {t.device.type for t in batch.values()} == {"cpu"}


@pytest.mark.parametrize(("dtype", "bf16"), [(torch.float32, False), (torch.bfloat16, True)])
def test_the_sft_trainer_takes_the_models_device_and_precision(dtype, bf16):
    from types import SimpleNamespace

    from textagents.methods.llm_personalize.finetune import sft_precision

    backend = SimpleNamespace(device=torch.device("cpu"), model=SimpleNamespace(dtype=dtype))
    assert sft_precision(backend) == {"use_cpu": True, "bf16": bf16, "fp16": False}


def test_a_float16_model_is_not_fine_tuned():
    from types import SimpleNamespace

    from textagents.methods.llm_personalize.finetune import sft_precision

    backend = SimpleNamespace(device=torch.device("cpu"), model=SimpleNamespace(dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype float16 cannot be fine-tuned"):
        sft_precision(backend)
