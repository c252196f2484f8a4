"""``textagents lgqd archive``: novelty search with checkpoints (every ``archive_checkpoint_every``
generations and at generation 0), one ``progress.jsonl`` line per generation (archive size, coverage), and
at the end ``archive.npz`` + ``archive.json`` and the coverage plots."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from textagents.bench.store import to_json, write_json_atomic, write_text_atomic
from textagents.jsonl import append_records, read_jsonl
from textagents.methods.core.config import ConfigError, load_config
from textagents.methods.lgqd.artifacts import (
    METHOD,
    Pipeline,
    PipelineError,
    read_npz,
    save_figure,
    write_artifact,
    write_npz_atomic,
)
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.coverage import coverage, reachable_cells
from textagents.methods.lgqd.policies import layout_of
from textagents.methods.lgqd.search import NoveltySearch
from textenvs.envs.fastsim.simulator import World, load_world

STAGE = "archive"
PROGRESS = "progress.jsonl"
CHECKPOINT = "checkpoint.json"


def run_archive(config_path: str | Path, out: str | Path, *, resume: bool = False, progress: bool = True) -> dict:
    """Build the archive into the pipeline folder ``out`` (new or empty; or continue it with ``resume``)."""
    config = load_config(LGQDConfig, config_path)
    try:
        world = load_world(layout_of(config.env_id))
    except ValueError as error:
        raise ConfigError(f"{config_path}: {error}") from error
    pipeline = Pipeline(out)
    search = NoveltySearch(config)
    if resume:
        pipeline.run.check_same(METHOD, config.as_dict())
        folder = pipeline.stage(STAGE)
        if (folder / "archive.json").is_file():
            return _summary(pipeline, config)
        _restore(search, folder)
    else:
        pipeline.run.create(METHOD, config.as_dict())
        folder = pipeline.stage(STAGE)
        search.start()
        _save_checkpoint(search, folder)
    reachable = reachable_cells(world, config.coverage_cells)
    bar = tqdm(
        total=config.generations, initial=search.generation, desc="lgqd archive", unit="gen", disable=not progress
    )
    while search.generation < config.generations:
        began = time.perf_counter()
        metrics = search.step()
        cover = coverage(search.archive.bd, reachable, world.layout.real_size)
        record = {"generation": search.generation, **metrics, "coverage": cover}
        append_records(folder / PROGRESS, [{**record, "seconds": time.perf_counter() - began}], default=to_json)
        if search.generation % config.archive_checkpoint_every == 0 or search.generation == config.generations:
            _save_checkpoint(search, folder)
        bar.update(1)
        bar.set_postfix({"archive": metrics["archive_size"], "coverage": f"{cover:.3f}"}, refresh=False)
    bar.close()
    _finish(search, folder, world, reachable)
    return _summary(pipeline, config)


def _save_checkpoint(search: NoveltySearch, folder: Path) -> None:
    """The arrays under a generation's name, then the JSON naming them, then older arrays removed: a kill
    at any moment leaves a complete checkpoint."""
    state, arrays = search.state()
    name = f"checkpoint_{search.generation:06d}.npz"
    write_npz_atomic(folder / name, arrays)
    write_json_atomic(folder / CHECKPOINT, {**state, "arrays": name})
    for old in folder.glob("checkpoint_*.npz"):
        if old.name != name:
            old.unlink()


def _restore(search: NoveltySearch, folder: Path) -> None:
    """The last checkpoint; progress lines logged after it are dropped (they will be logged again)."""
    if not (folder / CHECKPOINT).is_file():
        raise PipelineError(f"{folder} has no checkpoint: nothing to resume; start again in a new folder")
    state = _read_json(folder / CHECKPOINT)
    search.restore(state, read_npz(folder / state["arrays"]))
    kept = [r for r in _progress(folder) if r["generation"] <= search.generation]
    write_text_atomic(folder / PROGRESS, "".join(_line(r) for r in kept))


def _finish(search: NoveltySearch, folder: Path, world: World, reachable: np.ndarray) -> None:
    records = _progress(folder)
    _plot(records, search.archive.bd, search.archive.added, world, folder)
    archive = search.archive
    write_artifact(
        folder,
        "archive",
        archive.arrays(""),
        {
            "what": "the novelty search's archive: one row per entry (an individual can appear more than once)",
            "generations": search.generation,
            "entries": len(archive),
            "distinct_individuals": len(np.unique(archive.ids)),
            "coverage": records[-1]["coverage"] if records else 0.0,
            "coverage_grid": f"{reachable.shape[0]} x {reachable.shape[0]} cells, {int(reachable.sum())} reachable",
            "genome_layout": "per layer: weights (out x in, row-major) then biases; tanh hidden layers",
        },
    )


def _plot(records: list[dict[str, Any]], bd: np.ndarray, added: np.ndarray, world: World, folder: Path) -> None:
    """``progress.png`` (archive size and coverage per generation) and ``archive_map.png`` (the archive's
    descriptors on the map, coloured by the generation they joined)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    generations = [r["generation"] for r in records]
    figure, (size_axis, coverage_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
    size_axis.plot(generations, [r["archive_size"] for r in records])
    size_axis.set(xlabel="generation", ylabel="archive entries", title="archive size")
    coverage_axis.plot(generations, [100 * r["coverage"] for r in records])
    coverage_axis.set(xlabel="generation", ylabel="% of reachable cells", title="map coverage")
    save_figure(figure, folder / "progress.png")

    figure, axis = plt.subplots(figsize=(5.5, 5))
    real = world.layout.real_size
    axis.imshow(world.obstacles, cmap="gray_r", extent=(0, real, real, 0))
    points = axis.scatter(bd[:, 0], bd[:, 1], c=added, s=4, cmap="viridis")
    figure.colorbar(points, ax=axis, label="generation added")
    axis.set(title=f"archive: {len(bd)} descriptors (final x, y)", xlim=(0, real), ylim=(real, 0))
    save_figure(figure, folder / "archive_map.png")


def _summary(pipeline: Pipeline, config: LGQDConfig) -> dict[str, Any]:
    metadata = _read_json(pipeline.path / STAGE / "archive.json")
    return {
        "stage": STAGE,
        "archive": str(pipeline.path / STAGE / "archive.npz"),
        "entries": metadata["entries"],
        "generations": config.generations,
        "coverage": metadata["coverage"],
    }


def _progress(folder: Path) -> list[dict[str, Any]]:
    return read_jsonl(folder / PROGRESS)[0] if (folder / PROGRESS).is_file() else []


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, default=to_json) + "\n"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())
