"""Stable-Baselines3 on textenvs: text featurizers, observation wrappers, extractors, train/evaluate."""

from textagents.sb3.features import HashedBagOfWords, SentenceEmbedder, make_featurizer, offline_sbert_path
from textagents.sb3.wrappers import TextFeaturesWrapper, make_sb3_env

__all__ = [
    "HashedBagOfWords",
    "SentenceEmbedder",
    "TextFeaturesWrapper",
    "make_featurizer",
    "make_sb3_env",
    "offline_sbert_path",
]
