"""Golden outputs of rliable (google-research/rliable 1.2.0 from PyPI, ``rliable/library.py`` and
``rliable/metrics.py``) for tests/textagents/methods/test_compare_estimates.py: the point estimates and
percentile 95% CIs of ``get_interval_estimates`` (IQM, mean, probability of improvement) and of
``create_performance_profile`` on fixed synthetic scores. Not imported by the package.

rliable's bootstrap draws its resamples with ``np.random.choice`` (library.py ``StratifiedBootstrap.update_indices``
and ``StratifiedIndependentBootstrap._get_indices``), numpy's global generator, whatever ``random_state`` it is
given, so the global generator is seeded before each estimate. rliable 1.2.0 needs ``arch<8``, which fails to
import with pandas 3: run this with a Python that has ``rliable==1.2.0 arch==7.2.0 'pandas<3'``, e.g.

    python3 -m venv /tmp/rliable-venv && /tmp/rliable-venv/bin/pip install rliable==1.2.0 arch==7.2.0 'pandas<3'
    /tmp/rliable-venv/bin/python benchmarks/methods/core/golden/make_rliable_golden.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
from rliable import library, metrics

SEED = 0
REPS = 50_000
PROFILE_REPS = 2_000  # create_performance_profile's default
OUT = Path(__file__).resolve().parents[4] / "tests" / "textagents" / "methods" / "golden" / "rliable_estimates.json"

SCORES = {
    "three": [0.26, 0.32, 0.30],
    "five": [0.1, 0.45, 0.3, 0.3, 0.9],
    "eight": [0.5, 0.61, 0.2, 0.33, 0.71, 0.48, 0.52, 0.05],
}
PAIRS = [("three", "five"), ("five", "eight"), ("three", "three")]
THRESHOLDS = [0.0, 0.25, 0.3, 0.5, 0.75]


def column(values: list[float]) -> np.ndarray:
    return np.array(values, dtype=float).reshape(-1, 1)  # runs x 1 task


def interval(scores: dict[str, object], func) -> dict[str, object]:
    np.random.seed(SEED)
    points, cis = library.get_interval_estimates(scores, func, reps=REPS)
    (key,) = scores
    return {"point": float(np.ravel(points[key])[0]), "ci": [float(v) for v in np.ravel(cis[key])]}


def main() -> None:
    golden: dict[str, object] = {"rliable": version("rliable"), "seed": SEED, "reps": REPS, "scores": SCORES}
    golden["iqm"] = {
        name: interval({name: column(v)}, lambda x: np.array([metrics.aggregate_iqm(x)])) for name, v in SCORES.items()
    }
    golden["mean"] = {
        name: interval({name: column(v)}, lambda x: np.array([metrics.aggregate_mean(x)])) for name, v in SCORES.items()
    }
    improvement = metrics.probability_of_improvement
    golden["probability_of_improvement"] = [
        {"x": x, "y": y, **interval({"x,y": [column(SCORES[x]), column(SCORES[y])]}, improvement)} for x, y in PAIRS
    ]
    golden["profile_reps"], golden["thresholds"], golden["profiles"] = PROFILE_REPS, THRESHOLDS, {}
    for name, values in SCORES.items():
        np.random.seed(SEED)
        profiles, cis = library.create_performance_profile({name: column(values)}, np.array(THRESHOLDS))
        golden["profiles"][name] = {"profile": profiles[name].tolist(), "band": np.asarray(cis[name]).tolist()}
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
