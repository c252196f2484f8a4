"""The estimators of ``method compare``'s report against rliable's own numbers (golden JSON made by
benchmarks/methods/core/golden/make_rliable_golden.py with rliable 1.2.0, the same seed), the two measures
on hand-made curves, and the paired differences' verdict."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textagents.methods.core import estimates

GOLDEN = json.loads((Path(__file__).parent / "golden" / "rliable_estimates.json").read_text())
SCORES = GOLDEN["scores"]


def test_the_golden_numbers_were_made_with_the_seed_and_resamples_the_report_uses():
    assert (GOLDEN["seed"], GOLDEN["reps"]) == (estimates.BOOTSTRAP_SEED, estimates.BOOTSTRAP_REPS)
    assert GOLDEN["profile_reps"] == estimates.PROFILE_REPS


@pytest.mark.parametrize("name", sorted(SCORES))
@pytest.mark.parametrize(("statistic", "function"), [("iqm", estimates.iqm), ("mean", estimates.mean)])
def test_iqm_and_mean_with_their_cis_are_rliables(name, statistic, function):
    estimate = estimates.bootstrap(SCORES[name], function)
    expected = GOLDEN[statistic][name]
    assert estimate.point == pytest.approx(expected["point"], rel=1e-12)
    assert [estimate.low, estimate.high] == pytest.approx(expected["ci"], rel=1e-12)


@pytest.mark.parametrize("case", GOLDEN["probability_of_improvement"], ids=lambda c: f"{c['x']}>{c['y']}")
def test_the_probability_of_improvement_with_its_ci_is_rliables(case):
    estimate = estimates.bootstrap_improvement(SCORES[case["x"]], SCORES[case["y"]])
    assert estimate.point == pytest.approx(case["point"], rel=1e-12)
    assert [estimate.low, estimate.high] == pytest.approx(case["ci"], rel=1e-12)


@pytest.mark.parametrize("name", sorted(SCORES))
def test_the_performance_profile_and_its_band_are_rliables(name):
    profile, band = estimates.performance_profile(SCORES[name], np.array(GOLDEN["thresholds"]))
    np.testing.assert_allclose(profile, GOLDEN["profiles"][name]["profile"], rtol=1e-12)
    np.testing.assert_allclose(band, GOLDEN["profiles"][name]["band"], rtol=1e-12)


def test_rliable_itself_gives_the_same_numbers_where_it_imports():
    """rliable 1.2.0 needs arch<8, which fails to import with pandas 3 (this project's): the golden numbers
    above are the check that always runs; this one runs where rliable can be imported."""
    try:
        from rliable import library, metrics
    except Exception as error:  # arch 7 raises TypeError on import with pandas 3
        pytest.skip(f"rliable does not import here ({type(error).__name__}: {error})")
    scores = np.array(SCORES["eight"]).reshape(-1, 1)
    np.random.seed(estimates.BOOTSTRAP_SEED)  # rliable resamples with numpy's global generator
    points, cis = library.get_interval_estimates({"a": scores}, lambda x: np.array([metrics.aggregate_iqm(x)]))
    estimate = estimates.bootstrap(SCORES["eight"], estimates.iqm)
    assert [estimate.point, estimate.low, estimate.high] == pytest.approx([points["a"][0], *np.ravel(cis["a"])])


def test_one_run_has_a_point_and_no_interval():
    assert estimates.bootstrap([0.4], estimates.iqm) == estimates.Estimate(0.4, 1)
    assert estimates.bootstrap_improvement([0.4], [0.3, 0.2]) == estimates.Estimate(1.0, 1)
    profile, band = estimates.performance_profile([0.4], np.array([0.3, 0.5]))
    assert profile.tolist() == [1.0, 0.0] and band is None


def test_final_and_auc_on_hand_made_curves():
    a = [(0, 0.0), (10, 0.2), (20, 0.6), (30, 1.0)]
    b = [(0, 0.1), (10, 0.3), (15, 0.9), (20, 0.5)]  # stopped at 20, with an extra point at 15
    points = estimates.common_points([a, b])
    assert points == [0, 10, 20]
    assert (estimates.final_value(a, points), estimates.final_value(b, points)) == (0.6, 0.5)  # never the best
    assert estimates.area_under_curve(a, points) == pytest.approx(0.8 / 3)
    assert estimates.area_under_curve(b, points) == pytest.approx(0.9 / 3)


def test_paired_differences_are_shown_when_their_ci_excludes_zero():
    baseline = {0: 0.30, 1: 0.50, 2: 0.40, 3: 0.20, 4: 0.60}
    better = {seed: value + 0.1 + 0.01 * seed for seed, value in baseline.items()}
    paired = estimates.paired_difference(better, baseline)
    assert paired.seeds == [0, 1, 2, 3, 4]
    assert paired.differences == pytest.approx([0.10, 0.11, 0.12, 0.13, 0.14])
    assert paired.estimate.point == pytest.approx(0.12) and paired.estimate.low > 0
    assert paired.verdict == "shown: higher"
    assert estimates.paired_difference(baseline, better).verdict == "shown: lower"


def test_paired_differences_that_straddle_zero_are_inconclusive():
    baseline = {0: 0.30, 1: 0.50, 2: 0.40, 3: 0.20}
    mixed = {0: 0.40, 1: 0.45, 2: 0.45, 3: 0.15, 9: 0.9}  # seed 9 has no pair: left out
    paired = estimates.paired_difference(mixed, baseline)
    assert paired.seeds == [0, 1, 2, 3]
    assert paired.estimate.low < 0 < paired.estimate.high
    assert paired.verdict == "inconclusive"
    assert estimates.paired_difference({0: 0.9}, {0: 0.1}).verdict == "inconclusive (n=1, no CI)"
    assert estimates.paired_difference({0: 0.9}, {1: 0.1}).verdict == "inconclusive (n=0, no CI)"
