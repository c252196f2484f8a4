"""GLAM against its baselines at the same frame budget: one run per (agent, seed) from one config, each
resumable, then ``comparison.md`` and ``comparison.png``: success against frames (mean ± std over seeds)
on the training level and the test levels, beside the paper's anchors.

Run: ``python -m textagents.methods.glam.compare benchmarks/methods/glam/cpu.yaml --out runs/glam-cpu
[--agents glam npae drrn symbolic_ppo] [--seeds 0 1]``; the same command again continues where it stopped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import yaml

from textagents.bench.store import write_text_atomic
from textagents.methods.glam.config import AGENTS
from textagents.methods.glam.report import PAPER_ANCHORS, success_curves

LLM_AGENTS = ("glam", "npae")


def run_comparison(
    config_path: str | Path, out: str | Path, agents: list[str], seeds: list[int], progress: bool = True
) -> Path:
    from textagents.methods.core.runner import run_method

    unknown = sorted(set(agents) - set(AGENTS))
    if unknown:
        raise ValueError(f"unknown agent(s) {unknown}; valid: {list(AGENTS)}")
    base = yaml.safe_load(Path(config_path).read_text()) or {}
    out = Path(out)
    for agent in agents:
        for seed in seeds:
            name = f"{agent}_seed{seed}"
            run_dir = out / name
            if (run_dir / "report.md").is_file():
                continue  # finished
            config = out / "configs" / f"{name}.yaml"
            config.parent.mkdir(parents=True, exist_ok=True)
            settings = {**base, "agent": agent, "seed": seed}
            if agent not in LLM_AGENTS:
                settings.pop("model", None)
            config.write_text(yaml.safe_dump(settings, sort_keys=False))
            resume = any((run_dir / "checkpoints").glob("iter_*"))
            run_method("glam", config, run_dir, resume=resume, progress=progress)
    return write_comparison(out, agents, seeds)


def write_comparison(out: Path, agents: list[str], seeds: list[int]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves: dict[str, dict[str, list[list[tuple[int, float]]]]] = {}
    for agent in agents:
        for seed in seeds:
            path = out / f"{agent}_seed{seed}" / "metrics.jsonl"
            if not path.is_file():
                continue
            records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            for level, points in success_curves(records).items():
                curves.setdefault(level, {}).setdefault(agent, []).append(points)
    levels = list(curves)
    figure, axes = plt.subplots(1, max(1, len(levels)), figsize=(5.5 * max(1, len(levels)), 3.8), squeeze=False)
    lines = ["# GLAM and its baselines at the same frame budget", "", f"Seeds: {seeds}. Paper: {PAPER_ANCHORS}.", ""]
    for ax, level in zip(axes[0], levels, strict=False):
        lines += [
            f"## {level}: success rate (mean ± std over seeds)",
            "",
            "| agent | frames | success |",
            "|---|---:|---:|",
        ]
        for agent, runs in curves[level].items():
            frames, mean, std = _mean_curve(runs)
            ax.plot(frames, mean, "o-", label=f"{agent} ({len(runs)} seeds)", markersize=3)
            ax.fill_between(frames, mean - std, mean + std, alpha=0.2)
            lines += [f"| {agent} | {f:,} | {m:.3f} ± {s:.3f} |" for f, m, s in zip(frames, mean, std, strict=True)]
        lines.append("")
        ax.set_title(level, fontsize=10)
        ax.set_xlabel("training frames")
        ax.set_ylabel("success rate")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "comparison.png", dpi=110)
    plt.close(figure)
    lines.append("![success against frames](comparison.png)")
    path = out / "comparison.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def _mean_curve(runs: list[list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frames every run reached, with the mean and standard deviation of success there."""
    common = sorted(set.intersection(*(set(f for f, _ in run) for run in runs)))
    values = np.array([[dict(run)[f] for f in common] for run in runs])
    return np.array(common), values.mean(0), values.std(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("--out", required=True)
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=AGENTS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    args = parser.parse_args(argv)
    print(run_comparison(args.config, args.out, args.agents, args.seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
