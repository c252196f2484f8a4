"""GLAM: PPO's pieces against a reference computation, the LLM policy against a hand computation, one PPO
update, the 2-process lamorel-style caller against the in-process one, and the smoke run with resume."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from textagents.llm.lamorel import Caller, LLMSpec
from textagents.llm.transformers_backend import ValueHead
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.llm_learner import forward_batching, llm_spec
from textagents.methods.glam.ppo import PPOSettings, gae, ppo_loss
from textagents.methods.glam.scoring import POLICY, CommandScores
from textagents.methods.glam.updater import VALUE, PPOUpdater

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "glam" / "smoke.yaml"
COMMANDS = [" turn left", " turn right", " go forward", " pick up", " drop", " toggle"]


def test_gae_matches_a_step_by_step_reference():
    rng = np.random.default_rng(0)
    rewards, values = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    dones = rng.random((5, 3)) < 0.3
    last = rng.normal(size=3)
    gamma, lam = 0.9, 0.8
    expected = np.zeros((5, 3))
    for env in range(3):
        for t in range(5):  # the definition: sum of discounted TD errors until the episode ends
            total, weight = 0.0, 1.0
            for k in range(t, 5):
                next_value = last[env] if k == 4 else values[k + 1, env]
                delta = rewards[k, env] + gamma * next_value * (1 - dones[k, env]) - values[k, env]
                total += weight * delta
                if dones[k, env]:
                    break
                weight *= gamma * lam
            expected[t, env] = total
    tensors = [torch.as_tensor(x) for x in (rewards, values, dones, last)]
    advantages, returns = gae(*tensors, gamma, lam)
    np.testing.assert_allclose(advantages.numpy(), expected, rtol=1e-10)
    np.testing.assert_allclose(returns.numpy(), expected + values, rtol=1e-10)


def test_the_ppo_loss_matches_a_reference_computation():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(6, 4))
    actions = rng.integers(0, 4, size=6)
    old = rng.normal(size=6) - 1.5
    advantages, values, old_values, returns = (rng.normal(size=6) for _ in range(4))
    settings = PPOSettings(clip=0.2, entropy_coef=0.01, value_coef=0.5)
    parts = ppo_loss(
        *(torch.as_tensor(x) for x in (logits, actions, old, advantages, values, old_values, returns)), settings
    )
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    new = log_probs[np.arange(6), actions]
    ratio = np.exp(new - old)
    policy = -np.mean(np.minimum(ratio * advantages, np.clip(ratio, 0.8, 1.2) * advantages))
    clipped_values = old_values + np.clip(values - old_values, -0.2, 0.2)
    value = np.mean(np.maximum((values - returns) ** 2, (clipped_values - returns) ** 2))
    entropy = -np.mean((np.exp(log_probs) * log_probs).sum(1))
    assert float(parts["policy_loss"]) == pytest.approx(policy, rel=1e-9)
    assert float(parts["value_loss"]) == pytest.approx(value, rel=1e-9)
    assert float(parts["entropy"]) == pytest.approx(entropy, rel=1e-9)
    assert float(parts["loss"]) == pytest.approx(policy - 0.01 * entropy + 0.5 * value, rel=1e-9)


def _spec(tiny_models, seq2seq=False, **kwargs):
    heads = {POLICY: CommandScores, VALUE: functools.partial(ValueHead, width=8)}
    model = tiny_models.seq2seq if seq2seq else tiny_models.causal
    return LLMSpec(model=str(model), module_functions=heads, seed=3, **kwargs)


def test_the_policy_is_a_softmax_over_the_commands_log_probs_computed_by_hand(tiny_models):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    context = "Possible action of the agent: turn left \n Goal of the agent: go to the red ball \n Action 0:"
    with Caller(_spec(tiny_models)) as caller:
        (row,) = caller.custom_module_fns([VALUE], [context], [COMMANDS])
    model = AutoModelForCausalLM.from_pretrained(tiny_models.causal).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_models.causal)
    expected = []
    for command in COMMANDS:
        prompt = tokenizer(context)["input_ids"]
        tokens = tokenizer(command, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([prompt + tokens])).logits[0].log_softmax(-1)
        expected.append(sum(float(logits[len(prompt) - 1 + i, t]) for i, t in enumerate(tokens)))
    np.testing.assert_allclose(row["__score"], expected, rtol=1e-4, atol=1e-4)
    probs = np.exp(np.asarray(row["__score"]) - np.logaddexp.reduce(row["__score"]))
    assert probs.sum() == pytest.approx(1.0) and np.ptp(row[VALUE]) < 1e-6  # one value per context


def _batch(caller, count=8, seed=0):
    rng = np.random.default_rng(seed)
    contexts = [
        f"Goal of the agent: go to the {c} ball \n Action {i}:" for i, c in enumerate(["red", "blue"] * (count // 2))
    ]
    candidates = [COMMANDS] * count
    rows = caller.custom_module_fns([POLICY, VALUE], contexts, candidates)
    scores = np.asarray([r[POLICY] for r in rows])
    log_probs = scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)
    actions = rng.integers(0, 6, size=count)
    values = np.asarray([r[VALUE][0] for r in rows])
    advantages = np.where(actions == 2, 1.0, -1.0)  # "go forward" is good
    kwargs = {
        "actions": actions.tolist(),
        "logprobs": log_probs[np.arange(count), actions].tolist(),
        "values": values.tolist(),
        "advantages": advantages.tolist(),
        "returns": (values + advantages).tolist(),
        "minibatches": 2,
        "seed": 0,
    }
    return contexts, candidates, kwargs


def _loss(caller, contexts, candidates, kwargs):
    from textagents.methods.glam.updater import policy_outputs

    worker = caller._local
    with torch.no_grad():
        logits, values = policy_outputs(worker.llm, contexts, candidates)
    tensors = [torch.as_tensor(kwargs[k]) for k in ("actions", "logprobs", "advantages")]
    old_values, returns = torch.as_tensor(kwargs["values"]), torch.as_tensor(kwargs["returns"])
    return float(ppo_loss(logits, *tensors, values, old_values, returns, PPOSettings())["loss"])


@pytest.mark.parametrize(("seq2seq", "lora_r"), [(False, 0), (False, 4), (True, 0), (True, 4)])
def test_one_update_changes_the_weights_and_lowers_the_loss(tiny_models, seq2seq, lora_r):
    settings = PPOSettings(epochs=2, learning_rate=1e-3 if lora_r == 0 else 1e-2)
    with Caller(_spec(tiny_models, seq2seq, lora_r=lora_r), PPOUpdater(settings, micro_batch=3)) as caller:
        contexts, candidates, kwargs = _batch(caller)
        before_state = caller.trainable_state()
        before = _loss(caller, contexts, candidates, kwargs)
        (result,) = caller.update(contexts, candidates, **kwargs)
        after = _loss(caller, contexts, candidates, kwargs)
        after_state = caller.trainable_state()
    assert after < before and {"loss", "policy_loss", "value_loss", "entropy", "grad_norm"} <= result.keys()
    model_keys = [k for k in before_state if k.startswith("model.")]
    assert model_keys and (not lora_r or all("lora" in k for k in model_keys))
    assert any(not torch.equal(before_state[k], after_state[k]) for k in model_keys)
    assert any(k.startswith("updater.") for k in after_state)  # Adam's moments, for checkpoints


def test_the_micro_batch_and_forward_batch_sizes_change_the_memory_not_the_update(tiny_models):
    """Micro-batches accumulate into one gradient a minibatch, and the backend splits a forward pass into at most
    ``forward_batch`` prompts: micro-batches of 1 and of the whole batch (the paper's 4 against a GPU's 64),
    each in forward passes of 16 prompts (the default) or 64, give the same weights to float rounding."""
    states, logged = [], []
    settings = PPOSettings(epochs=2, learning_rate=1e-3, max_grad_norm=1e6)  # no clipping: the gradient's norm shows
    for micro_batch, forward_batch in [(1, 16), (64, 16), (64, 64)]:
        spec = _spec(tiny_models, backend_options=forward_batching(forward_batch))
        with Caller(spec, PPOUpdater(settings, micro_batch)) as caller:
            contexts, candidates, kwargs = _batch(caller, count=40)
            before = caller.trainable_state()
            logged += caller.update(contexts, candidates, **kwargs)
            states.append(caller.trainable_state())
    keys = [k for k in before if k.startswith("model.")]
    assert any(not torch.equal(before[k], states[0][k]) for k in keys)
    for other in (1, 2):
        for name in ("loss", "grad_norm", "entropy"):
            assert logged[0][name] == pytest.approx(logged[other][name], rel=1e-4), name
        for k in keys:  # atol: 1% of Adam's first step (lr), where a gradient near 0 leaves its direction to rounding
            message = functools.partial("{}: {}".format, k)
            torch.testing.assert_close(states[0][k], states[other][k], rtol=1e-4, atol=1e-5, msg=message)


def test_a_bfloat16_update_computes_each_pass_with_the_weights_of_the_last_step(tiny_models, monkeypatch):
    """Under mixed precision (a GPU's default), each forward pass of the update sees the optimizer's last step:
    its logits equal a fresh forward pass's at that point. autocast's cache of the weights' casts, left on,
    kept the update's first weights for all its epochs."""
    from textagents.methods.glam import updater

    passes = []
    outputs = updater.policy_outputs

    def checked(llm, contexts, candidates):
        logits, values = outputs(llm, contexts, candidates)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
            fresh_logits, fresh_values = outputs(llm, contexts, candidates)
        passes.append((logits.detach(), values.detach(), fresh_logits, fresh_values))
        return logits, values

    monkeypatch.setattr(updater, "policy_outputs", checked)
    settings = PPOSettings(epochs=3, learning_rate=1e-2)
    with Caller(_spec(tiny_models, dtype="bfloat16"), PPOUpdater(settings, micro_batch=64)) as caller:
        contexts, candidates, kwargs = _batch(caller, count=8)
        caller.update(contexts, candidates, **{**kwargs, "minibatches": 1})
    assert len(passes) == 3
    assert not torch.equal(passes[0][2], passes[-1][2])  # the steps moved the policy
    for logits, values, fresh_logits, fresh_values in passes:
        torch.testing.assert_close(logits, fresh_logits)
        torch.testing.assert_close(values, fresh_values)


@pytest.mark.parametrize(("forward_batch", "passes"), [(16, 3), (64, 1)])
def test_forward_batch_bounds_the_prompts_of_one_forward_pass(tiny_models, monkeypatch, forward_batch, passes):
    from textagents.llm.transformers_backend import TransformersBackend

    spec = llm_spec(GlamConfig(forward_batch=forward_batch, device="cpu"), str(tiny_models.causal))
    sizes = []
    chunk = TransformersBackend._forward_chunk

    def counted(self, context_ids, *args, **kwargs):
        sizes.append(len(context_ids))
        return chunk(self, context_ids, *args, **kwargs)

    monkeypatch.setattr(TransformersBackend, "_forward_chunk", counted)
    contexts = [f"Goal of the agent: go to the ball number {i} \n Action:" for i in range(40)]
    with Caller(spec, score_cache=False) as caller:
        caller.custom_module_fns([POLICY, VALUE], contexts, [COMMANDS] * 40)
    assert sum(sizes) == 40 and len(sizes) == passes and max(sizes) <= forward_batch


def test_two_llm_processes_score_and_update_as_one(tiny_models):
    settings = PPOSettings(epochs=1, learning_rate=1e-3)
    with Caller(_spec(tiny_models), PPOUpdater(settings, micro_batch=4)) as one:
        contexts, candidates, kwargs = _batch(one)
        scores_one = one.custom_module_fns([VALUE], contexts, candidates)
        kwargs["minibatches"] = 1  # one gradient step over the whole batch: the same on 1 or 2 processes
        one.update(contexts, candidates, **kwargs)
        updated_one = one.custom_module_fns([VALUE], contexts, candidates)
    with Caller(_spec(tiny_models), PPOUpdater(settings, micro_batch=4), processes=2) as two:
        scores_two = two.custom_module_fns([VALUE], contexts, candidates)
        results = two.update(contexts, candidates, **kwargs)
        updated_two = two.custom_module_fns([VALUE], contexts, candidates)
        assert two.generate(["Goal of the agent:"], max_tokens=3) == Caller(_spec(tiny_models)).generate(
            ["Goal of the agent:"], max_tokens=3
        )
    assert len(results) == 2
    for a, b in ((scores_one, scores_two), (updated_one, updated_two)):
        np.testing.assert_allclose([r["__score"] for r in a], [r["__score"] for r in b], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose([r[VALUE] for r in a], [r[VALUE] for r in b], rtol=1e-5, atol=1e-5)
    assert not np.allclose([r["__score"] for r in scores_one], [r["__score"] for r in updated_one])


def test_the_smoke_run_trains_evaluates_and_resumes_exactly(tmp_path, tiny_models):
    from textagents.methods.core.runner import LLMChoice, run_method

    llm = LLMChoice(model=str(tiny_models.causal))
    whole = tmp_path / "whole"
    run_method("glam", SMOKE, whole, llm=llm, progress=False)
    records = [json.loads(line) for line in (whole / "metrics.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["iteration"]) for r in records] == [("train", 1), ("eval", 1), ("train", 2), ("eval", 2)]
    first = records[0]
    assert "zero_shot/train_level/success_rate" in first and "zero_shot/MixedTestLocal/success_rate" in first
    assert first["frames"] == 8 and records[2]["frames"] == 16 and np.isfinite(first["loss"])
    assert "## Success rate against frames" in (whole / "report.md").read_text()
    assert (whole / "success.png").is_file()

    cut = tmp_path / "cut"
    config = tmp_path / "one.yaml"
    config.write_text(SMOKE.read_text())
    run_method("glam", config, cut, llm=llm, progress=False)  # the same config ...
    lines = (cut / "metrics.jsonl").read_text().splitlines()
    (cut / "metrics.jsonl").write_text("\n".join(lines[:2]) + "\n")  # ... as if killed after iteration 1
    import shutil

    shutil.rmtree(cut / "checkpoints" / "iter_000002")
    run_method("glam", config, cut, llm=llm, progress=False, resume=True)

    def strip(path):
        return [
            {k: v for k, v in json.loads(line).items() if k not in ("time", "elapsed_s")}
            for line in path.read_text().splitlines()
        ]

    assert strip(cut / "metrics.jsonl") == strip(whole / "metrics.jsonl")


@pytest.mark.parametrize("agent", ["npae", "drrn", "symbolic_ppo"])
def test_the_baselines_run_on_the_same_envs_and_frame_budget(tmp_path, tiny_models, agent):
    from textagents.methods.core.runner import LLMChoice, run_method

    config = tmp_path / f"{agent}.yaml"
    config.write_text(SMOKE.read_text() + f"agent: {agent}\n")
    out = tmp_path / agent
    llm = LLMChoice(model=str(tiny_models.causal)) if agent == "npae" else None
    run_method("glam", config, out, llm=llm, progress=False)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["frames"] for r in records if r["kind"] == "train"] == [8, 16]
    assert 0.0 <= records[-1]["train_level/success_rate"] <= 1.0
    if agent == "symbolic_ppo":  # episodes of 6 steps end within 8 frames per env: their returns are logged
        assert any(np.isfinite(r["return"]) for r in records if r["kind"] == "train")
    assert "zero_shot/MixedTestLocal/success_rate" in records[0]


def test_the_test_levels_are_evaluated_on_their_schedule(tmp_path):
    from textagents.methods.core.runner import run_method

    config = tmp_path / "drrn.yaml"
    schedule = "iterations: 4\neval_every: 1\ntest_levels_every: 2\ntest_eval_episodes: 2\n"
    config.write_text(SMOKE.read_text().replace("iterations: 2\neval_every: 1\n", "") + "agent: drrn\n" + schedule)
    run_method("glam", config, tmp_path / "run", progress=False)
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    evaluations = [r for r in records if r["kind"] == "eval"]
    assert [r["iteration"] for r in evaluations] == [1, 2, 3, 4]
    assert ["MixedTestLocal/success_rate" in r for r in evaluations] == [False, True, False, True]
    assert all("train_level/success_rate" in r for r in evaluations)
    assert "zero_shot/MixedTestLocal/success_rate" in records[0]  # the untrained agent: every level


def test_npae_has_the_architecture_without_the_pretrained_weights(tiny_models):
    with Caller(_spec(tiny_models)) as pretrained, Caller(_spec(tiny_models, pretrained=False)) as fresh:
        a, b = pretrained.trainable_state(), fresh.trainable_state()
    weights = [k for k in a if k.startswith("model.")]
    assert weights == [k for k in b if k.startswith("model.")]
    assert all(a[k].shape == b[k].shape for k in weights)
    assert not any(torch.equal(a[k], b[k]) for k in weights if a[k].dim() == 2)


def test_npae_starts_near_uniform_with_the_originals_action_head(tiny_models):
    config = GlamConfig(agent="npae", value_head_width=1024)
    contexts = [f"Goal of the agent: go to the {c} ball \n Action 0:" for c in ("red", "blue", "green")]
    with Caller(llm_spec(config, str(tiny_models.causal))) as caller:
        rows = caller.custom_module_fns([POLICY, VALUE], contexts, [COMMANDS] * 3)
        head = caller._local.llm.backend.module_functions[POLICY]
    assert [tuple(m.weight.shape) for m in head.net if isinstance(m, torch.nn.Linear)][-1] == (6, 1024)
    pi = torch.softmax(torch.tensor([r[POLICY] for r in rows]), -1)
    assert float((pi - 1 / 6).abs().max()) < 0.05  # the random LM head's scores put ~all mass on one command


def test_the_comparison_runs_each_agent_and_seed_once_and_reports_mean_curves(tmp_path):
    from textagents.cli import main

    out = tmp_path / "compare"
    command = ["method", "compare", "glam", str(SMOKE), "--out", str(out), "--no-progress"]
    assert main([*command, "--vary", "agent=drrn,symbolic_ppo", "--seeds", "0", "1"]) == 0
    report = (out / "comparison.md").read_text()
    assert "## train_level success rate" in report and "## MixedTestLocal success rate" in report
    assert report.count("| drrn | 16 |") == 2 and report.count("| symbolic_ppo | 0 |") == 2  # zero-shot point
    assert (out / "comparison.png").is_file()
    finished = (out / "agent=drrn_seed1" / "metrics.jsonl").stat().st_mtime_ns
    assert main([*command, "--vary", "agent=drrn", "--seeds", "1"]) == 0
    assert (out / "agent=drrn_seed1" / "metrics.jsonl").stat().st_mtime_ns == finished  # not run again
    assert main([*command, "--vary", "agent=dqn"]) == 2  # refused before anything runs
    assert main([*command, "--vary", "agent"]) == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ((), "error: GLAM fine-tunes a local transformers model: set `model:` or pass --model"),
        (("--model", "m", "--base-url", "http://127.0.0.1:9/v1"), "--base-url is not supported"),
    ],
)
def test_a_glam_run_without_a_local_model_is_a_user_error(tmp_path, capsys, flags, message):
    """Exit status 2 and one `error:` line, as docs/methods/index.md promises (was 1 and a RuntimeError)."""
    from textagents.cli import main

    config = tmp_path / "no-model.yaml"  # the smoke config names a tiny model
    config.write_text(yaml.safe_dump({k: v for k, v in yaml.safe_load(SMOKE.read_text()).items() if k != "model"}))
    assert main(["method", "run", "glam", str(config), "--out", str(tmp_path / "run"), "--no-progress", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "RuntimeError" not in err and len(err.strip().splitlines()) == 1, err
