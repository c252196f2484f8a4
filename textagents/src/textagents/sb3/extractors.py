"""Feature extractors for ``MultiInputPolicy`` over ``TextFeaturesWrapper`` observations."""

from __future__ import annotations

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn


class TextImageExtractor(BaseFeaturesExtractor):
    """Text features through an MLP, the image through a small CNN that accepts any image size (adaptive
    pooling: textenvs images range from 8 px corridors to 64 px Crafter frames), other parts flattened;
    everything concatenated."""

    def __init__(self, observation_space: spaces.Dict, text_dim: int = 128, image_dim: int = 128):
        parts = observation_space.spaces
        if "text_features" not in parts:
            raise ValueError(f"TextImageExtractor needs a 'text_features' part, got {list(parts)}")
        others = [k for k in parts if k not in ("text_features", "image")]
        other_dim = sum(int(spaces.flatdim(parts[k])) for k in others)
        has_image = "image" in parts
        super().__init__(observation_space, text_dim + (image_dim if has_image else 0) + other_dim)
        self.others = others
        self.text = nn.Sequential(nn.Linear(parts["text_features"].shape[0], text_dim), nn.ReLU())
        self.image = None
        if has_image:
            channels = min(parts["image"].shape)  # SB3 hands images over channel-first
            self.image = nn.Sequential(
                nn.Conv2d(channels, 16, 3, padding=1),
                nn.ReLU(),
                nn.Conv2d(16, 32, 3, stride=2, padding=1),
                nn.ReLU(),
                nn.AdaptiveAvgPool2d((4, 4)),
                nn.Flatten(),
                nn.Linear(32 * 16, image_dim),
                nn.ReLU(),
            )

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        features = [self.text(observations["text_features"])]
        if self.image is not None:
            features.append(self.image(observations["image"].float()))
        features += [observations[k].float().flatten(1) for k in self.others]
        return torch.cat(features, dim=1)
