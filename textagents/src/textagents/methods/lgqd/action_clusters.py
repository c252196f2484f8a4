"""Actions as a k-means cluster plus an offset, one clustering per action dimension (the original's
``cluster_actions(per_dim=True)`` with 4 clusters a wheel): the decision transformer classifies each
dimension's cluster and regresses the offset from its centre."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans

from textagents.bench.store import write_json_atomic

#: The paper's number of clusters per action dimension.
CLUSTERS = 4


@dataclass(frozen=True)
class ActionClusters:
    """``centers`` float64[D, K]: the K cluster centres of each of the D action dimensions, ascending (so
    cluster 0 is the slowest wheel speed whatever order k-means found them in)."""

    centers: np.ndarray

    def __post_init__(self) -> None:
        centers = np.asarray(self.centers, np.float64)
        if centers.ndim != 2 or centers.shape[1] < 1 or not np.isfinite(centers).all():
            raise ValueError(f"centers must be finite numbers shaped [dimensions, clusters], got {centers.shape}")
        object.__setattr__(self, "centers", np.sort(centers, axis=1))

    @property
    def dimensions(self) -> int:
        return self.centers.shape[0]

    @property
    def clusters(self) -> int:
        return self.centers.shape[1]

    @classmethod
    def fit(cls, actions: np.ndarray, clusters: int = CLUSTERS, seed: int = 0) -> ActionClusters:
        """k-means (scikit-learn, ``random_state=seed``) of each column of ``actions`` [N, D]; every column
        needs at least ``clusters`` distinct values."""
        actions = np.asarray(actions, np.float64)
        if actions.ndim != 2 or not np.isfinite(actions).all():
            raise ValueError(f"actions must be finite numbers shaped [steps, dimensions], got {actions.shape}")
        centers = []
        for d in range(actions.shape[1]):
            distinct = len(np.unique(actions[:, d]))
            if distinct < clusters:
                raise ValueError(f"action dimension {d} has {distinct} distinct values, fewer than {clusters} clusters")
            kmeans = KMeans(n_clusters=clusters, random_state=seed, n_init=10).fit(actions[:, [d]])
            centers.append(kmeans.cluster_centers_[:, 0])
        return cls(np.stack(centers))

    def encode(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each action [..., D] as its dimensions' nearest centres: cluster ids int64[..., D] and offsets
        float64[..., D] (action minus centre). Ties go to the lower centre, as k-means' ``predict`` does."""
        actions = np.asarray(actions, np.float64)
        if actions.shape[-1:] != (self.dimensions,):
            raise ValueError(f"actions of shape {actions.shape} do not end with {self.dimensions} dimensions")
        ids = np.abs(actions[..., None] - self.centers).argmin(-1)
        return ids, actions - self.centre_of(ids)

    def decode(self, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The actions [..., D] of cluster ids and offsets (the inverse of ``encode``)."""
        return self.centre_of(ids) + np.asarray(offsets, np.float64)

    def centre_of(self, ids: np.ndarray) -> np.ndarray:
        """The centres float64[..., D] of cluster ids int[..., D]."""
        return self.centers[np.arange(self.dimensions), np.asarray(ids, np.int64)]

    def to_json(self) -> dict[str, list[list[float]]]:
        return {"centers": self.centers.tolist()}

    def save(self, path: str | Path) -> None:
        """``{"centers": [[...], ...]}`` written atomically (JSON keeps every float exactly)."""
        write_json_atomic(Path(path), self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> ActionClusters:
        return cls(np.asarray(json.loads(Path(path).read_text())["centers"], np.float64))
