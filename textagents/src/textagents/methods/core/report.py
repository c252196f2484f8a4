"""``report.md`` and its plots: every numeric metric over iterations, training and evaluation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from textagents.bench.store import write_text_atomic

_NOT_METRICS = {"iteration", "kind", "time", "elapsed_s"}


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, imported on the first plot (not when a run starts)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def numeric_keys(records: list[dict[str, Any]]) -> list[str]:
    keys = dict.fromkeys(
        k for r in records for k, v in r.items() if isinstance(v, int | float) and not isinstance(v, bool)
    )
    return [k for k in keys if k not in _NOT_METRICS]


MAX_PANELS = 30


def plot_curves(records: list[dict[str, Any]], path: Path, title: str) -> Path | None:
    """One panel per metric that changes (at most ``MAX_PANELS``): training iterations as a line,
    evaluations as points."""
    keys = [k for k in numeric_keys(records) if len({repr(r[k]) for r in records if k in r}) > 1][:MAX_PANELS]
    if not keys:
        return None
    columns = min(3, len(keys))
    rows = math.ceil(len(keys) / columns)
    plt = pyplot()
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys, strict=False):
        for kind, style in (("train", "-"), ("eval", "o-")):
            points = [(r["iteration"], r[key]) for r in records if r.get("kind") == kind and key in r]
            if points:
                ax.plot(*zip(*points, strict=True), style, label=kind, markersize=4)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("iteration", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_similarity_histogram(
    groups: dict[str, list[float]],
    threshold: float,
    path: Path,
    xlabel: str = "cosine similarity",
    density: bool = False,
) -> Path:
    """Histograms of similarity ``groups`` (label -> values, in [0, 1]; ``density``: each scaled to area 1,
    for groups of very different sizes) and the ``threshold`` chosen between them: how a sentence-embedding
    threshold was calibrated (ELLM's, BK-Goal's)."""
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(6, 3.5))
    bins = np.linspace(0, 1, 41)
    for label, values in groups.items():
        ax.hist(values, bins=bins, alpha=0.6, density=density, label=f"{label} ({len(values)} pairs)")
    ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density" if density else "pairs")
    ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _cell(value: float) -> str:
    """A metric's value; NaN (nothing to average yet: BK's ``shaped_return`` before an episode ends) is n/a."""
    return "n/a" if math.isnan(value) else f"{value:.4g}"


def _table(record: dict[str, Any]) -> list[str]:
    rows = [f"| {k} | {_cell(v)} |" for k, v in record.items() if k in numeric_keys([record])]
    return ["| metric | value |", "|---|---:|", *rows]


def write_report(
    run_dir: Path, method: str, config: dict[str, Any], records: list[dict[str, Any]], sections: list[str]
) -> Path:
    """``report.md`` (config, last training and evaluation metrics, the method's sections) and
    ``curves.png``."""
    plot = plot_curves(records, run_dir / "curves.png", f"{method}: {run_dir.name}")
    train = [r for r in records if r.get("kind") == "train"]
    evals = [r for r in records if r.get("kind") == "eval"]
    lines = [
        f"# {method}: {run_dir.name}",
        "",
        "## Config",
        "",
        "```",
        *(f"{k}: {v}" for k, v in config.items()),
        "```",
    ]
    if evals:
        lines += ["", f"## Last evaluation (iteration {evals[-1]['iteration']})", "", *_table(evals[-1])]
    if train:
        lines += ["", f"## Last training iteration ({train[-1]['iteration']})", "", *_table(train[-1])]
    if plot is not None:
        lines += ["", f"![metrics over iterations]({plot.name})"]
    for section in sections:
        lines += ["", section.rstrip()]
    path = run_dir / "report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
