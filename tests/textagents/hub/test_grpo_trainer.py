"""One GRPO step with trl's GRPOTrainer on a tiny random model whose rollouts are BabyAI-Text episodes."""

from __future__ import annotations

import pytest
import torch

import textenvs  # noqa: F401  (registers the ids)
from textagents.hub.grpo import (
    RolloutSettings,
    TextEnvRolloutFunc,
    episode_dataset,
    episode_return_reward,
    grpo_config,
    valid_command_reward,
)

ENV_ID = "BabyAI-Text-GoToObjS4-v0"


def first_token_parity(completion_ids: list[list[int]], **kwargs) -> list[float]:
    """A reward that differs between the completions of a group, so that the step has a gradient."""
    return [float(ids[0] % 2) for ids in completion_ids]


class Recording(TextEnvRolloutFunc):
    def __call__(self, prompts, trainer):
        self.prompts = prompts
        self.output = super().__call__(prompts, trainer)
        return self.output


def test_one_grpo_step_trains_on_multi_turn_episodes(tiny_models, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = AutoTokenizer.from_pretrained(tiny_models.causal)
    model = AutoModelForCausalLM.from_pretrained(tiny_models.causal)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    rows = episode_dataset(ENV_ID, range(8))
    rollout = Recording(rows, RolloutSettings(max_turns=2, turn_tokens=4))
    config = grpo_config(
        str(tmp_path),
        "cpu",
        max_steps=1,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=512,
        learning_rate=1e-3,
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[episode_return_reward, valid_command_reward, first_token_parity],
        args=config,
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    trainer.train()

    # GRPO's groups: each prompt 4 times in a row, all played as the episode its row names.
    assert len(rollout.prompts) == 8 and all(rollout.prompts[i] == rollout.prompts[i - i % 4] for i in range(8))
    assert len(rollout.history) == 1 and rollout.history[0]["episodes"] == 8.0
    assert rollout.history[0]["mean_turns"] <= 2
    output = rollout.output
    assert all(len(m) == len(c) for m, c in zip(output["env_mask"], output["completion_ids"], strict=True))
    assert any(0 in m for m in output["env_mask"]), "the env's answers between turns are in the completions"
    [log] = [entry for entry in trainer.state.log_history if "reward" in entry]
    # trl counts the model's tokens only (env_mask 1) as the completion length.
    model_tokens = [sum(m) for m in output["env_mask"]]
    assert log["completions/mean_length"] == pytest.approx(sum(model_tokens) / len(model_tokens))
    assert log["rewards/valid_command_reward/mean"] == pytest.approx(
        sum(output["valid_fraction"]) / len(output["valid_fraction"])
    )
    changed = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
    assert changed, "the optimizer step changed no weight"
