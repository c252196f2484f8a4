"""``comparison.md`` and its plots, from the run folders of a comparison (``textagents method compare``
writes it after its runs; ``textagents method summarise`` writes it again from the folders alone).

Per panel of the method's curves (``Method.comparison_curves``) and per measure fixed in advance (never the
best point): ``final``, y at the final budget (the last x every run of the comparison reached), and ``AUC``,
the mean of y over the x values every run reached (``textagents.methods.core.estimates``). For each value of
the setting: per-seed numbers, mean ± sample std, IQM with its stratified-bootstrap 95% CI; for each value
against the first: per-seed paired differences (value − first, same seed), their mean with its bootstrap CI,
the probability of improvement with its CI, and the verdict (shown when the paired CI excludes 0).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textagents.bench.store import write_text_atomic
from textagents.methods.core import estimates
from textagents.methods.core.code_state import CodeState, check_pooled, describe, run_code_states
from textagents.methods.core.run_dir import CONFIG_FILE, METRICS_FILE
from textagents.methods.registry import method_class

COMPARISON = "comparison"
MEASURES: dict[str, Callable[[estimates.Curve, Sequence[float]], float]] = {
    "final": estimates.final_value,
    "AUC": estimates.area_under_curve,
}


@dataclass
class Arm:
    """One value of the compared setting: its label and its run folders by seed."""

    label: str
    runs: dict[int, Path]


@dataclass
class Panel:
    """One curve of the method over every run: (x, y) points by arm label and seed, and the measures."""

    name: str
    curves: dict[str, dict[int, list[tuple[float, float]]]]

    @property
    def points(self) -> list[float]:
        return estimates.common_points([c for by_seed in self.curves.values() for c in by_seed.values()])

    def scores(self, measure: str) -> dict[str, dict[int, float]]:
        points = self.points
        return {
            label: {seed: MEASURES[measure](curve, points) for seed, curve in sorted(by_seed.items())}
            for label, by_seed in self.curves.items()
        }


def read_records(run: Path) -> list[dict[str, Any]]:
    path = run / METRICS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def read_config(run: Path) -> dict[str, Any] | None:
    path = run / CONFIG_FILE
    return json.loads(path.read_bytes()) if path.is_file() else None


def write_comparison(out: Path, method: str, key: str, arms: Sequence[Arm], allow_mixed_code: bool = False) -> Path:
    """``out/comparison.md``, ``comparison.png`` (curves), ``comparison_intervals.png`` (IQM and CIs) and
    ``comparison_profiles.png`` (performance profiles); ``MixedCodeError`` when the runs were made at
    different code states, unless ``allow_mixed_code`` (then the report lists each run's state)."""
    cls = method_class(method)
    states = {run.name: run_code_states(read_config(run)) for arm in arms for run in arm.runs.values()}
    pooled = check_pooled(states, allow_mixed_code)
    runs = {arm.label: {seed: read_records(run) for seed, run in sorted(arm.runs.items())} for arm in arms}
    panels: dict[str, Panel] = {}
    for arm in arms:
        for seed, records in runs[arm.label].items():
            for name, points in cls.comparison_curves(records).items():
                panel = panels.setdefault(name, Panel(name, {}))
                panel.curves.setdefault(arm.label, {})[seed] = list(points)
    seeds = sorted({seed for arm in arms for seed in arm.runs})
    lines = [
        f"# {method}: {key} compared",
        "",
        f"Seeds {seeds}. Measures fixed in advance, never the best point: **final** = the value at the final budget "
        "(the last x every run reached); **AUC** = the mean of the value over the x values every run reached "
        "(the normalised area under the curve). std = sample standard deviation (ddof=1) over seeds; IQM = "
        "interquartile mean over seeds; CIs: percentile stratified bootstrap 95% (rliable's estimators, "
        f"{estimates.BOOTSTRAP_REPS:,} resamples, seed {estimates.BOOTSTRAP_SEED}). Differences are paired by seed "
        f"against the first value; verdict: *shown* when the CI of the mean paired difference excludes 0, "
        "*inconclusive* when it holds 0 (few seeds make the bootstrap CI little more than the range of the seeds).",
        "",
        *_code_section(states, pooled),
    ]
    for section in cls.comparison_sections(runs, out):
        lines += [section.rstrip(), ""]
    for panel in panels.values():
        lines += _panel_section(panel, key, [a.label for a in arms], cls.comparison_x)
    _plot_curves(out / f"{COMPARISON}.png", panels, cls.comparison_x)
    _plot_intervals(out / f"{COMPARISON}_intervals.png", panels)
    _plot_profiles(out / f"{COMPARISON}_profiles.png", panels)
    lines += [
        "![the curves](comparison.png)",
        "",
        "![IQM with 95% CIs](comparison_intervals.png)",
        "",
        "![performance profiles](comparison_profiles.png)",
    ]
    path = out / f"{COMPARISON}.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def _code_section(states: dict[str, tuple[CodeState, ...]], pooled: CodeState | None) -> list[str]:
    if pooled is not None:
        return [f"Code: every run at `{pooled}`.", ""]
    rows = [f"| {name} | {describe(run_states)} |" for name, run_states in states.items()]
    title = "**Runs made at different code states** (pooled with --allow-mixed-code):"
    return [title, "", *_table(("run", "code state"), "ll"), *rows, ""]


def _table(columns: Sequence[str], aligns: str) -> list[str]:
    """A markdown table's header; ``aligns`` has one letter a column: ``l`` left, ``r`` right."""
    return [f"| {' | '.join(columns)} |", f"|{'|'.join('---:' if a == 'r' else '---' for a in aligns)}|"]


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3f}"


