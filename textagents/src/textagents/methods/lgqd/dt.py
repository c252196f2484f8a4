"""The decision transformer of language-grounded QD (Salehi & Doncieux 2023): a small GPT conditioned on a
description's tokens and a target behaviour descriptor, predicting each step's action over the sequence of
observations.

The sequence is the original's: the description's tokens (each embedded plus its position), then three
tokens a step — the target descriptor, the observation, the action — each embedded by its own MLP plus the
step's timestep embedding; causal attention (padding is masked out as keys). Step ``t``'s action is read at
its observation token, which sees the description, the target, the observations up to ``t`` and the
actions before ``t``. Each action dimension is a k-means cluster plus an offset (``action_clusters``): a
head per dimension classifies the cluster (focal loss, gamma 2), one head regresses every cluster's offset
(MSE of centre + offset of the true cluster against the action); the loss is their sum. Inputs are scaled
to about [0, 1]: the descriptor by the map's side, the lasers by their range (the original maps them to
[-1, 1]); the descriptor is then rounded as the original rounds it (to 0.1 of its [-1, 1] range: a
twentieth of the map, 30 real units). As in the original (``bias: 0``), the blocks' linear layers and
layer norms have no biases; the embedding and head MLPs have theirs. A rollout (``start``, ``advance``)
keeps the earlier tokens' keys and values and feeds only each step's new tokens (the original recomputes
the whole sequence every step; the predictions are the same).

Differences from the original: text and trajectories are padded to the batch's longest and masked (the
original pads text to 226 tokens and attends to the padding; its trajectories all have 400 steps); a batch
holds whole episodes (the original draws a window, which is the whole episode at its block size); the
offset head predicts D x K offsets (the original's predicts K^D x D and reads K of them per dimension).
``round_bd: false`` (the descriptor not rounded) and ``bias: true`` (biases in the blocks) are options of
ours, what this module did before issue #32; policies saved before then load with them.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from torch import nn

from textagents.bench.store import write_json_atomic
from textagents.methods.core.optimizer_state import load_optimizer_tensors, optimizer_tensors
from textagents.methods.core.run_dir import CONFIG_FILE, Checkpoint, RunDir
from textagents.methods.lgqd.action_clusters import ActionClusters

if TYPE_CHECKING:  # the pipeline's config imports this module's settings
    from textagents.methods.lgqd.dataset import Episodes

#: The name a DT training folder records as its method (``RunDir``'s ``config.json``).
DT_RUN = "lgqd-dt"
POLICY_WEIGHTS = "policy.safetensors"
POLICY_CONFIG = "policy.json"
#: The settings of a policy saved before issue #32 added them: biases in the blocks, the descriptor not
#: rounded (what such a policy was trained with; ``load_policy`` fills them in).
PRE_ISSUE_32 = {"round_bd": False, "bias": True}


class TextTokenizer(Protocol):
    """What the DT needs of a tokenizer (a ``transformers`` tokenizer fits): token ids of a text, and the
    vocabulary's size."""

    def encode(self, text: str) -> list[int]: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class DTSettings:
    """The model and its training, the paper's values by default.

    Model: ``layers`` blocks of ``heads`` heads over ``embedding``-d tokens, ``dropout``; the cluster heads'
    and the offset head's MLP widths; at most ``max_text_tokens`` description tokens (more are cut) and
    ``max_steps`` timesteps. Inputs are divided by ``bd_scale`` (the descriptor, real units) and
    ``obs_scale`` (per observation entry: three lasers, two bumpers). ``condition_on_target``: the paper's
    DT reads the target descriptor; without it (an ablation) the target's token is that of (0, 0) for
    every episode, so the description is all the model is told of where to go. ``round_bd``: the scaled
    descriptor rounded on the original's grid (``bd_scale`` / 20); ``bias``: biases in the blocks' linear
    layers and layer norms (the original has none there).

    Training: AdamW (``weight_decay`` on matrices only, ``beta1``, ``beta2``), batches of ``batch_size``
    episodes, ``steps_per_iteration`` optimizer steps an iteration, learning rate warmed up linearly over
    ``warmup_steps`` to ``learning_rate`` then cosine-decayed to ``min_learning_rate`` at ``decay_steps``;
    gradients clipped to norm ``grad_clip`` (0: not clipped); loss = focal (``focal_gamma``) +
    ``offset_weight`` x MSE.
    """

    layers: int = 2
    heads: int = 4
    embedding: int = 360
    dropout: float = 0.1
    cluster_head_hidden: int = 64
    offset_head_hidden: int = 1024
    max_text_tokens: int = 226
    max_steps: int = 400
    bd_scale: float = 600.0
    obs_scale: tuple[float, ...] = (100.0, 100.0, 100.0, 1.0, 1.0)
    condition_on_target: bool = True
    round_bd: bool = True
    bias: bool = False
    batch_size: int = 30
    steps_per_iteration: int = 1
    learning_rate: float = 5e-3
    min_learning_rate: float = 5e-5
    warmup_steps: int = 1000
    decay_steps: int = 300_000
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 0.0
    focal_gamma: float = 2.0
    offset_weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "obs_scale", tuple(float(v) for v in self.obs_scale))  # JSON gives lists
        for name in (
            "layers",
            "heads",
            "embedding",
            "cluster_head_hidden",
            "offset_head_hidden",
            "max_text_tokens",
            "max_steps",
            "batch_size",
            "steps_per_iteration",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.embedding % self.heads:
            raise ValueError(f"embedding ({self.embedding}) must be a multiple of heads ({self.heads})")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.bd_scale <= 0 or not self.obs_scale or min(self.obs_scale) <= 0:
            raise ValueError("bd_scale and every obs_scale entry must be > 0")
        if not 0 < self.min_learning_rate <= self.learning_rate:
            raise ValueError("learning rates must satisfy 0 < min_learning_rate <= learning_rate")
        if self.warmup_steps < 0 or self.decay_steps <= self.warmup_steps:
            raise ValueError("warmup_steps must be >= 0 and below decay_steps")
        if min(self.weight_decay, self.grad_clip, self.focal_gamma, self.offset_weight) < 0:
            raise ValueError("weight_decay, grad_clip, focal_gamma and offset_weight must be >= 0")

    def learning_rate_at(self, step: int) -> float:
        """nanoGPT's schedule, as the original trains: linear warmup, cosine decay, then the minimum."""
        if step < self.warmup_steps:
            return self.learning_rate * (step + 1) / self.warmup_steps
        if step > self.decay_steps:
            return self.min_learning_rate
        progress = (step - self.warmup_steps) / (self.decay_steps - self.warmup_steps)
        return self.min_learning_rate + 0.5 * (1 + math.cos(math.pi * progress)) * (
            self.learning_rate - self.min_learning_rate
        )


# ---------------------------------------------------------------------- data
@dataclass(frozen=True)
class Episode:
    """One archived policy's episode: its ``description``, ``bd`` float[2] (the descriptor the DT is asked
    to reach: the episode's final x, y in real units), ``observations`` float[T, 5] and ``actions`` float[T, D]
    (the policy's outputs, the wheel speeds before the env rounds and clips them)."""

    description: str
    bd: np.ndarray
    observations: np.ndarray
    actions: np.ndarray


def dt_episodes(split: Episodes) -> list[Episode]:
    """The DT's episodes of a split of the pipeline (``dataset.load_split``): each policy asked for its own
    final position."""
    return [
        Episode(description, bd, observations, actions)
        for description, bd, observations, actions in zip(
            split.descriptions, split.bd, split.observations, split.actions, strict=True
        )
    ]


@dataclass(frozen=True)
class Batch:
    """Episodes padded to the longest: ``text`` int64[B, L] token ids and ``text_mask`` bool[B, L];
    ``bd`` float32[B, 2] and ``observations`` float32[B, T, 5] (scaled); ``actions`` float32[B, T, D],
    their ``cluster_ids`` int64[B, T, D]; ``step_mask`` bool[B, T] (False: padding)."""

    text: torch.Tensor
    text_mask: torch.Tensor
    bd: torch.Tensor
    observations: torch.Tensor
    actions: torch.Tensor
    cluster_ids: torch.Tensor
    step_mask: torch.Tensor

    def to(self, device: torch.device | str) -> Batch:
        return Batch(*(getattr(self, f.name).to(device) for f in fields(self)))


def description_tokens(tokenizer: TextTokenizer, description: str, settings: DTSettings) -> list[int]:
    """The description's token ids, cut at ``max_text_tokens``."""
    return list(tokenizer.encode(description))[: settings.max_text_tokens]


def scaled_bd(bd: np.ndarray, settings: DTSettings) -> np.ndarray:
    """Descriptors [..., 2] (real units) as the model reads them: float32, divided by ``bd_scale``; with
    ``round_bd``, rounded as the original does (normalised to [-1, 1] over the map and rounded to 0.1:
    ``NavigationEnv.normalize_bd_obs`` then ``bd_tensor.round(decimals=1)``), mapped back to [0, 1]."""
    scaled = np.asarray(bd, np.float64) / settings.bd_scale
    if settings.round_bd:
        scaled = (np.round(2 * scaled - 1, 1) + 1) / 2
    return scaled.astype(np.float32)


def scaled_observations(observations: np.ndarray, settings: DTSettings) -> np.ndarray:
    """Observations [..., 5] as the model reads them: float32, each entry divided by its ``obs_scale``."""
    return (np.asarray(observations, np.float64) / settings.obs_scale).astype(np.float32)


def collate(
    episodes: Sequence[Episode], tokenizer: TextTokenizer, clusters: ActionClusters, settings: DTSettings
) -> Batch:
    """A batch of ``episodes``: descriptions cut at ``max_text_tokens`` tokens (an empty one is a single
    masked position), both the text and the steps padded with zeros and masked."""
    tokens = [description_tokens(tokenizer, e.description, settings) for e in episodes]
    lengths = [len(e.observations) for e in episodes]
    steps, text_length = max(lengths), max(1, *map(len, tokens))
    if steps > settings.max_steps:
        raise ValueError(f"an episode has {steps} steps, more than max_steps={settings.max_steps}")
    count, dims = len(episodes), clusters.dimensions
    text = np.zeros((count, text_length), np.int64)
    text_mask = np.zeros((count, text_length), bool)
    observations = np.zeros((count, steps, len(settings.obs_scale)), np.float32)
    actions = np.zeros((count, steps, dims), np.float32)
    step_mask = np.zeros((count, steps), bool)
    for row, (episode, ids) in enumerate(zip(episodes, tokens, strict=True)):
        text[row, : len(ids)], text_mask[row, : len(ids)] = ids, True
        length = lengths[row]
        observations[row, :length] = scaled_observations(episode.observations, settings)
        actions[row, :length] = episode.actions
        step_mask[row, :length] = True
    cluster_ids, _ = clusters.encode(actions)
    return Batch(
        text=torch.from_numpy(text),
        text_mask=torch.from_numpy(text_mask),
        bd=torch.from_numpy(scaled_bd(np.stack([e.bd for e in episodes]), settings)),
        observations=torch.from_numpy(observations),
        actions=torch.from_numpy(actions),
        cluster_ids=torch.from_numpy(cluster_ids),
        step_mask=torch.from_numpy(step_mask),
    )


# ---------------------------------------------------------------------- model
#: Per block, the keys and values of every token seen so far, each [B, heads, L, width / heads].
Cache = list[tuple[torch.Tensor, torch.Tensor]]


def mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    """The original's three-layer MLP (GELU between layers), used for embeddings and heads."""
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, outputs)
    )


