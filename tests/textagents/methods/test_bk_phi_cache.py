"""BK-Code's Φ cache and batched sandbox requests: they change what Φ costs, never its value (the same seed
gives the same shaped rewards and the same policy with them as without), the cache is bounded and keeps no
timeout, and the labelling refuses a potential that keeps state between calls (the contract they rely on)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from tests.textagents.methods.sandbox_support import UNSAFE_LOCAL_EXEC_HERE
from tests.textagents.methods.scripted_llm import Scripted
from textagents.methods.bk.code_potential import try_potential, write_potential
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.isolation import BUBBLEWRAP, UNSAFE_LOCAL_EXEC
from textagents.methods.bk.method import BKMethod
from textagents.methods.bk.phi_cache import CachedPotential
from textagents.methods.bk.ppo import PrefetchPotentials
from textagents.methods.bk.sandbox import SandboxedPotential
from textagents.methods.core.method import RunContext

ISOLATION = UNSAFE_LOCAL_EXEC if UNSAFE_LOCAL_EXEC_HERE else BUBBLEWRAP
SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "bk" / "smoke.yaml"
LENGTH = """
def potential(o):
    if o == "raise":
        raise ValueError("no")
    while o == "loop":
        pass
    return float(len(o))
"""
# Φ varies from step to step on Crafter, so that the shaping term is not constant.
TREES_AND_LENGTH = "def potential(observation):\n    return observation.count('tree') + 0.01 * len(observation)\n"
COUNTER_IN_A_DEFAULT = "def potential(observation, seen=[]):\n    seen.append(1)\n    return float(len(seen))\n"
COUNTER_IN_A_GLOBAL = (
    "state = {'calls': 0}\ndef potential(observation):\n    state['calls'] += 1\n    return min(state['calls'], 3)\n"
)


def cached(source: str, max_entries: int, **kwargs) -> CachedPotential:
    return CachedPotential(SandboxedPotential(source, isolation=ISOLATION, **kwargs), max_entries)


def test_a_text_is_evaluated_once_and_the_cache_drops_the_least_recently_used():
    potential = cached(LENGTH, max_entries=2)
    try:
        assert [potential({"text": t}) for t in ("a", "bb", "a", "ccc")] == [1.0, 2.0, 1.0, 3.0]
        assert potential.sandbox.stats.calls == 3 and potential.hits == 1 and list(potential.cache) == ["a", "ccc"]
        assert potential("bb") == 2.0 and potential.sandbox.stats.calls == 4  # dropped, so evaluated again
        assert potential.metrics() == {"requests": 5, "cache_hits": 1, "cache_entries": 2}
    finally:
        potential.sandbox.close()


def test_without_entries_every_call_goes_to_the_sandbox():
    potential = cached(LENGTH, max_entries=0)
    try:
        assert [potential("a") for _ in range(3)] == [1.0] * 3 and potential.sandbox.stats.calls == 3
    finally:
        potential.sandbox.close()
    with pytest.raises(ValueError, match=r"max_entries must be >= 0 .*got -1"):
        CachedPotential(potential.sandbox, -1)


def test_a_prefetch_is_one_request_for_the_texts_not_kept_and_keeps_errors_but_not_timeouts():
    potential = cached(LENGTH, max_entries=10, timeout_s=0.5)
    try:
        potential("a")
        potential.prefetch([{"text": t} for t in ("a", "bb", "bb", "raise", "loop")])
        stats = potential.sandbox.stats
        assert stats.batches == 2 and stats.calls == 1 + 3  # "a" kept, "bb" asked once
        assert [potential(t) for t in ("a", "bb", "bb", "raise", "loop")] == [1.0, 2.0, 2.0, 0.0, 0.0]
        assert stats.batches == 2 and potential.hits == 5  # all found: the loop's 0 too, until the next prefetch
        assert set(potential.cache) == {"a", "bb", "raise"}  # the error is a function of the text; the timeout not
        potential.prefetch(["a"])
        assert potential("loop") == 0.0 and stats.timeouts == 2  # evaluated again, as without the cache
    finally:
        potential.sandbox.close()


def _crafter_config(tmp_path: Path, **options) -> BKConfig:
    code_file = tmp_path / "potential.py.txt"
    code_file.write_text(TREES_AND_LENGTH)
    smoke = yaml.safe_load(SMOKE.read_text())
    settings = {**smoke, "env_id": "Crafter-Text-ELLM-v0", "code_file": str(code_file), "frames_per_iteration": 64}
    return BKConfig(**{**settings, **options})


def _context(folder: Path) -> RunContext:
    return RunContext(folder, lambda: pytest.fail("a code_file needs no LLM"), UNSAFE_LOCAL_EXEC_HERE)


def _train_once(tmp_path: Path, name: str, **options) -> tuple[BKMethod, dict]:
    folder = tmp_path / name
    folder.mkdir()
    method = BKMethod(_crafter_config(tmp_path, **options), _context(folder))
    return method, method.train_iteration(1)


def _prefetches(venv) -> bool:
    while hasattr(venv, "venv"):
        if isinstance(venv, PrefetchPotentials):
            return True
        venv = venv.venv
    return False


def test_the_cache_and_batches_give_the_same_shaped_rewards_and_policy_as_every_call_in_the_sandbox(tmp_path):
    plain, plain_metrics = _train_once(tmp_path, "plain", code_cache_entries=0, code_batch=False)
    fast, fast_metrics = _train_once(tmp_path, "fast")
    try:
        assert _prefetches(fast.model.get_env()) and not _prefetches(plain.model.get_env())
        assert plain_metrics["sandbox/calls"] == plain_metrics["sandbox/requests"] == 64
        assert plain_metrics["sandbox/batches"] == 64
        # the cache and the batches did their work: fewer evaluations, at most one request per step
        assert fast_metrics["sandbox/requests"] == 64 and fast_metrics["sandbox/calls"] < 64
        assert fast_metrics["sandbox/batches"] <= 32 and fast_metrics["sandbox/cache_hits"] == 64
        for name in ("shaping/mean", "shaping/min", "shaping/max"):
            assert fast_metrics[name] == plain_metrics[name], name
        assert plain_metrics["shaping/min"] < plain_metrics["shaping/max"]  # Φ varied
        buffers = plain.model.rollout_buffer, fast.model.rollout_buffer
        assert np.array_equal(buffers[0].rewards, buffers[1].rewards)
        assert np.array_equal(buffers[0].advantages, buffers[1].advantages)
        assert plain.lagged.state() == fast.lagged.state()
        weights = plain.model.policy.state_dict(), fast.model.policy.state_dict()
        assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])
    finally:
        plain.close()
        fast.close()


@pytest.mark.parametrize("source", [COUNTER_IN_A_DEFAULT, COUNTER_IN_A_GLOBAL])
def test_the_labelling_refuses_a_potential_that_keeps_state_between_calls(tmp_path, source):
    error, values, stats = try_potential(source, ["x", "y", "z"], ISOLATION)
    assert error is not None and error.startswith("not a function of the observation: sample ")
    assert "must keep no state between calls" in error
    assert stats.impure >= 1 and stats.failures == 0 and len(values) == 3
    assert try_potential(LENGTH, ["x", "yy"], ISOLATION)[0:2] == (None, [1.0, 2.0])

    method = BKMethod(_crafter_config(tmp_path), _context(tmp_path))
    Path(method.config.code_file).write_text(source)
    try:
        with pytest.raises(ValueError, match="does not run in the sandbox: not a function of the observation"):
            method.knowledge.label()
    finally:
        method.close()


def test_a_stateful_answer_is_fed_back_and_counted_as_its_own_cause():
    backend = Scripted([f"```python\n{COUNTER_IN_A_GLOBAL}```", f"```python\n{LENGTH}```"])
    result = write_potential(backend, "crafter_text", ["a", "bb"], rounds=2, isolation=ISOLATION)
    assert [r["impure"] for r in result.rounds] == [True, False]
    assert result.rounds[0]["error"].startswith("not a function of the observation: sample 1 gave 1, then 3")
    assert result.code == LENGTH and result.rounds[1]["values"] == [1.0, 2.0]
    assert "not a function of the observation" in backend.asked[1][-1]["content"]
