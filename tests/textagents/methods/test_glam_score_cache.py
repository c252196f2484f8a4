"""The lamorel-style caller's score cache: repeated calls under unchanged weights are served from it, any
weight change (an update, a load, an in-place write) or a module in training mode bypasses or empties it,
and a GLAM training run gives the same trajectories and evaluations with it on and off, and the same losses
and weights up to float rounding (the cache's misses run in smaller batches)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from textagents.llm.lamorel import Caller, LLMSpec
from textagents.llm.score_cache import ScoreCache
from textagents.llm.transformers_backend import ValueHead
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.llm_learner import LLMLearner
from textagents.methods.glam.ppo import PPOSettings
from textagents.methods.glam.scoring import POLICY, CommandScores
from textagents.methods.glam.updater import VALUE, PPOUpdater

COMMANDS = [" turn left", " turn right", " go forward", " pick up", " drop", " toggle"]
CONTEXTS = [f"Goal of the agent: go to the {c} ball \n Action 0:" for c in ("red", "blue", "red", "green", "red")]


def _caller(tiny_models, score_cache=True, lora_r=0):
    heads = {POLICY: CommandScores, VALUE: functools.partial(ValueHead, width=8)}
    spec = LLMSpec(model=str(tiny_models.causal), module_functions=heads, seed=3, lora_r=lora_r)
    return Caller(spec, PPOUpdater(PPOSettings(epochs=1, learning_rate=1e-2), micro_batch=4), score_cache=score_cache)


def _rows(caller, contexts=CONTEXTS):
    return caller.custom_module_fns([POLICY, VALUE], contexts, [COMMANDS] * len(contexts))


def _update(caller):
    count = len(CONTEXTS)
    caller.update(
        CONTEXTS,
        [COMMANDS] * count,
        actions=[2] * count,
        logprobs=[-1.8] * count,
        values=[0.0] * count,
        advantages=[1.0] * count,
        returns=[1.0] * count,
        minibatches=1,
        seed=0,
    )


def test_the_cache_computes_each_pair_once_per_weights_state():
    calls = []

    def compute(contexts, candidates):
        calls.append(list(contexts))
        return [{"score": [float(len(c))] * len(o)} for c, o in zip(contexts, candidates, strict=True)]

    cache = ScoreCache(max_entries=2)
    rows = cache.rows(["score"], ["ab", "abc", "ab"], [["x"], ["x", "y"], ["x"]], (0,), compute)
    assert rows == [{"score": [2.0]}, {"score": [3.0, 3.0]}, {"score": [2.0]}]
    assert calls == [["ab", "abc"]] and (cache.hits, cache.misses) == (1, 2)
    cache.rows(["score"], ["abc"], [["x", "y"]], (0,), compute)
    assert calls == [["ab", "abc"]]  # served from the cache
    cache.rows(["score"], ["abc"], [["x"]], (0,), compute)  # other candidates: another pair
    cache.rows(["score"], ["abc"], [["x", "y"]], (1,), compute)  # another weights state: computed again
    assert calls == [["ab", "abc"], ["abc"], ["abc"]] and len(cache.entries) == 1
    rows[0]["score"].append(9.0)  # a caller's copy: the cache is not changed through it
    cache.rows(["score"], ["ab", "abd", "abe"], [["x"]] * 3, (1,), compute)
    assert len(cache.entries) == 2  # the oldest went
    with pytest.raises(ValueError, match="max_entries"):
        ScoreCache(max_entries=0)


def test_the_caller_serves_repeats_and_forgets_them_when_the_weights_change(tiny_models):
    with _caller(tiny_models) as cached, _caller(tiny_models, score_cache=False) as plain:
        first = _rows(cached)
        np.testing.assert_allclose([r[POLICY] for r in first], [r[POLICY] for r in _rows(plain)], rtol=1e-6)
        assert _rows(cached) == first and cached.cache_stats() == {"hits": 2 + 5, "misses": 3}
        assert plain.cache_stats() == {"hits": 0, "misses": 0}

        _update(cached)
        _update(plain)
        updated = _rows(cached)
        assert cached.cache_stats()["misses"] == 6 and updated != first
        np.testing.assert_allclose([r[VALUE] for r in updated], [r[VALUE] for r in _rows(plain)], rtol=1e-6)

        cached.load_trainable_state(plain.trainable_state())  # the same weights: recomputed, not served
        assert _rows(cached) == _rows(cached) and cached.cache_stats()["misses"] == 9

        backend = cached._local.llm.backend
        with torch.no_grad():  # a write outside update and load: seen through the parameter's version
            backend.module_functions[VALUE].out.bias.add_(1.0)
        shifted = _rows(cached)
        assert cached.cache_stats()["misses"] == 12
        assert [r[VALUE][0] for r in shifted] == pytest.approx([r[VALUE][0] + 1.0 for r in updated], abs=1e-4)

        backend.model.train()  # a module in training mode (dropout): nothing cached
        misses = cached.cache_stats()
        _rows(cached)
        assert cached.cache_stats() == misses


def test_a_lora_model_scores_in_eval_mode(tiny_models):
    """get_peft_model leaves its modules in training mode: built, every module is in eval mode, as the
    original's from_pretrained model (dropout off), so its repeated calls can be cached."""
    with _caller(tiny_models, lora_r=4) as caller:
        backend = caller._local.llm.backend
        assert not any(m.training for m in [*backend.model.modules(), *backend.module_functions.modules()])
        _rows(caller)
        _rows(caller)
        assert caller.cache_stats() == {"hits": 2 + 5, "misses": 3}


def test_a_glam_run_is_the_same_with_and_without_the_cache(tiny_models):
    config = GlamConfig(
        env_id="BabyAI-Text-GoToObjS4-v0",
        prompt_observations=1,
        envs=4,
        frames_per_env=4,
        ppo_epochs=2,
        minibatch_size=8,
        micro_batch=4,
        learning_rate=1e-3,
        lora_r=4,
        value_head_width=16,
        eval_episodes=4,
    )

    def run(score_cache):
        learner = LLMLearner(GlamConfig(**{**config.as_dict(), "score_cache": score_cache}), str(tiny_models.causal))
        try:
            trace = [learner.evaluate(test_levels=False)]
            for iteration in (1, 2):
                trace += [learner.train_frames(iteration), learner.evaluate(test_levels=False)]
            state, weights = learner.state()
            return trace, state, weights, learner.caller.cache_stats()
        finally:
            learner.close()

    trace, state, weights, stats = run(True)
    plain_trace, plain_state, plain_weights, _ = run(False)
    assert state == plain_state  # every env's seeds and commands: the same trajectories
    for cached, plain in zip(trace, plain_trace, strict=True):
        assert cached.keys() == plain.keys()
        exact = [k for k in cached if "frames" in k or "episode" in k or "success" in k or "return" in k]
        np.testing.assert_equal([cached[k] for k in exact], [plain[k] for k in exact])
        # A pair computed in a smaller batch (only the cache's misses) can differ in the last float bits
        np.testing.assert_allclose([cached[k] for k in cached], [plain[k] for k in cached], rtol=1e-5, atol=1e-7)
    assert weights.keys() == plain_weights.keys()
    for key, value in weights.items():
        torch.testing.assert_close(value, plain_weights[key], rtol=1e-5, atol=1e-7)
    assert stats["hits"] > 0.2 * (stats["hits"] + stats["misses"])