class Block(nn.Module):
    """nanoGPT's pre-norm block: self-attention then a 4x-wide MLP, each added back after dropout; its
    linear layers and layer norms have biases only with ``bias``. Its tokens attend to the ``past`` keys
    and values (a rollout's earlier tokens; None: none) and their own."""

    def __init__(self, width: int, heads: int, dropout: float, bias: bool):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.attention_norm, self.mlp_norm = nn.LayerNorm(width, bias=bias), nn.LayerNorm(width, bias=bias)
        self.qkv = nn.Linear(width, 3 * width, bias=bias)
        self.projection = nn.Linear(width, width, bias=bias)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width, bias=bias), nn.GELU(), nn.Linear(4 * width, width, bias=bias)
        )
        self.residual_drop = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, allowed: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``x`` [B, n, width]; ``allowed`` bool[B, n, past + n]: the keys each token may attend to. Returns
        the new tokens and the keys and values of past + new."""
        count, n, width = x.shape
        q, k, v = (
            part.view(count, n, self.heads, -1).transpose(1, 2)
            for part in self.qkv(self.attention_norm(x)).split(width, dim=-1)
        )
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        attended = nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed[:, None], dropout_p=self.dropout if self.training else 0.0
        )
        x = x + self.residual_drop(self.projection(attended.transpose(1, 2).reshape(count, n, width)))
        return x + self.residual_drop(self.mlp(self.mlp_norm(x))), (k, v)


class DecisionTransformer(nn.Module):
    """The GPT. ``forward(batch)`` gives, for every step of whole episodes, each action dimension's cluster
    logits float[B, T, D, K] and every cluster's offset float[B, T, D, K]; ``start`` and ``advance`` give
    the same for a rollout one step at a time, keeping the earlier tokens' keys and values."""

    def __init__(self, settings: DTSettings, vocab_size: int, clusters: ActionClusters):
        super().__init__()
        self.settings, self.vocab_size = settings, vocab_size
        width, dims, k = settings.embedding, clusters.dimensions, clusters.clusters
        self.dims, self.clusters = dims, k
        self.register_buffer("centers", torch.tensor(clusters.centers, dtype=torch.float32))
        self.words = nn.Embedding(vocab_size, width)
        self.word_positions = nn.Embedding(settings.max_text_tokens, width)
        self.timesteps = nn.Embedding(settings.max_steps, width)
        self.bd_embedding = mlp(2, 2 * width, width)
        self.obs_embedding = mlp(len(settings.obs_scale), 2 * width, width)
        self.act_embedding = mlp(dims, 2 * width, width)
        self.drop = nn.Dropout(settings.dropout)
        self.blocks = nn.ModuleList(
            Block(width, settings.heads, settings.dropout, settings.bias) for _ in range(settings.layers)
        )
        self.final_norm = nn.LayerNorm(width, bias=settings.bias)
        self.cluster_heads = nn.ModuleList(mlp(width, settings.cluster_head_hidden, k) for _ in range(dims))
        self.offset_head = mlp(width, settings.offset_head_hidden, dims * k)
        self.apply(_init_weights)
        for block in self.blocks:  # GPT-2's smaller start for the projections into the residual stream
            for weight in (block.projection.weight, block.mlp[-1].weight):
                nn.init.normal_(weight, mean=0.0, std=0.02 / math.sqrt(2 * settings.layers))

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        count, text_length = batch.text.shape
        steps = batch.observations.shape[1]
        time = self.timesteps(torch.arange(steps, device=batch.text.device))
        per_step = torch.stack(
            [
                self._target(batch.bd)[:, None] + time,
                self.obs_embedding(batch.observations) + time,
                self.act_embedding(batch.actions) + time,
            ],
            dim=2,
        )
        tokens = torch.cat([self._words(batch.text), per_step.reshape(count, 3 * steps, -1)], dim=1)
        hidden, _ = self._run(tokens, self._allowed(batch), None)
        return self._heads(hidden[:, text_length + 1 :: 3])

    def start(
        self, text: torch.Tensor, bd: torch.Tensor, observation: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, Cache]:
        """A rollout's step 0 from the description's tokens int64[B, L] (no padding), the scaled target
        float[B, 2] and first observation float[B, 5]: logits and offsets [B, D, K], and the cache."""
        time = self.timesteps.weight[0]
        tokens = torch.cat(
            [
                self._words(text),
                (self._target(bd) + time)[:, None],
                (self.obs_embedding(observation) + time)[:, None],
            ],
            dim=1,
        )
        length = tokens.shape[1]
        allowed = torch.ones(length, length, dtype=torch.bool, device=text.device).tril().expand(len(text), -1, -1)
        return self._step(tokens, allowed, None)

    def advance(
        self, cache: Cache, action: torch.Tensor, bd: torch.Tensor, observation: torch.Tensor, step: int
    ) -> tuple[torch.Tensor, torch.Tensor, Cache]:
        """Step ``step`` (>= 1) of a rollout: the previous step's ``action`` float[B, D], then this step's
        target and observation; as ``start``."""
        before, now = self.timesteps.weight[step - 1], self.timesteps.weight[step]
        tokens = torch.stack(
            [self.act_embedding(action) + before, self._target(bd) + now, self.obs_embedding(observation) + now],
            dim=1,
        )
        past, device = cache[0][0].shape[2], action.device
        allowed = torch.cat(
            [
                torch.ones(3, past, dtype=torch.bool, device=device),
                torch.ones(3, 3, dtype=torch.bool, device=device).tril(),
            ],
            dim=1,
        )
        return self._step(tokens, allowed.expand(len(action), -1, -1), cache)

    def _step(
        self, tokens: torch.Tensor, allowed: torch.Tensor, cache: Cache | None
    ) -> tuple[torch.Tensor, torch.Tensor, Cache]:
        hidden, cache = self._run(tokens, allowed, cache)
        logits, offsets = self._heads(hidden[:, -1:])
        return logits[:, 0], offsets[:, 0], cache

    def _target(self, bd: torch.Tensor) -> torch.Tensor:
        return self.bd_embedding(bd if self.settings.condition_on_target else torch.zeros_like(bd))

    def _words(self, text: torch.Tensor) -> torch.Tensor:
        return self.words(text) + self.word_positions(torch.arange(text.shape[1], device=text.device))

    def _run(self, tokens: torch.Tensor, allowed: torch.Tensor, cache: Cache | None) -> tuple[torch.Tensor, Cache]:
        x, keys_values = self.drop(tokens), []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, allowed, None if cache is None else cache[i])
            keys_values.append(kv)
        return self.final_norm(x), keys_values

    def _heads(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cluster logits and offsets [B, T, D, K] from the observation tokens' outputs [B, T, width]."""
        logits = torch.stack([head(hidden) for head in self.cluster_heads], dim=2)
        return logits, self.offset_head(hidden).view(*hidden.shape[:2], self.dims, self.clusters)

    def _allowed(self, batch: Batch) -> torch.Tensor:
        """Where attention may go, bool[B, L, L]: earlier tokens that are not padding, and the token itself
        (so a padded token's row is never empty)."""
        keys = torch.cat([batch.text_mask, batch.step_mask.repeat_interleave(3, dim=1)], dim=1)
        length = keys.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=keys.device).tril()
        itself = torch.eye(length, dtype=torch.bool, device=keys.device)
        return causal & (keys[:, None, :] | itself)


