"""PPO's pieces for an LLM policy (GLAM's torch-ac style): generalized advantage estimation and the clipped
loss with a clipped value loss. Plain functions on tensors, so that the updater (in whichever process holds
the LLM) and the tests compute exactly the same thing."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class PPOSettings:
    """GLAM's hyperparameters: γ 0.99, λ 0.99, clip 0.2 (also on the value), entropy 0.01, value 0.5,
    grad-norm 0.5, 4 epochs, minibatches of 64; ``learning_rate`` 1e-6 for full fine-tuning."""

    gamma: float = 0.99
    gae_lambda: float = 0.99
    clip: float = 0.2
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    epochs: int = 4
    minibatch_size: int = 64
    learning_rate: float = 1e-6


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns for ``[steps, envs]`` tensors; ``dones[t]``: the episode ended at step t (its
    next value is not bootstrapped); ``last_values`` [envs]: the values after the last step."""
    steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(last_values)
    for t in reversed(range(steps)):
        next_values = last_values if t == steps - 1 else values[t + 1]
        alive = 1.0 - dones[t].to(rewards.dtype)
        delta = rewards[t] + gamma * next_values * alive - values[t]
        running = delta + gamma * lam * alive * running
        advantages[t] = running
    return advantages, advantages + values


def ppo_loss(
    logits: torch.Tensor,
    actions: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    settings: PPOSettings,
) -> dict[str, torch.Tensor]:
    """The clipped PPO loss of a minibatch. ``logits`` [batch, commands] (the policy's scores: π =
    softmax), ``actions`` [batch]; the rest [batch]. Returns ``loss`` and its parts (policy, value,
    entropy) with the approximate KL and the clipped fraction."""
    log_probs = torch.log_softmax(logits, dim=-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
    new_logprobs = log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(new_logprobs - old_logprobs)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - settings.clip, 1.0 + settings.clip) * advantages
    policy_loss = -torch.min(unclipped, clipped).mean()
    values_clipped = old_values + torch.clamp(values - old_values, -settings.clip, settings.clip)
    value_loss = torch.max((values - returns) ** 2, (values_clipped - returns) ** 2).mean()
    loss = policy_loss - settings.entropy_coef * entropy + settings.value_coef * value_loss
    with torch.no_grad():
        approx_kl = (old_logprobs - new_logprobs).mean()
        clip_fraction = ((ratio - 1.0).abs() > settings.clip).float().mean()
    return {
        "loss": loss,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": approx_kl,
        "clip_fraction": clip_fraction,
    }
