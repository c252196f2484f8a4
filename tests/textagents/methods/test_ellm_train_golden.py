"""ELLM's training is what it was before its speed work (golden ``ellm_train.json``, made by
benchmarks/methods/ellm/golden/make_train_golden.py with the code of commit 77016ee): the same actions, the
same loss at every update, the same Q values and weights after 600 frames of a small run, to 1e-6 (on the machine
that made the golden file, bit for bit). The kernels of another CPU may round differently, and 600 frames of
training carry such differences on: there, make the golden file again from 77016ee (the script says how)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.scripts import load_script

GOLDEN = json.loads((Path(__file__).resolve().parent / "golden" / "ellm_train.json").read_text())
RTOL = 1e-6


def _golden_script():
    return load_script("benchmarks/methods/ellm/golden/make_train_golden.py", "ellm_make_train_golden")


@pytest.fixture(scope="module")
def script():
    module = _golden_script()
    assert (GOLDEN["settings"], GOLDEN["iterations"]) == (module.SETTINGS, module.ITERATIONS)
    return module


def _differences(ours: dict, golden: dict) -> list[str]:
    """The parts of ``ours`` that are not ``golden``'s: the actions exactly, the numbers to ``RTOL``."""
    close = lambda a, b: np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=RTOL, atol=0)  # noqa: E731
    parts = {"actions": ours["actions"] == golden["actions"], "losses": close(ours["losses"], golden["losses"])}
    parts.update({f"q.{net}": close(ours["q"][net], golden["q"][net]) for net in ("online", "target")})
    parts["tensor names"] = ours["tensors"].keys() == golden["tensors"].keys()
    parts.update({name: close(ours["tensors"].get(name), values) for name, values in golden["tensors"].items()})
    return [part for part, same in parts.items() if not same]


def test_training_gives_the_base_commits_actions_losses_q_values_and_weights(script):
    assert _differences(script.record(), GOLDEN) == []


def test_a_different_update_does_not_match(script):
    """The comparison sees a change of the update alone: a fully copied target plays as before up to the first
    update and gives the same first loss, then other losses and weights."""
    ours = script.record({"target_network": "full_copy"})
    assert ours["losses"][0] == pytest.approx(GOLDEN["losses"][0], rel=RTOL)
    assert {"losses", "q.online", "image.weight"} <= {p.removeprefix("online.") for p in _differences(ours, GOLDEN)}