def _init_weights(module: nn.Module) -> None:
    """nanoGPT's initialisation, as the original's: normal(0, 0.02) weights, zero biases."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)


# ---------------------------------------------------------------------- loss
def focal_loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """Mean over the unmasked steps and every dimension of ``-(1 - p)^gamma log p``, ``p`` the softmax
    probability of the target cluster (logits [B, T, D, K], targets [B, T, D], mask [B, T])."""
    log_p = logits.log_softmax(-1).gather(-1, targets[..., None]).squeeze(-1)
    return (-((1 - log_p.exp()) ** gamma) * log_p)[mask].mean()


def dt_loss(
    model: DecisionTransformer, batch: Batch, logits: torch.Tensor, offsets: torch.Tensor
) -> dict[str, torch.Tensor]:
    """``loss`` = focal + ``offset_weight`` x ``mse`` (centre + predicted offset of the true cluster against
    the action, over unmasked steps), and ``cluster_accuracy`` (argmax cluster = true cluster)."""
    settings, mask, ids = model.settings, batch.step_mask, batch.cluster_ids
    focal = focal_loss(logits, ids, mask, settings.focal_gamma)
    centres = model.centers[torch.arange(model.dims, device=ids.device), ids]
    predicted = centres + offsets.gather(-1, ids[..., None]).squeeze(-1)
    mse = ((predicted - batch.actions) ** 2)[mask].mean()
    accuracy = (logits.argmax(-1) == ids)[mask].float().mean()
    return {"loss": focal + settings.offset_weight * mse, "focal": focal, "mse": mse, "cluster_accuracy": accuracy}


# ---------------------------------------------------------------------- training
class DTTrainer:
    """Trains a ``DecisionTransformer`` on ``train`` episodes in shuffled epochs (one ``np.random`` stream
    draws the orders; torch's drives dropout), evaluates on ``validation``, and saves and restores
    everything a resumed training needs (``Checkpoint``: weights, AdamW's moments, both RNG states)."""

    def __init__(
        self,
        model: DecisionTransformer,
        tokenizer: TextTokenizer,
        clusters: ActionClusters,
        train: Sequence[Episode],
        validation: Sequence[Episode],
        seed: int,
        device: torch.device | str = "cpu",
    ):
        if not train:
            raise ValueError("the DT needs at least one training episode")
        self.model, self.tokenizer, self.clusters = model.to(device), tokenizer, clusters
        self.settings, self.device = model.settings, device
        self.train, self.validation = list(train), list(validation)
        settings = self.settings
        matrices = [p for p in model.parameters() if p.dim() >= 2]
        vectors = [p for p in model.parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [{"params": matrices, "weight_decay": settings.weight_decay}, {"params": vectors, "weight_decay": 0.0}],
            lr=settings.learning_rate,
            betas=(settings.beta1, settings.beta2),
        )
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        self.step, self.epoch, self.position = 0, 0, 0
        self.order = self.rng.permutation(len(self.train))

    def _next_episodes(self) -> list[Episode]:
        """The next ``batch_size`` episodes of this epoch's order (fewer at its end); then a new epoch."""
        chosen = self.order[self.position : self.position + self.settings.batch_size]
        self.position += len(chosen)
        if self.position >= len(self.order):
            self.epoch, self.position = self.epoch + 1, 0
            self.order = self.rng.permutation(len(self.train))
        return [self.train[i] for i in chosen]

    def _batch(self, episodes: Sequence[Episode]) -> Batch:
        return collate(episodes, self.tokenizer, self.clusters, self.settings).to(self.device)

    def train_iteration(self, iteration: int) -> dict[str, float]:
        """``steps_per_iteration`` optimizer steps; their mean loss terms, the learning rate and epoch."""
        self.model.train()
        totals: dict[str, float] = {}
        for _ in range(self.settings.steps_per_iteration):
            rate = self.settings.learning_rate_at(self.step)
            for group in self.optimizer.param_groups:
                group["lr"] = rate
            batch = self._batch(self._next_episodes())
            terms = dt_loss(self.model, batch, *self.model(batch))
            self.optimizer.zero_grad()
            terms["loss"].backward()
            if self.settings.grad_clip > 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), self.settings.grad_clip)
            self.optimizer.step()
            self.step += 1
            for key, value in terms.items():
                totals[key] = totals.get(key, 0.0) + float(value.detach())
        means = {key: value / self.settings.steps_per_iteration for key, value in totals.items()}
        return {**means, "learning_rate": rate, "epoch": self.epoch, "optimizer_steps": self.step}

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """The loss terms on the validation episodes (dropout off), averaged over them; {} without any."""
        if not self.validation:
            return {}
        self.model.eval()
        totals: dict[str, float] = {}
        size = self.settings.batch_size
        for start in range(0, len(self.validation), size):
            chunk = self.validation[start : start + size]
            batch = self._batch(chunk)
            for key, value in dt_loss(self.model, batch, *self.model(batch)).items():
                totals[key] = totals.get(key, 0.0) + float(value) * len(chunk)
        return {f"val_{key}": value / len(self.validation) for key, value in totals.items()}

    def checkpoint(self, iteration: int) -> Checkpoint:
        tensors = {f"model.{k}": v.detach().cpu() for k, v in self.model.state_dict().items()}
        tensors.update(optimizer_tensors(self.optimizer, prefix="optimizer."))
        tensors["torch_rng"] = torch.get_rng_state()
        state = {
            "step": self.step,
            "epoch": self.epoch,
            "position": self.position,
            "order": self.order.tolist(),
            "rng": self.rng.bit_generator.state,
        }
        return Checkpoint(iteration, state, tensors)

    def restore(self, checkpoint: Checkpoint) -> None:
        tensors, state = checkpoint.tensors, checkpoint.state
        self.model.load_state_dict({k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")})
        load_optimizer_tensors(self.optimizer, tensors, prefix="optimizer.")
        torch.set_rng_state(tensors["torch_rng"])
        self.step, self.epoch, self.position = int(state["step"]), int(state["epoch"]), int(state["position"])
        self.order = np.asarray(state["order"], np.int64)
        self.rng.bit_generator.state = state["rng"]


def train_dt(
    folder: str | Path,
    trainer: DTTrainer,
    iterations: int,
    checkpoint_every: int,
    keep_checkpoints: int = 2,
    eval_every: int = 0,
) -> Path:
    """Train for ``iterations`` in ``folder`` (a ``RunDir``: ``config.json`` with the settings,
    ``metrics.jsonl``, ``checkpoints/``), resuming from its last checkpoint when it has one (same settings
    required; metrics after that checkpoint are dropped). Evaluates every ``eval_every`` iterations (0: at
    the end) and writes the final policy (``save_policy``); returns ``folder``."""
    run, config = RunDir(folder), {**asdict(trainer.settings), "vocab_size": trainer.model.vocab_size}
    start = 0
    if run.checkpoints():
        checkpoint = run.resume(DT_RUN, config)
        trainer.restore(checkpoint)
        start = checkpoint.iteration
    elif (run.path / CONFIG_FILE).is_file():  # killed before its first checkpoint: start it again
        run.check_same(DT_RUN, config)
        run.metrics_path.unlink(missing_ok=True)
    else:
        run.create(DT_RUN, config)
    for iteration in range(start + 1, iterations + 1):
        run.log({"kind": "train", "iteration": iteration, **trainer.train_iteration(iteration)})
        last = iteration == iterations
        if last or (eval_every and iteration % eval_every == 0):
            run.log({"kind": "eval", "iteration": iteration, **trainer.evaluate()})
        if last or iteration % checkpoint_every == 0:
            run.save_checkpoint(trainer.checkpoint(iteration), keep_checkpoints)
    save_policy(run.path, trainer.model)
    return run.path


# ---------------------------------------------------------------------- the trained policy
def save_policy(folder: str | Path, model: DecisionTransformer) -> None:
    """``policy.safetensors`` (the weights) and ``policy.json`` (settings, vocabulary size, action
    clusters), each written to a temporary file and renamed."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{POLICY_WEIGHTS}.")
    os.close(fd)
    try:
        save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, temporary)
        os.chmod(temporary, 0o644)  # safetensors writes 0600, which would hide the policy from the rest of a team
        os.replace(temporary, folder / POLICY_WEIGHTS)
    finally:
        Path(temporary).unlink(missing_ok=True)
    clusters = ActionClusters(model.centers.cpu().double().numpy())
    write_json_atomic(
        folder / POLICY_CONFIG,
        {"settings": asdict(model.settings), "vocab_size": model.vocab_size, **clusters.to_json()},
    )


def load_policy(folder: str | Path, device: torch.device | str = "cpu") -> DecisionTransformer:
    """The model ``save_policy`` wrote in ``folder`` (safetensors: loading runs no code), in eval mode."""
    from safetensors.torch import load_file

    folder = Path(folder)
    meta: dict[str, Any] = json.loads((folder / POLICY_CONFIG).read_text())
    settings = DTSettings(**{**PRE_ISSUE_32, **meta["settings"]})
    model = DecisionTransformer(settings, int(meta["vocab_size"]), ActionClusters(np.asarray(meta["centers"])))
    model.load_state_dict(load_file(folder / POLICY_WEIGHTS))
    return model.to(device).eval()
