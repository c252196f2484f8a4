"""The statistics of ``textagents method compare``: the two measures of a curve fixed in advance, and
rliable's estimators over seeds (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice").

rliable itself is not a dependency: its last release (1.2.0) needs ``arch<8``, whose 7.x releases fail to
import with pandas 3, and its bootstrap draws from numpy's global generator whatever ``random_state`` it is
given. The estimators below are rliable's, computed the same way (``rliable.library.get_interval_estimates``
with ``method="percentile"``, ``task_bootstrap=False``, one task): each of ``BOOTSTRAP_REPS`` resamples draws
the runs with replacement as ``numpy.random.choice`` would after ``numpy.random.seed(BOOTSTRAP_SEED)``, and the
95% interval is the 2.5th and 97.5th percentiles of the statistic over the resamples. With the same seed they
give rliable's numbers (``tests/textagents/methods/test_compare_estimates.py``, against golden numbers from
rliable). Each estimate starts its own generator from the seed, so a number does not depend on which other
values a comparison holds, and the same runs always give the same report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_SEED = 0
BOOTSTRAP_REPS = 50_000  # rliable's default for interval estimates
PROFILE_REPS = 2_000  # and for performance profiles
CONFIDENCE = 0.95

Curve = Sequence[tuple[float, float]]


# ---------------------------------------------------------------- the measures of a curve, fixed in advance
def common_points(curves: Sequence[Curve]) -> list[float]:
    """The x values every curve reached: the points both measures are taken over."""
    return sorted(set.intersection(*({x for x, _ in curve} for curve in curves))) if curves else []


def final_value(curve: Curve, points: Sequence[float]) -> float:
    """y at the final budget: the last of ``points`` (the last x every run reached)."""
    return float(dict(curve)[points[-1]])


def area_under_curve(curve: Curve, points: Sequence[float]) -> float:
    """The normalised area under the curve over the whole budget: the mean of y over ``points`` (each
    evaluation weighs the same; with evaluations at Δ, 2Δ, ..., KΔ, the area under the step curve divided by
    the budget KΔ)."""
    values = dict(curve)
    return float(np.mean([values[x] for x in points]))


# ---------------------------------------------------------------- rliable's estimators
def iqm(scores: np.ndarray) -> np.ndarray:
    """The interquartile mean of each row: the mean of the middle half, ``int(0.25 n)`` values cut from each
    end (``rliable.metrics.aggregate_iqm``, i.e. ``scipy.stats.trim_mean(x, 0.25)``; below 4 runs, the mean)."""
    scores = np.sort(np.atleast_2d(scores), axis=-1)
    cut = int(0.25 * scores.shape[-1])
    return scores[..., cut : scores.shape[-1] - cut].mean(axis=-1)


def mean(scores: np.ndarray) -> np.ndarray:
    return np.atleast_2d(scores).mean(axis=-1)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) of each row pair: the Mann-Whitney U of x over y (a tie counts ½) divided by the pairs
    (``rliable.metrics.probability_of_improvement`` for one task)."""
    x, y = np.atleast_2d(x)[:, :, None], np.atleast_2d(y)[:, None, :]
    wins = (x > y).sum(axis=(1, 2)) + 0.5 * (x == y).sum(axis=(1, 2))
    return wins / (x.shape[1] * y.shape[2])


@dataclass(frozen=True)
class Estimate:
    """A point estimate over ``n`` runs and its bootstrap 95% interval (None below 2 runs)."""

    point: float
    n: int
    low: float | None = None
    high: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None


def _percentile_interval(statistics: np.ndarray) -> tuple[float, float]:
    alpha = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(statistics, [alpha, 100 - alpha])
    return float(low), float(high)


def bootstrap(scores: Sequence[float], statistic: Callable[[np.ndarray], np.ndarray]) -> Estimate:
    """``statistic`` of the scores (one per run) and its stratified-bootstrap percentile 95% interval."""
    values = np.asarray(scores, dtype=float)
    point = float(statistic(values)[0])
    if len(values) < 2:
        return Estimate(point, len(values))
    draws = np.random.RandomState(BOOTSTRAP_SEED).choice(len(values), (BOOTSTRAP_REPS, len(values)), replace=True)
    return Estimate(point, len(values), *_percentile_interval(statistic(values[draws])))


def bootstrap_improvement(x: Sequence[float], y: Sequence[float]) -> Estimate:
    """P(X > Y) and its interval, each resample drawing the runs of x and of y independently (rliable's
    ``StratifiedIndependentBootstrap``); ``n`` is the smaller number of runs."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    point = float(probability_of_improvement(xs, ys)[0])
    n = min(len(xs), len(ys))
    if n < 2:
        return Estimate(point, n)
    generator = np.random.RandomState(BOOTSTRAP_SEED)
    if len(xs) == len(ys):  # one draw of the same stream: x's runs, then y's, for each resample in turn
        draws = generator.choice(len(xs), (BOOTSTRAP_REPS, 2, len(xs)), replace=True)
        x_draws, y_draws = draws[:, 0], draws[:, 1]
    else:
        # choice(n, n) is randint(0, n, n): the same numbers, at half the cost of a call
        pairs = [
            (generator.randint(0, len(xs), len(xs)), generator.randint(0, len(ys), len(ys)))
            for _ in range(BOOTSTRAP_REPS)
        ]
        x_draws, y_draws = (np.array(draws) for draws in zip(*pairs, strict=True))
    return Estimate(point, n, *_percentile_interval(probability_of_improvement(xs[x_draws], ys[y_draws])))


def performance_profile(scores: Sequence[float], thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The fraction of runs scoring above each threshold (rliable's score distribution for one task) and,
    from 2 runs, its bootstrap 95% band (2 × thresholds: lower, upper)."""
    values = np.asarray(scores, dtype=float)
    profile = (values[:, None] > thresholds[None, :]).mean(axis=0)
    if len(values) < 2:
        return profile, None
    draws = np.random.RandomState(BOOTSTRAP_SEED).choice(len(values), (PROFILE_REPS, len(values)), replace=True)
    resampled = (values[draws][:, :, None] > thresholds[None, None, :]).mean(axis=1)
    alpha = 100 * (1 - CONFIDENCE) / 2
    return profile, np.percentile(resampled, [alpha, 100 - alpha], axis=0)


# ---------------------------------------------------------------- comparing two values of a setting
@dataclass(frozen=True)
class PairedDifference:
    """Per-seed differences (value − baseline, paired by seed), their mean with its bootstrap interval, and
    the verdict: shown when the interval excludes 0, inconclusive otherwise."""

    seeds: list[int]
    differences: list[float]
    estimate: Estimate

    @property
    def verdict(self) -> str:
        estimate = self.estimate
        if not estimate.has_interval:
            return f"inconclusive (n={estimate.n}, no CI)"
        if estimate.low > 0:  # type: ignore[operator]
            return "shown: higher"
        if estimate.high < 0:  # type: ignore[operator]
            return "shown: lower"
        return "inconclusive"


def paired_difference(value: dict[int, float], baseline: dict[int, float]) -> PairedDifference:
    """``value`` − ``baseline`` for each seed both have (seed -> score)."""
    seeds = sorted(set(value) & set(baseline))
    differences = [value[s] - baseline[s] for s in seeds]
    estimate = bootstrap(differences, mean) if seeds else Estimate(float("nan"), 0)
    return PairedDifference(seeds, differences, estimate)
