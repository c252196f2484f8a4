"""The original's PPO network (``models/networks.py``: ``build_conv_nets`` for images under 16 cells a side,
``IntrinsicAgent``) as an SB3 policy over the image part of a ``Dict`` observation:

- ``ConvFeatures``: three 3×3 convolutions (32, 64, 64 channels, padding 1, ReLU) over the image, its
  channels divided by ``scale`` first (the original's ``ImageObsWrapper`` divides minigrid's object, colour
  and state ids by 10, 5 and 3), flattened, the ``extra`` parts appended, then one linear layer to 512
  features with no activation. PyTorch's default initialisation, as the original's.
- ``OriginalHeads``: the actor is ReLU(linear 512→512) before the action logits; the critic is
  ReLU(linear 512→512) + the features (a residual) before the value (the original's extrinsic value head;
  its intrinsic one is never trained). Orthogonal initialisation with the original's gains: 0.01 for the
  actor's layers, 0.1 for the critic's hidden layer, 0.01 for the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.distributions import CategoricalDistribution
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

FEATURES = 512
#: The original builds this branch only for images under 16 cells a side; larger ones take strided
#: convolutions (its Crafter pixels), which no observation here needs.
SMALL_IMAGE = 16


def orthogonal(layer: nn.Linear, gain: float) -> nn.Linear:
    """The original's ``layer_init``: orthogonal weights with ``gain``, zero bias."""
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.constant_(layer.bias, 0.0)
    return layer


class ConvFeatures(BaseFeaturesExtractor):
    def __init__(
        self,
        observation_space: spaces.Dict,
        image: str,
        scale: Sequence[float] | None = None,
        extra: Sequence[str] = (),
    ):
        height, width, channels = observation_space[image].shape
        if height >= SMALL_IMAGE or width >= SMALL_IMAGE:
            raise ValueError(f"ConvFeatures takes images under {SMALL_IMAGE} cells a side, got {height}x{width}")
        super().__init__(observation_space, FEATURES)
        self.image, self.extra = image, tuple(extra)
        layers: list[nn.Module] = []
        for inputs, outputs in ((channels, 32), (32, 64), (64, 64)):
            layers += [nn.Conv2d(inputs, outputs, kernel_size=3, stride=1, padding=1), nn.ReLU()]
        self.convolutions = nn.Sequential(*layers, nn.Flatten())
        extra_size = sum(int(np.prod(observation_space[key].shape)) for key in self.extra)
        self.linear = nn.Linear(64 * height * width + extra_size, FEATURES)
        divisor = torch.ones(channels) if scale is None else torch.as_tensor(scale, dtype=torch.float32)
        if divisor.shape != (channels,):
            raise ValueError(f"scale needs one divisor per channel ({channels}), got {list(divisor.shape)}")
        self.register_buffer("divisor", divisor.view(1, channels, 1, 1))

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        image = observations[self.image].permute(0, 3, 1, 2) / self.divisor  # [batch, H, W, C] -> [batch, C, H, W]
        parts = [self.convolutions(image), *(observations[key].flatten(1) for key in self.extra)]
        return self.linear(torch.cat(parts, dim=1))


class OriginalHeads(nn.Module):
    latent_dim_pi = FEATURES
    latent_dim_vf = FEATURES

    def __init__(self) -> None:
        super().__init__()
        self.actor = orthogonal(nn.Linear(FEATURES, FEATURES), 0.01)
        self.critic = orthogonal(nn.Linear(FEATURES, FEATURES), 0.1)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.actor(features))

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.critic(features)) + features


class UncheckedCategorical(CategoricalDistribution):
    """SB3's categorical distribution without torch's argument checks, which read a result back from the device
    each time a distribution is built or scores actions (on a GPU, a wait at every rollout step): the same
    numbers and the same draws."""

    def proba_distribution(self, action_logits: torch.Tensor) -> UncheckedCategorical:
        self.distribution = torch.distributions.Categorical(logits=action_logits, validate_args=False)
        return self


class OriginalPolicy(MultiInputActorCriticPolicy):
    """SB3's actor-critic with ``ConvFeatures`` (its ``features_extractor_kwargs``: ``image``, ``scale``,
    ``extra``) and ``OriginalHeads``, initialised as the original (SB3's own orthogonal init is off); its
    actions drawn from an ``UncheckedCategorical``."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **{**kwargs, "features_extractor_class": ConvFeatures, "ortho_init": False})
        if isinstance(self.action_dist, CategoricalDistribution):
            self.action_dist = UncheckedCategorical(self.action_dist.action_dim)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = OriginalHeads()

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        orthogonal(self.action_net, 0.01)
        orthogonal(self.value_net, 0.01)
