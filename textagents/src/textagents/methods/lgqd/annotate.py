"""``textagents lgqd annotate``: replay every kept policy in the batched env and keep what the later stages
need: the env's trajectory annotation (the paper's, every 40th step and the last) and per policy the
observations it was given, the actions it took, its positions and its descriptor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import textenvs
from textagents.bench.store import to_json, write_text_atomic
from textagents.methods.lgqd.artifacts import Pipeline, PipelineError, read_npz, write_artifact
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.policies import INPUTS, OUTPUTS, layer_sizes, population

STAGE = "annotate"
ANNOTATIONS = "annotations.jsonl"
#: Policies replayed together (one vector env of this many robots).
CHUNK = 256


def rollouts(genomes: np.ndarray, config: LGQDConfig) -> tuple[dict[str, np.ndarray], list[Any]]:
    """Every genome's episode in ``config.env_id``'s vector env: ``observations`` float32[n, T, 5] (the
    sensors each action was chosen from), ``actions`` float32[n, T, 2] (the policy's outputs, before the
    env clips and rounds them), ``positions`` float32[n, T, 2] (x, y after each step, real units), ``bd``
    float64[n, 2]; and each episode's annotation."""
    count, horizon = len(genomes), config.horizon
    arrays = {
        "observations": np.zeros((count, horizon, INPUTS), np.float32),
        "actions": np.zeros((count, horizon, OUTPUTS), np.float32),
        "positions": np.zeros((count, horizon, 2), np.float32),
        "bd": np.zeros((count, 2)),
    }
    annotations: list[Any] = []
    sizes = layer_sizes(config.hidden_size, config.hidden_layers)
    for start in range(0, count, CHUNK):
        rows = slice(start, min(start + CHUNK, count))
        policies = population(genomes[rows], sizes, config.output_activation)
        env = textenvs.make_vec(config.env_id, policies.size, max_steps=horizon)
        try:
            observation, _ = env.reset(seed=0)
            for t in range(horizon):
                sensors = observation["sensors"]
                actions = policies.act(sensors)
                arrays["observations"][rows, t] = sensors
                arrays["actions"][rows, t] = actions
                observation, _, _, truncated, info = env.step(actions)
                arrays["positions"][rows, t] = info["robot_pos"][:, :2]
        finally:
            env.close()
        if not truncated.all():
            raise PipelineError(f"{config.env_id} did not end its episodes after {horizon} steps")
        arrays["bd"][rows] = info["bd"]
        annotations += list(info["trajectory_annotation"])
    return arrays, annotations


def run_annotate(out: str | Path) -> dict[str, Any]:
    """Write ``annotate/rollouts.npz``, ``annotations.jsonl`` (one ``{"item", "annotation"}`` per line) and
    ``annotate.json``. The replayed descriptors must equal the archive's (the env is deterministic)."""
    pipeline = Pipeline(out)
    config = pipeline.config()
    archive = read_npz(pipeline.require("dedupe", "archive.npz"))
    arrays, annotations = rollouts(archive["genomes"], config)
    mismatch = np.abs(arrays["bd"] - archive["bd"]).max(initial=0.0)
    if mismatch > 1e-4:
        raise PipelineError(f"replayed descriptors differ from the archive's by up to {mismatch:.3g} units")
    folder = pipeline.stage(STAGE)
    lines = [json.dumps({"item": i, "annotation": a}, default=to_json) + "\n" for i, a in enumerate(annotations)]
    write_text_atomic(folder / ANNOTATIONS, "".join(lines))
    summary = {"stage": STAGE, "items": len(annotations), "horizon": config.horizon}
    write_artifact(
        folder,
        "rollouts",
        {**arrays, **{key: archive[key] for key in ("ids", "genomes", "archive_rows")}},
        {**summary, "what": "item i: row i of every array and line i of annotations.jsonl"},
    )
    return summary