def _x(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _interval(estimate: estimates.Estimate) -> str:
    if not estimate.has_interval:
        return f"{_number(estimate.point)} (n={estimate.n}, no CI)"
    return f"{_number(estimate.point)} [{_number(estimate.low)}, {_number(estimate.high)}]"  # type: ignore[arg-type]


def _mean_std(values: Sequence[float]) -> str:
    if len(values) < 2:
        return f"{_number(values[0])} (n=1)"
    return f"{_number(float(np.mean(values)))} ± {_number(float(np.std(values, ddof=1)))}"


def _per_seed(by_seed: dict[int, float]) -> str:
    return ", ".join(f"s{seed} {_number(value)}" for seed, value in by_seed.items())


def _panel_section(panel: Panel, key: str, labels: list[str], x_name: str) -> list[str]:
    lines = [f"## {panel.name}", ""]
    points = panel.points
    if not points:
        return [*lines, "No x value that every run reached: no final or AUC measure.", ""]
    labels = [label for label in labels if label in panel.curves]
    lines += [
        f"Final budget: {x_name} {_x(points[-1])}; AUC over the {len(points)} points every run reached "
        f"({_x(points[0])} … {_x(points[-1])}).",
        "",
        *_table((key, "measure", "n", "per seed", "mean ± std", "IQM [95% CI]"), "llrlrr"),
    ]
    scores = {measure: panel.scores(measure) for measure in MEASURES}
    for label in labels:
        for measure, by_label in scores.items():
            by_seed = by_label[label]
            iqm = estimates.bootstrap(list(by_seed.values()), estimates.iqm)
            row = [
                label,
                measure,
                str(len(by_seed)),
                _per_seed(by_seed),
                _mean_std(list(by_seed.values())),
                _interval(iqm),
            ]
            lines.append(f"| {' | '.join(row)} |")
    lines.append("")
    baseline, *others = labels
    improvement_column = f"P({key} > {baseline}) [95% CI]"
    if others:
        lines += [
            f"Against {key}={baseline}, paired by seed (value − {baseline}):",
            "",
            *_table((key, "measure", "per-seed difference", "mean [95% CI]", improvement_column, "verdict"), "lllrrl"),
        ]
        for label in others:
            for measure, by_label in scores.items():
                paired = estimates.paired_difference(by_label[label], by_label[baseline])
                improvement = estimates.bootstrap_improvement(
                    list(by_label[label].values()), list(by_label[baseline].values())
                )
                differences = _per_seed(dict(zip(paired.seeds, paired.differences, strict=True))) or "no common seed"
                verdict = paired.verdict
                if verdict.startswith("shown"):
                    verdict = f"shown: {label} {verdict.split(': ')[1]} than {baseline}"
                row = [label, measure, differences, _interval(paired.estimate), _interval(improvement), verdict]
                lines.append(f"| {' | '.join(row)} |")
        lines.append("")
    lines += ["Curves (mean ± sample std over seeds):", "", *_table((key, x_name, "n", "mean ± std"), "lrrr")]
    for label in labels:
        for x, values in _curve_values(panel.curves[label]):
            lines.append(f"| {label} | {_x(x)} | {len(values)} | {_mean_std(values)} |")
    lines.append("")
    return lines


def _curve_values(by_seed: dict[int, list[tuple[float, float]]]) -> list[tuple[float, list[float]]]:
    """The x values every seed of one arm reached, with each seed's y there."""
    common = estimates.common_points(list(by_seed.values()))
    return [(x, [dict(curve)[x] for curve in by_seed.values()]) for x in common]


def _figure(rows: int, columns: int, width: float, height: float) -> tuple[Any, np.ndarray]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(
        max(1, rows), max(1, columns), figsize=(width * max(1, columns), height * max(1, rows)), squeeze=False
    )


def _save(figure: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _plot_curves(path: Path, panels: dict[str, Panel], x_name: str) -> None:
    figure, axes = _figure(1, len(panels), 5.5, 3.8)
    for ax, panel in zip(axes[0], panels.values(), strict=False):
        for label, by_seed in panel.curves.items():
            found = _curve_values(by_seed)
            xs = np.array([x for x, _ in found])
            mean = np.array([np.mean(v) for _, v in found])
            std = np.array([np.std(v, ddof=1) if len(v) > 1 else 0.0 for _, v in found])
            ax.plot(xs, mean, "o-", label=f"{label} ({len(by_seed)} seeds)", markersize=3)
            ax.fill_between(xs, mean - std, mean + std, alpha=0.2)
        ax.set_title(f"{panel.name} (mean ± sample std)", fontsize=10)
        ax.set_xlabel(x_name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    _save(figure, path)


def _plot_intervals(path: Path, panels: dict[str, Panel]) -> None:
    """rliable's interval-estimates plot: per panel and measure, each value's IQM and its 95% CI."""
    measured = [p for p in panels.values() if p.points]
    figure, axes = _figure(
        len(measured), len(MEASURES), 4.0, 1.2 + 0.45 * max((len(p.curves) for p in measured), default=1)
    )
    for row, panel in zip(axes, measured, strict=False):
        for ax, measure in zip(row, MEASURES, strict=True):
            for position, by_seed in enumerate(panel.scores(measure).values()):
                estimate = estimates.bootstrap(list(by_seed.values()), estimates.iqm)
                color = f"C{position}"
                if estimate.has_interval:
                    ax.barh(
                        position, estimate.high - estimate.low, left=estimate.low, height=0.6, color=color, alpha=0.6
                    )
                ax.vlines(estimate.point, position - 0.3, position + 0.3, color="black", linewidth=1.5)
            ax.set_yticks(range(len(panel.curves)), list(panel.curves))
            ax.invert_yaxis()  # the first value on top
            ax.set_title(f"{panel.name}: {measure} (IQM, 95% CI)", fontsize=9)
            ax.grid(axis="x", alpha=0.3)
    _save(figure, path)


def _plot_profiles(path: Path, panels: dict[str, Panel]) -> None:
    """rliable's performance profiles: per panel and measure, the fraction of runs scoring above each
    threshold, with its 95% band."""
    measured = [p for p in panels.values() if p.points]
    figure, axes = _figure(len(measured), len(MEASURES), 4.0, 3.0)
    for row, panel in zip(axes, measured, strict=False):
        for ax, measure in zip(row, MEASURES, strict=True):
            scores = panel.scores(measure)
            every = [v for by_seed in scores.values() for v in by_seed.values()]
            thresholds = np.linspace(min(every), max(every), 101) if max(every) > min(every) else np.array(every[:1])
            for position, (label, by_seed) in enumerate(scores.items()):
                profile, band = estimates.performance_profile(list(by_seed.values()), thresholds)
                ax.step(thresholds, profile, where="post", color=f"C{position}", label=label)
                if band is not None:
                    ax.fill_between(thresholds, band[0], band[1], step="post", color=f"C{position}", alpha=0.15)
            ax.set_title(f"{panel.name}: {measure}", fontsize=9)
            ax.set_xlabel("threshold τ")
            ax.set_ylabel("fraction of runs > τ")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    _save(figure, path)
