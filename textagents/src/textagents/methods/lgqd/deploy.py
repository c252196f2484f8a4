"""A trained decision transformer driving the fastsim robot from a description and a target behaviour
descriptor, as the original deploys it: several trials (5 in the paper), each step's clusters sampled
from the model (or its argmax), and the trial that ends nearest the target kept, with the spread of the
trials' errors. The trials run together in fastsim's batched env, one model call a step that feeds it
only the step's new tokens (the earlier ones' keys and values are kept)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import textenvs
from textagents.methods.lgqd.dt import (
    DecisionTransformer,
    TextTokenizer,
    description_tokens,
    scaled_bd,
    scaled_observations,
)

STRATEGIES = ("sample", "argmax")


@dataclass(frozen=True)
class Deployment:
    """The kept trial of one description: its ``trajectory`` float[T, 2] (positions after each step, real
    units), ``annotation`` (the env's ``trajectory_annotation``), final ``bd`` and ``bd_error`` (its distance
    to ``target_bd``, real units: divide by 3 for the paper's map pixels), and every trial's error."""

    description: str
    target_bd: tuple[float, float]
    trajectory: np.ndarray
    annotation: list[dict[str, Any]]
    bd: tuple[float, float]
    bd_error: float
    trial_errors: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        """Everything as JSON values, the trials' mean, median and standard deviation of the error too."""
        errors = np.asarray(self.trial_errors)
        return {
            "description": self.description,
            "target_bd": list(self.target_bd),
            "bd": list(self.bd),
            "bd_error": self.bd_error,
            "trial_errors": list(self.trial_errors),
            "bd_error_mean": float(errors.mean()),
            "bd_error_median": float(np.median(errors)),
            "bd_error_std": float(errors.std()),
            "annotation": self.annotation,
            "trajectory": self.trajectory.tolist(),
        }


def choose_clusters(logits: torch.Tensor, strategy: str, generator: torch.Generator) -> torch.Tensor:
    """A cluster id per row and dimension of ``logits`` [B, D, K]: drawn from their softmax (``sample``)
    or the most likely (``argmax``)."""
    if strategy == "argmax":
        return logits.argmax(-1)
    if strategy == "sample":
        flat = logits.reshape(-1, logits.shape[-1]).softmax(-1).cpu()
        return torch.multinomial(flat, 1, generator=generator).view(logits.shape[:-1]).to(logits.device)
    raise ValueError(f"strategy must be one of {list(STRATEGIES)}, got {strategy!r}")


@torch.no_grad()
def deploy(
    model: DecisionTransformer,
    tokenizer: TextTokenizer,
    description: str,
    target_bd: Sequence[float],
    env_id: str = "Fastsim-Text-Household-v0",
    trials: int = 5,
    horizon: int = 400,
    strategy: str = "sample",
    seed: int = 0,
    action_scale: float = 1.0,
    data_dir: str | os.PathLike[str] | None = None,
) -> Deployment:
    """Run ``trials`` episodes of ``horizon`` steps in ``env_id`` with ``model`` asked for ``description``
    and ``target_bd`` (real units). The model's actions are in the space its clusters were fitted on (the
    archive policies' outputs: wheel speeds) and are sent times ``action_scale``; the env rounds and clips
    them to its top speed, as it did the policies'. ``seed`` seeds the cluster draws; ``data_dir``: where the
    maps are (default: textenvs' lookup)."""
    if trials < 1 or horizon < 1:
        raise ValueError(f"trials and horizon must be >= 1, got {trials} and {horizon}")
    if horizon > model.settings.max_steps:
        raise ValueError(f"horizon {horizon} exceeds the model's max_steps {model.settings.max_steps}")
    model.eval()
    settings, device = model.settings, model.centers.device
    generator = torch.Generator().manual_seed(seed)
    target = np.asarray(target_bd, np.float64)
    tokens = description_tokens(tokenizer, description, settings)
    text = torch.tensor([tokens] * trials, dtype=torch.int64, device=device).reshape(trials, len(tokens))
    bd = torch.from_numpy(scaled_bd(np.tile(target, (trials, 1)), settings)).to(device)
    dims = torch.arange(model.dims, device=device)
    actions = np.zeros((trials, horizon, model.dims))
    positions = np.zeros((trials, horizon, 2))
    env = textenvs.make_vec(env_id, trials, max_steps=horizon, data_dir=data_dir)
    try:
        obs, info = env.reset(seed=seed)
        for t in range(horizon):
            observation = torch.from_numpy(scaled_observations(obs["sensors"], settings)).to(device)
            if t == 0:
                logits, offsets, cache = model.start(text, bd, observation)
            else:
                previous = torch.from_numpy(actions[:, t - 1].astype(np.float32)).to(device)
                logits, offsets, cache = model.advance(cache, previous, bd, observation, t)
            ids = choose_clusters(logits, strategy, generator)
            chosen = model.centers[dims, ids] + offsets.gather(-1, ids[..., None]).squeeze(-1)
            actions[:, t] = chosen.cpu().numpy()
            obs, _, _, _, info = env.step(actions[:, t] * action_scale)
            positions[:, t] = info["robot_pos"][:, :2]
    finally:
        env.close()
    errors = np.hypot(*(np.asarray(info["bd"], np.float64) - target).T)
    best = int(errors.argmin())
    return Deployment(
        description=description,
        target_bd=(float(target[0]), float(target[1])),
        trajectory=positions[best],
        annotation=list(info["trajectory_annotation"][best]),
        bd=(float(info["bd"][best][0]), float(info["bd"][best][1])),
        bd_error=float(errors[best]),
        trial_errors=tuple(float(e) for e in errors),
    )
