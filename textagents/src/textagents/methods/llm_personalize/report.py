"""LLM-Personalize's Table 1 (success rate per planner, test and train) beside the paper's, its plot, and
the diagnostics that say why a planner fails (parse rate, failed-step causes, per-plan score) and what each
self-training round kept; for one run (``report.md``) and over the seeds of several
(``textagents method summarise``: ``table1_over_seeds``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textagents.methods.core import estimates
from textagents.methods.core.report import pyplot
from textagents.methods.llm_personalize.planner import FAILURE_CAUSES, SELECTION_OUTCOMES

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
SPLITS = ("test", "train")
#: The comparisons the paper's Table 1 makes, (planner, against), each judged on the paired difference.
CLAIMS = (("IL", "zero-shot"), ("ST iteration 1", "IL"), ("ST iteration 2", "ST iteration 1"), ("ST iteration 2", "IL"))


@dataclass
class Row:
    """One planner's evaluation: ``values[split][metric]`` (``success_rate`` and the diagnostics; each
    episode's success under ``episode_success/SCENE``, a list)."""

    label: str
    values: dict[str, dict[str, Any]]
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


def _split_values(record: dict[str, Any], prefix: str) -> dict[str, dict[str, Any]]:
    return {
        split: {k[len(prefix) + len(split) + 1 :]: v for k, v in record.items() if k.startswith(f"{prefix}{split}/")}
        for split in SPLITS
    }


