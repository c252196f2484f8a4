"""LLM-Personalize's Table 1 over the seeds of several runs (``textagents method summarise``): standard errors
over episodes and over seeds, the paired claims and their verdicts, the diagnostics, the training pairs per
round and the plot of success over the rounds, from run folders written here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textagents.cli import main
from textagents.methods.core import estimates
from textagents.methods.llm_personalize.report import Row, paired_differences

CLEAN = {"commit": "a" * 40, "dirty": False, "diff_sha256": None}
ZERO_SHOT = {0: [0.0, 0.0, 0.0, 0.0], 1: [0.0, 0.0, -0.25, 0.0]}
IL = {0: [0.5, 0.5, 0.25, 0.25], 1: [0.25, 0.5, 0.5, 0.5]}


def _evaluation(episodes: list[float], prefix: str = "") -> dict:
    """An evaluation's record on scene Rs_int, test and train alike."""
    record = {}
    for split in ("test", "train"):
        values = {
            "success_rate": float(np.mean(episodes)),
            "success_rate/Rs_int": float(np.mean(episodes)),
            "success_rate_std": float(np.std(episodes, ddof=1)),
            "episode_success/Rs_int": episodes,
            "episodes": len(episodes),
            "parse_rate": 0.5,
            "step_success_rate": 0.25,
        }
        record |= {f"{prefix}{split}/{k}": v for k, v in values.items()}
    return record


def _run(folder: Path, seed: int) -> None:
    """A finished run: zero-shot, imitation (6 pairs), one self-training round that kept 3 pairs and an
    evaluation after each fine-tuning, the self-training round's planner as the IL one."""
    run = folder / f"cpu_seed{seed}"
    run.mkdir(parents=True)
    recorded = {"method": "llm_personalize", "config": {"seed": seed}, "git": CLEAN, "versions": {}}
    (run / "config.json").write_text(json.dumps(recorded))
    selection = {"selection/kept": 3, "selection/duplicate": 1, "selection/lowered": 2 + seed}
    selection |= {"coverage/test": 0.5, "coverage/train": 0.25}
    records = [
        {"kind": "train", "iteration": 1, **_evaluation(ZERO_SHOT[seed], "zero_shot/"), "pairs": 6, "pairs/Rs_int": 6},
        {"kind": "eval", "iteration": 1, **_evaluation(IL[seed])},
        {"kind": "train", "iteration": 2, "rollouts": 4, "planning_calls": 6 + seed, "pairs": 3, "pairs/Rs_int": 3}
        | selection,
        {"kind": "eval", "iteration": 2, **_evaluation(IL[seed])},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _mean_se(values: list[float]) -> str:
    return f"{100 * np.mean(values):.1f} ± {100 * np.std(values, ddof=1) / len(values) ** 0.5:.1f}"


def test_summarise_writes_table1_over_seeds_with_its_claims(tmp_path, capsys):
    for seed in (0, 1):
        _run(tmp_path, seed)
    assert main(["method", "summarise", str(tmp_path)]) == 0
    report = (tmp_path / "comparison.md").read_text()
    il = IL[0] + IL[1]
    means = [float(np.mean(IL[s])) for s in (0, 1)]
    il_row = f"| IL | {_mean_se(il)} (n=8) | s0 37.5, s1 43.8: {_mean_se(means)} | {_mean_se(il)} (n=8) |"
    assert il_row in report
    assert "| zero-shot | -3.1 ± 3.1 (n=8) | s0 0.0, s1 -6.2: -3.1 ± 3.1 |" in report
    assert f"| IL | {_mean_se(il)} / {_mean_se(il)} |" in report  # per scene
    differences = [a - b for s in (0, 1) for a, b in zip(IL[s], ZERO_SHOT[s], strict=True)]
    shown = estimates.bootstrap(differences, estimates.mean)
    assert shown.low > 0
    interval = f"{100 * shown.point:+.1f} [{100 * shown.low:+.1f}, {100 * shown.high:+.1f}]"
    assert f"| IL > zero-shot | test | 8 | {interval} | s0 +37.5, s1 +50.0 | shown: higher |" in report
    assert "| ST iteration 1 > IL | test | 8 | +0.0 [+0.0, +0.0] | s0 +0.0, s1 +0.0 | inconclusive |" in report
    assert "| ST iteration 1 | 4 / 4 | 6 / 7 | 3 / 3 | 3 / 3 | 3 / 3 | 1 / 1 | – / – |" in report  # pairs per round
    assert "| lowered the count | coverage: test | coverage: train |" in report
    assert "| 2 / 3 | 50% / 50% | 25% / 25% |" in report
    assert "| IL (demonstrations) | – / – | – / – | 6 / 6 | 6 / 6 |" in report
    assert "| IL | 0.50 | 0.25 |" in report  # diagnostics over both seeds
    assert (tmp_path / "success_by_round.png").stat().st_size > 0
    assert "![success over the rounds](success_by_round.png)" in report
    assert "fine-tunings (0 zero-shot" in report  # the curves over the rounds, with their measures


def test_planners_evaluated_on_different_episodes_are_not_paired():
    def row(values: list[float]) -> Row:
        return Row("planner", {"test": {"episode_success/Rs_int": values}, "train": {}})

    assert paired_differences(row([0.5, 0.25]), row([0.25, 0.0]), "test") == [0.25, 0.25]
    with pytest.raises(ValueError, match="not evaluated on the same test episodes"):
        paired_differences(row([0.5, 0.25]), row([0.25]), "test")
