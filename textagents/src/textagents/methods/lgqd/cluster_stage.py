"""``textagents lgqd cluster-actions``: the k-means clusters of each action dimension over every step of
the train split (``action_clusters`` a dimension, seeded): ``cluster-actions/clusters.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textagents.methods.lgqd.action_clusters import ActionClusters
from textagents.methods.lgqd.artifacts import Pipeline
from textagents.methods.lgqd.dataset import load_split

STAGE = "cluster-actions"
CLUSTERS = "clusters.json"


def run_cluster_actions(out: str | Path) -> dict[str, Any]:
    pipeline = Pipeline(out)
    config = pipeline.config()
    actions = load_split(out, "train").actions
    clusters = ActionClusters.fit(actions.reshape(-1, actions.shape[-1]), config.action_clusters, config.seed)
    clusters.save(pipeline.stage(STAGE) / CLUSTERS)
    return {"stage": STAGE, "steps": int(actions.shape[0] * actions.shape[1]), **clusters.to_json()}


def load_clusters(pipeline: Pipeline) -> ActionClusters:
    """The clusters the stage saved; an error naming the stage when it has not run."""
    return ActionClusters.load(pipeline.require(STAGE, CLUSTERS))