def _table_head(columns: list[str]) -> list[str]:
    """A markdown table's header and rule: the first column left-aligned, the others right-aligned."""
    return ["| " + " | ".join(columns) + " |", "|---|" + "---:|" * (len(columns) - 1)]


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
            for s in SPLITS
        ]
        label = row.label if row.pairs is None else f"{row.label} ({row.pairs} pairs selected)"
        lines.append(f"| {label} | {ours[0]} | {ours[1]} | {paper[0]:.2f} | {paper[1]:.2f} |")
    if any(row.pairs == 0 for row in rows):
        lines += ["", "A round that selected 0 pairs trained nothing: its planner is the previous round's."]
    scenes = sorted({k.split("/", 1)[1] for row in rows for k in row.values["test"] if k.startswith("success_rate/")})
    if scenes:
        lines += ["", "Per scene (test / train, %):", "", *_table_head(["planner", *scenes])]
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
    header += [f"failed: {c}" for c in FAILURE_CAUSES] + ["objects put down / episode", "put down correctly"]
    lines = [
        "## Diagnostics (test and train episodes together)",
        "",
        "Shares of the steps taken (played or skipped); plan score = objects + receptacles discovered + 10 × the "
        "change in correctly placed objects per planning call (the original's log); objects put down: by a "
        "planning call, on a receptacle, and the share of them on one of their correct receptacles.",
        "",
        *_table_head(header),
    ]
    for row in rows:
        values = [_both(row, "parse_rate"), _both(row, "step_success_rate")]
        values += [_both(row, "plan_score"), _both(row, "planning_calls")]
        values += [_both(row, f"failed_steps/{c}") for c in FAILURE_CAUSES]
        values += [_both(row, "placements"), _both(row, "placed_correctly")]
        lines.append(f"| {row.label} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
    return "\n".join(lines)


def _both(row: Row, key: str) -> float:
    """The mean of the test and train value, weighted by their episodes."""
    pairs = [(row.values[s].get(key, 0.0), row.values[s].get("episodes", 1)) for s in SPLITS]
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


# ---------------------------------------------------------------- what each self-training round kept
_OUTCOME_TITLES = {
    "kept": "kept",
    "duplicate": "raised, duplicate key",
    "no_succeeded_step": "raised, no succeeded step",
    "moved_unchanged": "moved, count unchanged",
    "moved_nothing": "moved nothing",
    "unparsed": "no step parsed",
    "lowered": "lowered the count",
}


def render_selection(runs: dict[int, list[dict[str, Any]]]) -> str:
    """Per fine-tuning round, the pairs it trained on per scene (imitation: the demonstrations' planning
    calls; self-training: the rollouts' calls that the original's selection kept) and what the selection did
    with every rollout call; one value per seed (``runs``: seed -> metrics records)."""
    trains = {seed: {r["iteration"]: r for r in records if r.get("kind") == "train"} for seed, records in runs.items()}
    iterations = sorted({i for by_iteration in trains.values() for i in by_iteration})
    scenes = list(
        dict.fromkeys(k[6:] for t in trains.values() for r in t.values() for k in r if k.startswith("pairs/"))
    )
    outcomes = list(reversed(SELECTION_OUTCOMES))
    header = ["round", "rollouts", "planning calls", *(f"pairs: {s}" for s in scenes), "pairs"]
    header += [_OUTCOME_TITLES[o] for o in outcomes] + ["coverage: test", "coverage: train"]
    seeds = ", ".join(f"s{seed}" for seed in trains)
    lines = [
        "## Training pairs per round",
        "",
        f"One value per seed ({seeds}). Imitation trains on the demonstrations' planning calls; each self-training "
        "round on the calls of its rollouts that the original's selection keeps: those that raised the number of "
        "correctly placed objects, the first of each key (first object moved, its receptacles before and after, "
        "the correct set before). The next columns count the rollouts' calls by why they were left out. "
        "Coverage: of the evaluation episodes' misplaced objects, the share whose correct placement is in a "
        "pair trained on by the end of the round (the household's preferences the planner could have seen).",
        "",
        *_table_head(header),
    ]
    for iteration in iterations:
        records = [t.get(iteration, {}) for t in trains.values()]
        keys = ["rollouts", "planning_calls", *(f"pairs/{s}" for s in scenes), "pairs"]
        keys += [f"selection/{o}" for o in outcomes]
        cells = [" / ".join(_count(r.get(key)) for r in records) for key in keys]
        cells += [" / ".join(_share(r.get(f"coverage/{split}")) for r in records) for split in SPLITS]
        name = "IL (demonstrations)" if iteration == 1 else f"ST iteration {iteration - 1}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _count(value: Any) -> str:
    return "–" if value is None else f"{value:g}"


def _share(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


# ---------------------------------------------------------------- Table 1 over the seeds of several runs
def table1_over_seeds(runs: dict[int, list[dict[str, Any]]], plot: Path, title: str = "") -> list[str]:
    """Table 1 over several runs of the whole pipeline (``runs``: seed -> metrics records): the success rate
    per planner with standard errors over episodes and over seeds, per scene, the paired claims, the
    diagnostics, the training pairs per round, and the success over the rounds (written to ``plot``)."""
    per_seed = {seed: table1_rows(records) for seed, records in runs.items()}
    planners = _by_planner(per_seed)
    if not planners:
        return []
    merged = [_merged(label, by_seed) for label, by_seed in planners]
    figure = plot_success_by_round(planners, plot)
    return [
        render_table1_over_seeds(planners, title),
        render_per_scene(planners),
        render_claims(planners),
        f"![success over the rounds]({figure.name})",
        render_diagnostics(merged) + "\n\nOver seeds: each seed's value weighted by its episodes.",
        render_selection(runs),
    ]


def _by_planner(per_seed: dict[int, list[Row]]) -> list[tuple[str, dict[int, Row]]]:
    """Each planner's rows by seed, in Table 1's order."""
    labels = dict.fromkeys(row.label for rows in per_seed.values() for row in rows)
    return [(label, {s: r for s, rows in per_seed.items() for r in rows if r.label == label}) for label in labels]


def episode_values(row: Row, split: str, scene: str | None = None) -> list[float]:
    """Each evaluated episode's success (one scene's, or every scene's by scene name), in a fixed order: two
    planners evaluated on the same episodes give lists that pair up."""
    keys = sorted(k for k in row.values[split] if k.startswith("episode_success/"))
    if scene is not None:
        keys = [k for k in keys if k == f"episode_success/{scene}"]
    return [float(v) for k in keys for v in row.values[split][k]]


def _mean_se(values: list[float]) -> str:
    """Mean ± standard error (sample std / √n) in percent; ``n/a`` for no value."""
    if not values:
        return "n/a"
    mean = 100 * float(np.mean(values))
    if len(values) < 2:
        return f"{mean:.1f} (n=1)"
    return f"{mean:.1f} ± {100 * float(np.std(values, ddof=1)) / len(values) ** 0.5:.1f}"


def render_table1_over_seeds(planners: list[tuple[str, dict[int, Row]]], title: str = "") -> str:
    seeds = sorted({seed for _, by_seed in planners for seed in by_seed})
    lines = [
        f"## Table 1 over seeds{title}: success rate (%)",
        "",
        f"Seeds {seeds}, each a run of the whole pipeline (demonstrations, fine-tunings, evaluations). *episodes*: "
        "mean ± standard error over every evaluated episode of every seed (n); *seeds*: each seed's mean, then "
        "their mean ± standard error. Paper: Han et al. 2024, Table 1, 4-scene average (GPT-3.5 fine-tuned).",
        "",
        "| planner | test: episodes | test: seeds | train: episodes | train: seeds | paper test | paper train |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, by_seed in planners:
        cells = []
        for split in SPLITS:
            values = [v for row in by_seed.values() for v in episode_values(row, split)]
            cells.append(f"{_mean_se(values)} (n={len(values)})")
            means = {seed: row.values[split]["success_rate"] for seed, row in by_seed.items()}
            per_seed = ", ".join(f"s{seed} {100 * m:.1f}" for seed, m in means.items())
            cells.append(f"{per_seed}: {_mean_se(list(means.values()))}")
        paper = PAPER_TABLE1.get(label, (float("nan"), float("nan")))
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {paper[0]:.2f} | {paper[1]:.2f} |")
    return "\n".join(lines)


def render_per_scene(planners: list[tuple[str, dict[int, Row]]]) -> str:
    scenes = sorted(
        {
            k.split("/", 1)[1]
            for _, by_seed in planners
            for row in by_seed.values()
            for k in row.values["test"]
            if k.startswith("episode_success/")
        }
    )
    lines = [
        "Per scene, test / train (%): mean ± standard error over the episodes of every seed.",
        "",
        *_table_head(["planner", *scenes]),
    ]
    for label, by_seed in planners:
        cells = [
            " / ".join(
                _mean_se([v for r in by_seed.values() for v in episode_values(r, split, scene)]) for split in SPLITS
            )
            for scene in scenes
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_differences(row: Row, baseline: Row, split: str) -> list[float]:
    """``row``'s success minus ``baseline``'s on each episode both evaluated (same scene, same episode)."""
    ours, theirs = episode_values(row, split), episode_values(baseline, split)
    if len(ours) != len(theirs):
        raise ValueError(f"{row.label} and {baseline.label} were not evaluated on the same {split} episodes")
    return [a - b for a, b in zip(ours, theirs, strict=True)]


def render_claims(planners: list[tuple[str, dict[int, Row]]]) -> str:
    """The paper's comparisons, each on the paired difference over episodes (fixed before the run)."""
    found = dict(planners)
    lines = [
        "### Claims",
        "",
        "Measure, fixed before the run: the mean over every evaluated episode of every seed of the paired "
        "difference in success (the same episode, the same seed, two planners), with its percentile bootstrap "
        f"95% CI over episodes ({estimates.BOOTSTRAP_REPS:,} resamples, seed {estimates.BOOTSTRAP_SEED}); "
        "*shown* when the CI excludes 0, *inconclusive* otherwise. Each seed's mean difference is listed too: "
        "the episodes' CI does not hold the variation between runs of the pipeline, which the seeds show.",
        "",
        "| claim | split | n | mean difference (points) [95% CI] | per seed | verdict |",
        "|---|---|---:|---:|---|---|",
    ]
    for label, against in CLAIMS:
        if label not in found or against not in found:
            continue
        seeds = sorted(set(found[label]) & set(found[against]))
        for split in SPLITS:
            by_seed = {s: paired_differences(found[label][s], found[against][s], split) for s in seeds}
            pooled = [d for values in by_seed.values() for d in values]
            if not pooled:
                continue
            estimate = estimates.bootstrap(pooled, estimates.mean)
            verdict = estimates.PairedDifference(seeds, pooled, estimate).verdict
            interval = f"{100 * estimate.point:+.1f}"
            if estimate.has_interval:
                interval += f" [{100 * estimate.low:+.1f}, {100 * estimate.high:+.1f}]"  # type: ignore[operator]
            per_seed = ", ".join(f"s{s} {100 * float(np.mean(v)):+.1f}" for s, v in by_seed.items() if v)
            lines.append(f"| {label} > {against} | {split} | {len(pooled)} | {interval} | {per_seed} | {verdict} |")
    return "\n".join(lines)


def _merged(label: str, by_seed: dict[int, Row]) -> Row:
    """One row of every seed's: each number weighted by its seed's episodes (episodes summed)."""
    values: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        weights = {seed: row.values[split].get("episodes", 1) for seed, row in by_seed.items()}
        total = sum(weights.values()) or 1
        keys = dict.fromkeys(k for row in by_seed.values() for k, v in row.values[split].items() if _number(v))
        values[split] = {
            k: sum(weights[s] * r.values[split].get(k, 0.0) for s, r in by_seed.items()) / total for k in keys
        }
        values[split]["episodes"] = sum(weights.values())
    return Row(label, values)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_round(label: str) -> bool:
    return label in ("zero-shot", "IL") or label.startswith("ST iteration")


def plot_success_by_round(planners: list[tuple[str, dict[int, Row]]], path: Path) -> Path:
    """Success over the rounds (zero-shot, IL, each self-training round), test and train: each seed's mean,
    every seed's episodes' mean ± standard error, the paper's numbers; the baselines as horizontal lines."""
    rounds = [(label, by_seed) for label, by_seed in planners if _is_round(label)]
    baselines = [(label, by_seed) for label, by_seed in planners if not _is_round(label)]
    seeds = sorted({seed for _, by_seed in rounds for seed in by_seed})
    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    positions = list(range(len(rounds)))
    for ax, (split, column) in zip(axes, ((s, i) for i, s in enumerate(SPLITS)), strict=True):
        for seed in seeds:
            points = [
                (x, 100 * by_seed[seed].values[split]["success_rate"])
                for x, (_, by_seed) in zip(positions, rounds, strict=True)
                if seed in by_seed
            ]
            ax.plot(*zip(*points, strict=True), "-", color="C0", alpha=0.35, linewidth=1)
        pooled = [[v for row in by_seed.values() for v in episode_values(row, split)] for _, by_seed in rounds]
        means = [100 * float(np.mean(v)) if v else float("nan") for v in pooled]
        errors = [100 * float(np.std(v, ddof=1)) / len(v) ** 0.5 if len(v) > 1 else 0.0 for v in pooled]
        ax.errorbar(
            positions, means, yerr=errors, fmt="o-", color="C0", capsize=4, label=f"ours ({len(seeds)} seeds, ± SE)"
        )
        paper = [PAPER_TABLE1.get(label, (float("nan"),) * 2)[column] for label, _ in rounds]
        ax.plot(positions, paper, "s--", color="C1", label="paper (GPT-3.5)")
        for index, (label, by_seed) in enumerate(baselines):
            values = [v for row in by_seed.values() for v in episode_values(row, split)]
            if values:
                ax.axhline(100 * float(np.mean(values)), color=f"C{index + 2}", linestyle=":", label=f"{label} (ours)")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(positions, [label.replace("ST iteration ", "ST") for label, _ in rounds])
        ax.set_title(f"{split} episodes", fontsize=10)
        ax.set_ylabel("success rate (%)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("LLM-Personalize: success over the fine-tuning rounds", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
