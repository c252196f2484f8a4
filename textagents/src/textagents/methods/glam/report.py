"""GLAM's report: success rate against frames on the training level and the test levels, from the
untrained policy on, beside the paper's anchors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textagents.methods.core.report import pyplot

#: GLAM (GFlan-T5-large on MixedTrainLocal): success ≈ 0.8 at 250k frames and ≈ 0.9 at 600k; NPAE and
#: DRRN below 0.2; symbolic PPO ≈ 0.4 (METHODS.md).
PAPER_ANCHORS = "GLAM (Flan-T5-large, MixedTrainLocal): success ≈ 0.8 at 250k frames, ≈ 0.9 at 600k; NPAE, DRRN < 0.2"


def success_curves(metrics: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Per evaluated level, (frames, success rate) points, the untrained policy at frame 0."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for record in metrics:
        if record.get("kind") == "train" and record.get("iteration") == 1:
            for key, value in record.items():
                if key.startswith("zero_shot/") and key.endswith("/success_rate"):
                    curves.setdefault(key.split("/")[1], []).append((0, value))
        if record.get("kind") == "eval":
            for key, value in record.items():
                if key.endswith("/success_rate"):
                    curves.setdefault(key.split("/")[0], []).append((int(record["frames"]), value))
    return curves


def glam_sections(metrics: list[dict[str, Any]], config: Any, run_dir: Path) -> list[str]:
    curves = success_curves(metrics)
    if not curves:
        return []
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(6, 3.8))
    for level, points in curves.items():
        ax.plot(*zip(*points, strict=True), "o-", label=level, markersize=4)
    ax.set_xlabel("training frames")
    ax.set_ylabel("success rate (return > 0)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{config.agent} on {config.env_id}", fontsize=10)
    figure.tight_layout()
    path = run_dir / "success.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    frames = sorted({f for points in curves.values() for f, _ in points})
    lines = ["## Success rate against frames", "", "| level | " + " | ".join(f"{f:,} frames" for f in frames) + " |"]
    lines.append("|---|" + "---:|" * len(frames))
    for level, points in curves.items():
        by_frames = dict(points)
        lines.append(
            f"| {level} | " + " | ".join(f"{by_frames[f]:.3f}" if f in by_frames else "" for f in frames) + " |"
        )
    lines += ["", f"Paper: {PAPER_ANCHORS}.", "", f"![success against frames]({path.name})"]
    return ["\n".join(lines)]
