"""GLAM's PPO updater: runs where the LLM lives (lamorel's custom updater), on that process's share of the
rollout, with minibatches split into micro-batches (gradient accumulation) so that they fit in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from textagents.llm.lamorel import LLMHandle, Updater
from textagents.methods.core.optimizer_state import load_optimizer_tensors, optimizer_tensors
from textagents.methods.glam.ppo import PPOSettings, ppo_loss
from textagents.methods.glam.scoring import POLICY

VALUE = "value"


def policy_outputs(
    llm: LLMHandle, contexts: Sequence[str], candidates: Sequence[Sequence[str]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The policy module's logits [batch, commands] (π = softmax) and the value head's output [batch], with
    gradients."""
    outputs = llm.backend.forward_candidates(contexts, candidates, functions=[POLICY, VALUE])
    logits = torch.stack([scores.float() for scores in outputs[POLICY]])
    values = torch.stack([row[0] for row in outputs[VALUE]]).float()
    return logits, values


def micro_batches(
    rows: np.ndarray, contexts: Sequence[str], candidates: Sequence[Sequence[str]], size: int, by_prompt: bool
) -> list[np.ndarray]:
    """A minibatch's ``rows`` in forward passes of at most ``size`` prompts: ``size`` rows at a time, or
    (``by_prompt``: the backend computes a repeated (context, candidates) row once) all the rows of ``size``
    distinct prompts at a time, the prompts in order of length (a forward pass pads them to its longest)."""
    if not by_prompt:
        return [rows[start : start + size] for start in range(0, len(rows), size)]
    groups: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for row in rows:
        groups.setdefault((contexts[row], tuple(candidates[row])), []).append(int(row))
    prompts = [groups[key] for key in sorted(groups, key=lambda key: len(key[0]))]
    return [np.concatenate(prompts[start : start + size]) for start in range(0, len(prompts), size)]


class PPOUpdater(Updater):
    """``epochs`` passes over the share in ``minibatches`` minibatches (the same count on every process, so
    that the gradient averaging lines up), ``micro_batch`` prompts per forward pass (``micro_batches``; the
    loss is a mean over rows, so each pass adds its rows' share of the minibatch's gradient); Adam on the
    trainable parameters (all of them, or LoRA's) and the value head; gradient norm clipped. The logged
    losses are the minibatches' means over their rows, averaged. The model stays in eval mode: dropout would
    make the new log-probs noisy against the old ones (and the processes disagree)."""

    def __init__(self, settings: PPOSettings, micro_batch: int = 8):
        if micro_batch < 1:
            raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
        self.settings = settings
        self.micro_batch = micro_batch
        self.optimizer: torch.optim.Optimizer | None = None

    def _optimizer(self, llm: LLMHandle) -> torch.optim.Optimizer:
        if self.optimizer is None:
            self.optimizer = torch.optim.Adam(llm.trainable_parameters(), lr=self.settings.learning_rate, eps=1e-5)
        return self.optimizer

    def perform_update(
        self,
        llm: LLMHandle,
        contexts: Sequence[str],
        candidates: Sequence[Sequence[str]],
        *,
        actions: Sequence[int],
        logprobs: Sequence[float],
        values: Sequence[float],
        advantages: Sequence[float],
        returns: Sequence[float],
        minibatches: int,
        seed: int,
    ) -> dict[str, float]:
        optimizer = self._optimizer(llm)
        device = llm.backend.device
        batch = {
            name: torch.as_tensor(np.asarray(data, dtype=np.float32 if name != "actions" else np.int64), device=device)
            for name, data in (
                ("actions", actions),
                ("logprobs", logprobs),
                ("values", values),
                ("advantages", advantages),
                ("returns", returns),
            )
        }
        rng = np.random.default_rng(seed)
        by_prompt = llm.backend.prefix_sharing
        logged: dict[str, list[float]] = {}
        for _ in range(self.settings.epochs):
            for minibatch in np.array_split(rng.permutation(len(contexts)), minibatches):
                optimizer.zero_grad()
                means: dict[str, torch.Tensor] = {}  # on the device: no synchronisation per micro-batch
                for rows in micro_batches(minibatch, contexts, candidates, self.micro_batch, by_prompt):
                    logits, new_values = policy_outputs(llm, [contexts[i] for i in rows], [candidates[i] for i in rows])
                    index = torch.as_tensor(rows, dtype=torch.long, device=device)
                    parts = ppo_loss(
                        logits,
                        batch["actions"][index],
                        batch["logprobs"][index],
                        batch["advantages"][index],
                        new_values,
                        batch["values"][index],
                        batch["returns"][index],
                        self.settings,
                    )
                    share = len(rows) / len(minibatch)
                    (parts["loss"] * share).backward()
                    for name, value in parts.items():
                        means[name] = means.get(name, 0.0) + share * value.detach()
                for name, value in means.items():
                    logged.setdefault(name, []).append(float(value))
                llm.all_reduce_gradients()
                grad_norm = torch.nn.utils.clip_grad_norm_(llm.trainable_parameters(), self.settings.max_grad_norm)
                logged.setdefault("grad_norm", []).append(float(grad_norm))
                optimizer.step()
        return {name: float(np.mean(values)) for name, values in logged.items()}

    def state_dict(self) -> dict[str, torch.Tensor]:
        return optimizer_tensors(self.optimizer) if self.optimizer is not None else {}

    def load_state_dict(self, state: Mapping[str, torch.Tensor], llm: LLMHandle) -> None:
        if state:
            load_optimizer_tensors(self._optimizer(llm), state)
