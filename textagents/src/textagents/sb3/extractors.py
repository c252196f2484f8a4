"""Feature extractors for ``MultiInputPolicy`` over ``TextFeaturesWrapper`` observations."""

from __future__ import annotations

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

#: The image CNNs of ``TextImageExtractor``.
CNNS = ("small", "full")


class TextImageExtractor(BaseFeaturesExtractor):
    """Text features through an MLP, the image through a CNN, other parts flattened; everything concatenated.

    Both CNNs end in adaptive pooling, so they accept any image size (textenvs images range from 8 px
    corridors to 224 px BabyAI views):

    - ``cnn="small"`` (the default): three stride-2 convolutions (16, 32, 32 channels) and 8 x 8 pooling,
      for images downscaled to 64 px (``ResizeImage``);
    - ``cnn="full"``: a convolution at the image's full resolution, a stride-2 one and 4 x 4 pooling. Runs
      saved before ``image_size`` existed have it; on a 224 x 224 BabyAI view it costs ~25x the small CNN
      on the same view downscaled to 64 px.
    """

    def __init__(self, observation_space: spaces.Dict, text_dim: int = 128, image_dim: int = 128, cnn: str = "small"):
        parts = observation_space.spaces
        if "text_features" not in parts:
            raise ValueError(f"TextImageExtractor needs a 'text_features' part, got {list(parts)}")
        if cnn not in CNNS:
            raise ValueError(f"unknown cnn {cnn!r}; valid: {CNNS}")
        others = [k for k in parts if k not in ("text_features", "image")]
        other_dim = sum(int(spaces.flatdim(parts[k])) for k in others)
        has_image = "image" in parts
        super().__init__(observation_space, text_dim + (image_dim if has_image else 0) + other_dim)
        self.others = others
        self.text = nn.Sequential(nn.Linear(parts["text_features"].shape[0], text_dim), nn.ReLU())
        self.image = None
        if has_image:
            channels = min(parts["image"].shape)  # SB3 hands images over channel-first
            self.image = small_cnn(channels, image_dim) if cnn == "small" else full_cnn(channels, image_dim)

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        features = [self.text(observations["text_features"])]
        if self.image is not None:
            features.append(self.image(observations["image"].float()))
        features += [observations[k].float().flatten(1) for k in self.others]
        return torch.cat(features, dim=1)


def small_cnn(channels: int, out_dim: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(channels, 16, 5, stride=2, padding=2),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d((8, 8)),
        nn.Flatten(),
        nn.Linear(32 * 64, out_dim),
        nn.ReLU(),
    )


def full_cnn(channels: int, out_dim: int) -> nn.Sequential:
    """The first CNN: its layers and their order are those of the saved runs' state dicts."""
    return nn.Sequential(
        nn.Conv2d(channels, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d((4, 4)),
        nn.Flatten(),
        nn.Linear(32 * 16, out_dim),
        nn.ReLU(),
    )
