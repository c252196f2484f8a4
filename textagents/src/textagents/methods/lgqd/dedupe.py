"""``textagents lgqd dedupe``: drop archive entries whose descriptor lies within ``dedupe_tolerance`` of an
earlier kept entry (0: exact duplicates only, e.g. an individual archived twice); ``None`` keeps every
entry, as the original's ``--fix_duplicates`` does (it only copies duplicates apart, to pair each copy with
its own description)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sklearn.neighbors import NearestNeighbors

from textagents.methods.lgqd.artifacts import Pipeline, read_npz, write_artifact

STAGE = "dedupe"


def kept_rows(bd: np.ndarray, tolerance: float | None) -> np.ndarray:
    """Rows of ``bd`` [n, 2] kept, in order: each one farther than ``tolerance`` from every earlier kept row."""
    if tolerance is None or len(bd) == 0:
        return np.arange(len(bd))
    neighbours = NearestNeighbors().fit(bd).radius_neighbors(bd, radius=tolerance, return_distance=False)
    dropped = np.zeros(len(bd), bool)
    for row, near in enumerate(neighbours):
        if not dropped[row]:
            dropped[near[near > row]] = True
    return np.flatnonzero(~dropped)


def run_dedupe(out: str | Path) -> dict[str, Any]:
    """Write ``dedupe/archive.npz`` (the kept entries, with their ``archive_rows``) and ``dedupe.json``."""
    pipeline = Pipeline(out)
    config = pipeline.config()
    archive = read_npz(pipeline.require("archive", "archive.npz"))
    rows = kept_rows(archive["bd"], config.dedupe_tolerance)
    summary = {"stage": STAGE, "entries_in": len(archive["bd"]), "entries_out": len(rows)}
    write_artifact(
        pipeline.stage(STAGE),
        "archive",
        {**{key: value[rows] for key, value in archive.items()}, "archive_rows": rows},
        {**summary, "tolerance": config.dedupe_tolerance, "what": "archive entries kept; archive_rows: their rows"},
    )
    return summary
