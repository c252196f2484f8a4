"""LLM-Personalize's Table 1 (success rate per planner, test and train) beside the paper's, its plot, and
the diagnostics that say why a planner fails (parse rate, failed-step causes, per-plan score)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textagents.methods.core.report import pyplot
from textagents.methods.llm_personalize.planner import FAILURE_CAUSES

#: LLM-Personalize Table 1, 4-scene averages of the success rate (%), test / train.
PAPER_TABLE1 = {
    "zero-shot": (-11.95, -11.73),
    "SayCan": (-4.67, -2.23),
    "SayPlan": (-8.00, -6.04),
    "IL": (20.07, 8.59),
    "ST iteration 1": (24.80, 23.53),
    "ST iteration 2": (29.63, 26.69),
}
_BASELINE_LABELS = {"zero_shot": "zero-shot", "saycan": "SayCan", "sayplan": "SayPlan"}


@dataclass
class Row:
    """One planner's evaluation: ``values[split][metric]`` (``success_rate`` and the diagnostics)."""

    label: str
    values: dict[str, dict[str, float]]
    #: A self-training round's selected (prompt, plan) pairs; ``None`` for the other planners.
    pairs: int | None = None


def table1_rows(metrics: list[dict[str, Any]]) -> list[Row]:
    """Zero-shot and baselines from iteration 1's training record, then IL and each self-training round
    from the evaluations that follow the fine-tunings."""
    rows = []
    first = next((r for r in metrics if r.get("kind") == "train" and r.get("iteration") == 1), None)
    for prefix, label in _BASELINE_LABELS.items():
        if first is not None and f"{prefix}/test/success_rate" in first:
            rows.append(Row(label, _split_values(first, f"{prefix}/")))
    pairs = {r.get("iteration"): r["pairs"] for r in metrics if r.get("kind") == "train" and "pairs" in r}
    for index, record in enumerate(r for r in metrics if r.get("kind") == "eval"):
        if index == 0:
            rows.append(Row("IL", _split_values(record, "")))
        else:
            rows.append(Row(f"ST iteration {index}", _split_values(record, ""), pairs.get(record.get("iteration"))))
    return rows


def _split_values(record: dict[str, Any], prefix: str) -> dict[str, dict[str, float]]:
    return {
        split: {k[len(prefix) + len(split) + 1 :]: v for k, v in record.items() if k.startswith(f"{prefix}{split}/")}
        for split in ("test", "train")
    }


def render_table1(rows: list[Row]) -> str:
    lines = [
        "## Table 1: success rate (%), test / train",
        "",
        "Ours: mean ± standard deviation over the evaluated episodes (all scenes pooled). Paper: 4-scene average.",
        "",
        "| planner | ours test | ours train | paper test | paper train |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        paper = PAPER_TABLE1.get(row.label, (float("nan"), float("nan")))
        ours = [
            f"{100 * row.values[s]['success_rate']:.1f} ± {100 * row.values[s].get('success_rate_std', 0.0):.1f}"
            for s in ("test", "train")
        ]
        label = row.label if row.pairs is None else f"{row.label} ({row.pairs} pairs selected)"
        lines.append(f"| {label} | {ours[0]} | {ours[1]} | {paper[0]:.2f} | {paper[1]:.2f} |")
    if any(row.pairs == 0 for row in rows):
        lines += ["", "A round that selected 0 pairs trained nothing: its planner is the previous round's."]
    scenes = sorted({k.split("/", 1)[1] for row in rows for k in row.values["test"] if k.startswith("success_rate/")})
    if scenes:
        lines += ["", "Per scene (test / train, %):", "", "| planner | " + " | ".join(scenes) + " |"]
        lines.append("|---|" + "---:|" * len(scenes))
        for row in rows:
            cells = [
                f"{100 * row.values['test'].get(f'success_rate/{s}', float('nan')):.1f} / "
                f"{100 * row.values['train'].get(f'success_rate/{s}', float('nan')):.1f}"
                for s in scenes
            ]
            lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_diagnostics(rows: list[Row]) -> str:
    """Where the planners fail: how many steps parse, succeed, and why the others did not."""
    header = ["planner", "parse rate", "step success", "plan score", "calls / episode"]
    header += [f"failed: {c}" for c in FAILURE_CAUSES]
    lines = [
        "## Diagnostics (test and train episodes together)",
        "",
        "Shares of the steps taken (played or skipped); plan score = objects + receptacles discovered + 10 × the "
        "change in correctly placed objects per planning call (the original's log).",
        "",
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
    ]
    for row in rows:
        values = [_both(row, "parse_rate"), _both(row, "step_success_rate")]
        values += [_both(row, "plan_score"), _both(row, "planning_calls")]
        values += [_both(row, f"failed_steps/{c}") for c in FAILURE_CAUSES]
        lines.append(f"| {row.label} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
    return "\n".join(lines)


def _both(row: Row, key: str) -> float:
    """The mean of the test and train value, weighted by their episodes."""
    pairs = [(row.values[s].get(key, 0.0), row.values[s].get("episodes", 1)) for s in ("test", "train")]
    total = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / total if total else 0.0


def plot_table1(rows: list[Row], path: Path) -> Path:
    """Bars of success rate per planner, ours (with error bars) beside the paper's, test and train."""
    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=False)
    positions = range(len(rows))
    for ax, (split, column) in zip(axes, (("test", 0), ("train", 1)), strict=True):
        ours = [100 * r.values[split]["success_rate"] for r in rows]
        errors = [100 * r.values[split].get("success_rate_std", 0.0) for r in rows]
        paper = [PAPER_TABLE1.get(r.label, (float("nan"),) * 2)[column] for r in rows]
        ax.bar([p - 0.2 for p in positions], ours, 0.4, yerr=errors, capsize=3, label="ours (SmolLM2-135M, CPU)")
        ax.bar([p + 0.2 for p in positions], paper, 0.4, label="paper (GPT-3.5 fine-tuned)")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(list(positions), [r.label for r in rows], rotation=20, fontsize=8)
        ax.set_title(f"{split} episodes", fontsize=10)
        ax.set_ylabel("success rate (%)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("LLM-Personalize Table 1: ours beside the paper's", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
