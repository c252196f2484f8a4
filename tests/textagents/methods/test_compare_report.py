"""``method compare``'s report from run folders (``method summarise``): the measures per seed, mean ± sample
std, IQM and CIs, paired differences and verdicts, one seed, folders named ARM_seedN, and the refusal of
runs made at different code states; then ``method compare`` end to end on the example method."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textagents.cli import main
from textagents.methods.core import estimates

REPO = Path(__file__).resolve().parents[3]
SMOKE = REPO / "benchmarks" / "methods" / "example" / "smoke.yaml"
CLEAN = {"commit": "a" * 40, "dirty": False, "diff_sha256": None}


def make_run(
    folder: Path, name: str, curve: list[float], git: dict | None = CLEAN, versions: dict | None = None, **config
) -> Path:
    """A finished example run's folder: its config.json and one eval record (``score``) per iteration."""
    run = folder / name
    run.mkdir(parents=True)
    recorded = {"method": "example", "config": config, "git": git, "versions": versions or {}}
    (run / "config.json").write_text(json.dumps(recorded))
    lines = [json.dumps({"kind": "eval", "iteration": 2 * (i + 1), "score": v}) for i, v in enumerate(curve)]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return run


BASELINE = {0: [0.1, 0.3, 0.4], 1: [0.0, 0.2, 0.5], 2: [0.2, 0.2, 0.3], 3: [0.1, 0.4, 0.4]}
BETTER = {seed: [v + 0.2 + 0.01 * seed for v in curve] for seed, curve in BASELINE.items()}


def comparison(folder: Path) -> str:
    return (folder / "comparison.md").read_text()


def test_the_report_holds_the_fixed_measures_their_estimates_and_a_shown_difference(tmp_path, capsys):
    for seed in BASELINE:
        make_run(tmp_path, f"learning_rate=0.5_seed{seed}", BASELINE[seed], learning_rate=0.5)
        make_run(tmp_path, f"learning_rate=0.25_seed{seed}", BETTER[seed], learning_rate=0.25)
    make_run(tmp_path, "learning_rate=0.25_seed7", BETTER[0][:2], learning_rate=0.25)  # stopped at iteration 4
    assert main(["method", "summarise", str(tmp_path), "--arms", "0.5", "0.25"]) == 0
    report = comparison(tmp_path)
    assert "Code: every run at `aaaaaaaaaa clean`." in report
    assert (
        "Final budget: iteration 4; AUC over the 2 points every run reached (2 … 4)" in report
    )  # the last x every run reached
    final = [curve[1] for curve in BASELINE.values()]
    auc = [np.mean(curve[:2]) for curve in BASELINE.values()]
    iqm = estimates.bootstrap(final, estimates.iqm)
    std = np.std(final, ddof=1)
    row = f"| 0.5 | final | 4 | s0 0.300, s1 0.200, s2 0.200, s3 0.400 | {np.mean(final):.3f} ± {std:.3f} |"
    assert f"{row} {iqm.point:.3f} [{iqm.low:.3f}, {iqm.high:.3f}] |" in report
    assert f"| 0.5 | AUC | 4 | s0 {auc[0]:.3f}, s1 {auc[1]:.3f}" in report
    assert "| 0.25 | final | 5 |" in report  # seed 7 counts where it has the points
    assert "Against learning_rate=0.5, paired by seed (value − 0.5):" in report
    paired = estimates.bootstrap([0.2, 0.21, 0.22, 0.23], estimates.mean)
    shown = f"| 0.25 | final | s0 0.200, s1 0.210, s2 0.220, s3 0.230 | 0.215 [{paired.low:.3f}, {paired.high:.3f}] |"
    assert f"{shown} 1.000 [1.000, 1.000] | shown: 0.25 higher than 0.5 |" in report
    for plot in ("comparison.png", "comparison_intervals.png", "comparison_profiles.png"):
        assert (tmp_path / plot).stat().st_size > 0 and f"]({plot})" in report
    before = report
    assert main(["method", "summarise", str(tmp_path), "--arms", "0.5", "0.25"]) == 0
    assert comparison(tmp_path) == before  # a fixed bootstrap seed: the same report
    assert main(["method", "summarise", str(tmp_path), "--arms", "0.5", "0.1"]) == 2
    assert "--arms 0.1: not in" in capsys.readouterr().err


