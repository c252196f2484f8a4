"""Summarise a BK comparison whose runs sit in one results folder as ARM_seedN/metrics.jsonl: per arm, the
success rate at the final budget and its area under the evaluation curve (the mean over every evaluation of
the run, fixed before the runs), per seed, with the mean, the sample standard deviation and a percentile
bootstrap 95% CI over seeds; the per-seed paired differences of the first arm against each other arm; and a
plot of the curves (mean ± sample std over seeds).

    python benchmarks/methods/bk/summarise_arms.py benchmarks/methods/bk/results/cpu_faithful reference none constant
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

BOOTSTRAP_SAMPLES = 10_000


def curves(folder: Path, arm: str) -> dict[int, list[tuple[int, float]]]:
    """Each seed's (frames, success rate) evaluations of ``arm``."""
    found = {}
    for run in sorted(folder.glob(f"{arm}_seed*")):
        records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
        evaluations = [(r["frames"], r["success_rate"]) for r in records if r["kind"] == "eval"]
        found[int(run.name.rsplit("seed", 1)[1])] = evaluations
    return found


def bootstrap_ci(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    means = rng.choice(values, size=(BOOTSTRAP_SAMPLES, len(values)), replace=True).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def describe(values: np.ndarray, rng: np.random.Generator) -> str:
    low, high = bootstrap_ci(values, rng)
    return f"{values.mean():.3f} ± {values.std(ddof=1):.3f} [{low:.3f}, {high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("arms", nargs="+", help="the arms' folder prefixes; the first is compared with the others")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    by_arm = {arm: curves(args.folder, arm) for arm in args.arms}
    seeds = sorted(set.intersection(*(set(runs) for runs in by_arm.values())))
    final = {arm: np.array([runs[s][-1][1] for s in seeds]) for arm, runs in by_arm.items()}
    auc = {arm: np.array([np.mean([v for _, v in runs[s]]) for s in seeds]) for arm, runs in by_arm.items()}
    lines = [
        f"Seeds {seeds}; mean ± sample std [bootstrap 95% CI over seeds]; final = success at the last evaluation "
        "(frames below), AUC = mean success over every evaluation.",
        "",
        "| arm | final | AUC | final per seed | AUC per seed |",
        "|---|---:|---:|---|---|",
    ]
    for arm in args.arms:
        per_final = ", ".join(f"{v:.2f}" for v in final[arm])
        per_auc = ", ".join(f"{v:.3f}" for v in auc[arm])
        lines.append(f"| {arm} | {describe(final[arm], rng)} | {describe(auc[arm], rng)} | {per_final} | {per_auc} |")
    first = args.arms[0]
    lines += ["", f"| {first} − arm (paired by seed) | final | AUC |", "|---|---:|---:|"]
    for arm in args.arms[1:]:
        lines.append(f"| {arm} | {describe(final[first] - final[arm], rng)} | {describe(auc[first] - auc[arm], rng)} |")
    frames = [f for f, _ in by_arm[first][seeds[0]]]
    lines += ["", f"Evaluations at frames {frames}."]
    print("\n".join(lines))

    figure, ax = plt.subplots(figsize=(6, 4))
    for arm, runs in by_arm.items():
        values = np.array([[v for _, v in runs[s]] for s in seeds])
        mean, std = values.mean(axis=0), values.std(axis=0, ddof=1)
        ax.plot(frames, mean, marker="o", label=arm)
        ax.fill_between(frames, mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("training frames")
    ax.set_ylabel("success rate (50 episodes)")
    ax.set_title(f"BK on BabyAI-Text, faithful defaults ({len(seeds)} seeds, ± sample std)")
    ax.legend()
    figure.tight_layout()
    figure.savefig(args.folder / "curves.png", dpi=120)


if __name__ == "__main__":
    main()
