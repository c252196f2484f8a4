"""The leaderboard's PNG plots (matplotlib, no display needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _colors(agents: list[str]) -> dict[str, Any]:
    palette = plt.get_cmap("tab10")
    return {agent: palette(i % 10) for i, agent in enumerate(agents)}


def plot_leaderboard(summary: dict[str, Any], path: Path, metric: str = "progression") -> Path:
    """One panel per env: each agent's mean ``metric`` with its standard error as an error bar."""
    envs = list(dict.fromkeys(c["env"] for c in summary["cells"]))
    agents = [a["agent"] for a in summary["agents"]]
    colors = _colors(agents)
    columns = min(4, len(envs))
    rows = math.ceil(len(envs) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.9 * rows), squeeze=False)
    for ax, env in zip(axes.flat, envs, strict=False):
        cells = {c["agent"]: c for c in summary["cells"] if c["env"] == env}
        names = [a for a in agents if a in cells]
        means = [cells[a][metric]["mean"] for a in names]
        errors = [cells[a][metric]["stderr"] for a in names]
        ax.bar(range(len(names)), means, yerr=errors, capsize=3, color=[colors[a] for a in names])
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(env, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(envs) :]:
        ax.axis("off")
    for row in axes:
        row[0].set_ylabel(metric)
    figure.suptitle(f"{summary['suite']}: {metric} per env (mean ± standard error)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_learning_curves(curves: dict[str, list[dict[str, float]]], path: Path) -> Path:
    """Success rate against training timesteps, one line per trained agent."""
    figure, ax = plt.subplots(figsize=(6, 4))
    colors = _colors(list(curves))
    for agent, points in curves.items():
        ax.plot([p["timesteps"] for p in points], [p["success_rate"] for p in points], color=colors[agent], label=agent)
    ax.set_xlabel("timesteps")
    ax.set_ylabel("success rate (training episodes)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