def test_folders_named_arm_seed_n_are_summarised_with_the_first_arm_as_baseline(tmp_path):
    noisy = {0: [0.2, 0.3, 0.5], 1: [0.0, 0.1, 0.3], 2: [0.3, 0.3, 0.4], 3: [0.1, 0.5, 0.4]}
    for seed in BASELINE:
        make_run(tmp_path, f"reference_seed{seed}", BASELINE[seed], seed=seed)
        make_run(tmp_path, f"none_seed{seed}", noisy[seed], seed=seed)
    assert main(["method", "summarise", str(tmp_path), "--arms", "reference", "none"]) == 0
    report = comparison(tmp_path)
    assert "# example: arm compared" in report and "Against arm=reference" in report
    paired = estimates.bootstrap([0.1, -0.2, 0.1, 0.0], estimates.mean)
    assert paired.low < 0 < paired.high
    straddles = (
        f"| none | final | s0 0.100, s1 -0.200, s2 0.100, s3 0.000 | 0.000 [{paired.low:.3f}, {paired.high:.3f}] |"
    )
    assert straddles in report and "| inconclusive |" in report
    assert "shown" not in report.split("Against")[1].split("Curves")[0]
    assert main(["method", "summarise", str(tmp_path)]) == 0  # default: sorted, "none" the baseline
    assert "Against arm=none" in comparison(tmp_path)


def test_renamed_folders_whose_runs_record_one_value_stay_separate_arms(tmp_path):
    for seed in (0, 1):
        make_run(tmp_path, f"lr=a_seed{seed}", [0.1, 0.2], lr="a")
        make_run(tmp_path, f"lr=a2_seed{seed}", [0.3, 0.5], lr="a")  # run as lr=a, renamed afterwards
    assert main(["method", "summarise", str(tmp_path), "--arms", "a", "a2"]) == 0
    report = comparison(tmp_path)
    assert "| a | final | 2 | s0 0.200, s1 0.200 |" in report and "| a2 | final | 2 | s0 0.500, s1 0.500 |" in report


def test_one_seed_gives_numbers_without_intervals(tmp_path):
    make_run(tmp_path, "lr=a_seed0", [0.1, 0.2], lr="a")
    make_run(tmp_path, "lr=b_seed0", [0.3, 0.5], lr="b")
    assert main(["method", "summarise", str(tmp_path), "--arms", "a", "b"]) == 0
    report = comparison(tmp_path)
    assert "| a | final | 1 | s0 0.200 | 0.200 (n=1) | 0.200 (n=1, no CI) |" in report
    assert "| b | final | s0 0.300 | 0.300 (n=1, no CI) | 1.000 (n=1, no CI) | inconclusive (n=1, no CI) |" in report


def two_arms(folder: Path, gits: list[dict | None]) -> None:
    for seed, git in enumerate(gits):
        make_run(folder, f"lr=a_seed{seed}", [0.1, 0.2], git=git, lr="a")
        make_run(folder, f"lr=b_seed{seed}", [0.3, 0.5], git=CLEAN, lr="b")


@pytest.mark.parametrize(
    ("git", "state"),
    [
        (None, "unknown"),
        ({"commit": "b" * 40, "dirty": False}, "bbbbbbbbbb clean"),
        ({"commit": "a" * 40, "dirty": True}, "aaaaaaaaaa dirty, diff unknown"),  # recorded before the hash was
        ({"commit": "a" * 40, "dirty": True, "diff_sha256": "c" * 64}, "aaaaaaaaaa dirty, diff cccccccccccc"),
    ],
)
def test_runs_at_different_code_states_are_refused_unless_allowed_and_then_listed(tmp_path, capsys, git, state):
    two_arms(tmp_path, [CLEAN, git])
    assert main(["method", "summarise", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--allow-mixed-code" in error
    assert f"{state}: lr=a_seed1" in error and "aaaaaaaaaa clean: lr=a_seed0, lr=b_seed0, lr=b_seed1" in error
    assert not (tmp_path / "comparison.md").exists()
    assert main(["method", "summarise", str(tmp_path), "--allow-mixed-code"]) == 0
    report = comparison(tmp_path)
    assert "**Runs made at different code states** (pooled with --allow-mixed-code):" in report
    assert f"| lr=a_seed1 | {state} |" in report and "| lr=b_seed1 | aaaaaaaaaa clean |" in report


def test_runs_at_one_dirty_state_pool_and_a_run_resumed_at_other_code_is_mixed(tmp_path, capsys):
    dirty = {"commit": "a" * 40, "dirty": True, "diff_sha256": "c" * 64}
    for seed in (0, 1):
        make_run(tmp_path, f"lr=a_seed{seed}", [0.1, 0.2], git=dirty, lr="a")
    assert main(["method", "summarise", str(tmp_path)]) == 0
    assert "Code: every run at `aaaaaaaaaa dirty, diff cccccccccccc`." in comparison(tmp_path)
    recorded = json.loads((tmp_path / "lr=a_seed1" / "config.json").read_text())
    recorded["resumed"] = [{"at_iteration": 2, "git": dirty}, {"at_iteration": 4, "git": CLEAN}]
    (tmp_path / "lr=a_seed1" / "config.json").write_text(json.dumps(recorded))
    assert main(["method", "summarise", str(tmp_path)]) == 2
    assert "aaaaaaaaaa dirty, diff cccccccccccc, resumed at aaaaaaaaaa clean: lr=a_seed1" in capsys.readouterr().err


def test_runs_of_an_installed_package_pool_by_its_versions(tmp_path, capsys):
    """Outside a checkout (git None) the installed versions of textagents and textenvs identify the code."""
    installed = {"textagents": "0.4.0", "textenvs": "0.4.0", "torch": "2.13.0"}
    for seed in (0, 1):
        make_run(tmp_path, f"lr=a_seed{seed}", [0.1, 0.2], git=None, versions=installed, lr="a")
    assert main(["method", "summarise", str(tmp_path)]) == 0
    assert "Code: every run at `installed textagents 0.4.0, textenvs 0.4.0`." in comparison(tmp_path)
    make_run(tmp_path, "lr=b_seed0", [0.3, 0.5], git=None, versions={**installed, "textagents": "0.5.0"}, lr="b")
    assert main(["method", "summarise", str(tmp_path)]) == 2
    assert "installed textagents 0.5.0, textenvs 0.4.0: lr=b_seed0" in capsys.readouterr().err


def test_a_folder_without_runs_is_refused(tmp_path, capsys):
    assert main(["method", "summarise", str(tmp_path)]) == 2
    assert "holds no run folder named ARM_seedN" in capsys.readouterr().err


def test_compare_end_to_end_writes_the_new_tables_and_refuses_mixed_code_before_training(tmp_path, capsys):
    out = tmp_path / "cmp"
    command = ["method", "compare", "example", str(SMOKE), "--out", str(out), "--no-progress"]
    short = ["--set", "iterations=2", "--set", "eval_every=1"]
    assert main([*command, *short, "--vary", "learning_rate=0.5,0.25", "--seeds", "0", "1"]) == 0
    report = comparison(out)
    assert "Code: every run at `" in report and "| learning_rate | measure | n | per seed |" in report
    assert "| 0.25 | final | 2 | s0 " in report and "P(learning_rate > 0.5) [95% CI] | verdict |" in report
    recorded = json.loads((out / "learning_rate=0.5_seed0" / "config.json").read_text())
    # a checkout records its commit; an installed package (as under tox) its versions
    assert set(recorded["git"] or {}) == {"commit", "dirty", "diff_sha256"} or recorded["versions"]["textagents"]
    recorded["git"] = {"commit": "0" * 40, "dirty": False, "diff_sha256": None}  # as if made at another commit
    (out / "learning_rate=0.5_seed0" / "config.json").write_text(json.dumps(recorded))
    assert main([*command, *short, "--vary", "learning_rate=0.5,0.1", "--seeds", "0", "1"]) == 2
    assert "0000000000 clean: learning_rate=0.5_seed0" in capsys.readouterr().err
    assert not (out / "learning_rate=0.1_seed0").exists()  # refused before any training
    assert main([*command, *short, "--vary", "learning_rate=0.5,0.1", "--allow-mixed-code"]) == 0
    assert "| learning_rate=0.5_seed0 | 0000000000 clean |" in comparison(out)


def test_a_resume_records_the_code_state_it_continues_at(tmp_path):
    from textagents.methods.core.runner import run_method

    out = tmp_path / "run"
    longer = tmp_path / "longer.yaml"
    longer.write_text(SMOKE.read_text().replace("iterations: 4", "iterations: 5"))
    run_method("example", SMOKE, out, progress=False)
    run_method("example", longer, out, resume=True, progress=False)
    recorded = json.loads((out / "config.json").read_text())
    assert [r["at_iteration"] for r in recorded["resumed"]] == [4]
    assert recorded["resumed"][0]["git"] == recorded["git"]
