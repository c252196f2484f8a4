"""Prefix sharing (``prefix_sharing``, default on): a forward pass computes the leading tokens its prompts
share once and a repeated prompt once. Against the same model with it off (every row's prompt in full, the
code before it) and against one plain forward pass per (prompt, command): the same scores, policy logits,
values, PPO loss and gradients (float32, LoRA on) for each scoring, a decoder-only model of each position
scheme (Llama's rotary, GPT-2's learned) and a seq2seq model; and the same PPO update."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from textagents.llm.lamorel import Caller, LLMHandle
from textagents.llm.shared_prefix import shared_prefix_length
from textagents.llm.transformers_backend import cross_attention_for
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.llm_learner import llm_spec, ppo_settings
from textagents.methods.glam.ppo import ppo_loss
from textagents.methods.glam.updater import PPOUpdater, micro_batches, policy_outputs

CROSS_ATTENTIONS = ("per_prompt", "per_candidate")
COMMANDS = [" turn left", " turn right", " go forward", " pick up", " drop", " toggle"]
HEAD = "Possible action of the agent: turn left, turn right, go forward, pick up, drop, toggle \n Goal of the agent: "
# GLAM's prompts of different lengths sharing their first tokens, one repeated, one sharing fewer of them
CONTEXTS = [
    HEAD + "go to the red ball \n Observation 0: You see a wall 2 steps forward, \n Action 0:",
    HEAD + "go to the blue key \n Observation 0: You see a blue key 1 step left and 3 steps forward, \n Action 0:",
    HEAD + "go to the red ball \n Observation 0: You see a wall 2 steps forward, \n Action 0:",
    HEAD + "go to the grey box \n Observation 0: You carry a grey box, \n Action 0:",
    "Possible action of the agent: go forward \n Goal of the agent: open the door \n Action 1:",
]
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A random Llama-architecture model (rotary positions, grouped-query attention) on the tiny models'
    tokenizer, with weights large enough that the commands' scores differ well beyond the tolerance."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from textagents.testing import ENV_VOCABULARY, save_model, train_tokenizer

    tokenizer = train_tokenizer(ENV_VOCABULARY)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        initializer_range=0.2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config).eval()
    path = tmp_path_factory.mktemp("tiny_llama") / "llama"
    save_model(model, tokenizer, path)
    return path


@pytest.fixture(scope="module")
def models(tiny_llama, tiny_models):
    return {"llama": tiny_llama, "gpt2": tiny_models.causal, "t5": tiny_models.seq2seq}


def _config(**kwargs) -> GlamConfig:
    return GlamConfig(lora_r=4, value_head_width=8, seed=3, learning_rate=1e-3, **kwargs)


def _backend(path, prefix_sharing: bool, **kwargs):
    """The GLAM policy's backend with random LoRA weights (LoRA starts as a no-op: B = 0, no gradient to A)."""
    backend = llm_spec(_config(prefix_sharing=prefix_sharing, **kwargs), str(path)).build()
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, param in backend.model.named_parameters():
            if "lora_" in name:
                param.copy_(0.3 * torch.randn(param.shape, generator=generator))
    return backend


def _ppo_parts(backend, contexts, candidates) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    logits, values = policy_outputs(LLMHandle(backend), contexts, candidates)
    count = len(contexts)
    rows = torch.arange(count)
    parts = ppo_loss(
        logits,
        rows % logits.shape[1],
        torch.full((count,), -1.7),
        torch.linspace(-1.0, 1.0, count),
        values,
        torch.zeros(count),
        torch.ones(count),
        ppo_settings(_config()),
    )
    return parts, logits, values


def _gradients(backend) -> dict[str, torch.Tensor]:
    params = [*backend.model.named_parameters(), *backend.module_functions.named_parameters()]
    return {name: param.grad for name, param in params if param.requires_grad}


@pytest.mark.parametrize("kind", ["llama", "gpt2", "t5"])
@pytest.mark.parametrize("scoring", ["paper", "pinned", "logprob"])
def test_prefix_sharing_gives_the_numbers_and_gradients_of_full_prompts(models, kind, scoring):
    shared, full = (_backend(models[kind], on, scoring=scoring) for on in (True, False))
    candidates = [COMMANDS] * len(CONTEXTS)
    (parts, logits, values), (full_parts, full_logits, full_values) = (
        _ppo_parts(b, CONTEXTS, candidates) for b in (shared, full)
    )
    outputs = {"logits": logits, "values": values, **parts}
    full_outputs = {"logits": full_logits, "values": full_values, **full_parts}
    for name, value in full_outputs.items():
        np.testing.assert_allclose(outputs[name].detach(), value.detach(), **TOLERANCE, err_msg=name)
    parts["loss"].backward()
    full_parts["loss"].backward()
    grads, full_grads = (_gradients(b) for b in (shared, full))
    assert grads.keys() == full_grads.keys() and len(grads) > 4
    assert all(bool(g.abs().sum() > 0) for g in grads.values())
    # the whole gradient to 5e-5 of its norm (T5's float32 rounding moves by ~1.3e-5 of it when the batch
    # holds 4 distinct prompts instead of 5; with the model in float64 the two agree to 1e-7), and each entry
    # to 1e-4 of the largest (an entry that sums cancelling terms keeps only their rounding)
    got, expected = (torch.cat([g.flatten() for g in d.values()]) for d in (grads, full_grads))
    assert float((got - expected).norm()) <= 5e-5 * float(expected.norm())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * float(expected.abs().max()))
    assert logits[0].tolist() == logits[2].tolist()  # the repeated prompt: one computation
    assert np.ptp(logits[0].detach().numpy()) > 1e-3  # commands that score apart: a wrong position would show


@pytest.mark.parametrize("scoring", ["paper", "logprob"])
def test_t5_cross_attention_computed_once_per_prompt_gives_the_numbers_of_repeated_encoder_states(models, scoring):
    once, repeated = (_backend(models["t5"], True, scoring=scoring, cross_attention=c) for c in CROSS_ATTENTIONS)
    candidates = [COMMANDS] * len(CONTEXTS)
    (parts, logits, values), (ref_parts, ref_logits, ref_values) = (
        _ppo_parts(b, CONTEXTS, candidates) for b in (once, repeated)
    )
    outputs = {"logits": logits, "values": values, **parts}
    for name, value in {"logits": ref_logits, "values": ref_values, **ref_parts}.items():
        np.testing.assert_allclose(outputs[name].detach(), value.detach(), **TOLERANCE, err_msg=name)
    parts["loss"].backward()
    ref_parts["loss"].backward()
    got, expected = (torch.cat([g.flatten() for g in _gradients(b).values()]) for b in (once, repeated))
    assert float((got - expected).norm()) <= 5e-5 * float(expected.norm())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * float(expected.abs().max()))
    assert np.ptp(logits[0].detach().numpy()) > 1e-3


@pytest.mark.parametrize("cross_attention", CROSS_ATTENTIONS)
def test_t5_projects_each_prompt_for_cross_attention_once_or_once_per_command(models, cross_attention):
    backend = _backend(models["t5"], True, cross_attention=cross_attention)
    projected: list[int] = []
    layers = [m for n, m in backend.model.named_modules() if n.endswith("EncDecAttention.k")]
    assert layers
    hooks = [m.register_forward_hook(lambda _m, args, _out: projected.append(args[0].shape[0])) for m in layers]
    try:
        policy_outputs(LLMHandle(backend), CONTEXTS, [COMMANDS] * len(CONTEXTS))
    finally:
        for hook in hooks:
            hook.remove()
    per_prompt = cross_attention == "per_prompt"
    assert projected == [len(set(CONTEXTS)) * (1 if per_prompt else len(COMMANDS))] * len(layers)


def test_cross_attention_auto_is_per_prompt_on_the_cpu_and_per_candidate_on_a_gpu():
    assert cross_attention_for("auto", torch.device("cpu")) == "per_prompt"
    assert cross_attention_for("auto", torch.device("cuda:1")) == "per_candidate"
    assert cross_attention_for("per_prompt", torch.device("cuda")) == "per_prompt"
    with pytest.raises(ValueError, match="cross_attention 'once' is not one of"):
        cross_attention_for("once", torch.device("cpu"))


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_the_scores_are_one_plain_forward_pass_per_prompt_and_command(models, kind):
    backend = _backend(models[kind], True, scoring="logprob")
    with torch.no_grad():
        got = backend.score(CONTEXTS, [COMMANDS] * len(CONTEXTS))
        expected = backend.score_without_reuse(CONTEXTS, [COMMANDS] * len(CONTEXTS))
    np.testing.assert_allclose(got, expected, **TOLERANCE)


def _model_calls(backend, contexts, gradients: bool = False) -> list[tuple[int, ...]]:
    """The shapes of the token ids of each forward pass of the model while scoring ``contexts`` (or, with
    ``gradients``, computing the policy for the PPO update)."""
    calls = []
    forward = backend.model.forward

    def recording(*args, **kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    backend.model.forward = recording
    try:
        if gradients:
            policy_outputs(LLMHandle(backend), contexts, [COMMANDS] * len(contexts))
        else:
            backend.score(contexts, [COMMANDS] * len(contexts))
    finally:
        backend.model.forward = forward
    return calls


@pytest.mark.parametrize(("contexts", "head"), [(CONTEXTS[:4], HEAD), (CONTEXTS, "Possible action of the agent:")])
def test_a_forward_pass_computes_the_shared_prefix_and_each_distinct_prompt_once(tiny_llama, contexts, head):
    shared, full = (_backend(tiny_llama, on) for on in (True, False))
    ids = [shared.encode(c) for c in contexts]
    prefix = next(i for i, column in enumerate(zip(*ids, strict=False)) if len(set(column)) > 1)
    assert prefix >= len(shared.encode(head)) - 1  # the last space of GLAM's head joins the goal's first word
    distinct = list(dict.fromkeys(map(tuple, ids)))
    assert len(distinct) == len(contexts) - 1
    command_tokens = max(len(shared.encode(c, shared.candidate_special_tokens)) for c in COMMANDS)
    assert _model_calls(shared, contexts) == [
        (1, prefix),
        (len(distinct), max(map(len, distinct)) - prefix),
        (len(distinct) * len(COMMANDS), command_tokens),
    ]
    assert _model_calls(full, contexts) == [
        (len(ids), max(map(len, ids))),
        (len(ids) * len(COMMANDS), command_tokens),
    ]


def test_the_prefix_is_kept_for_later_calls_without_gradients_while_the_weights_stay(tiny_llama):
    shared, full = (_backend(tiny_llama, on) for on in (True, False))
    first, later = CONTEXTS[:2], [CONTEXTS[3]]
    prefix = _model_calls(shared, first)[0][1]
    calls = _model_calls(shared, later)  # one prompt: its tokens after the kept prefix
    assert calls[0] == (1, len(shared.encode(later[0])) - prefix)
    with torch.no_grad():
        np.testing.assert_allclose(shared.score(later, [COMMANDS]), full.score(later, [COMMANDS]), **TOLERANCE)
        for backend in (shared, full):  # an in-place write: the kept key values are stale
            next(p for n, p in backend.model.named_parameters() if "lora_B" in n).add_(0.5)
    assert _model_calls(shared, later)[0] == (1, len(shared.encode(later[0])))
    with torch.no_grad():
        np.testing.assert_allclose(shared.score(later, [COMMANDS]), full.score(later, [COMMANDS]), **TOLERANCE)
    _model_calls(shared, first)
    for _ in range(2):  # with gradients the prefix is computed in every pass
        assert _model_calls(shared, first, gradients=True)[0] == (1, prefix)


def test_the_shared_prefix_leaves_every_prompt_its_last_token():
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5, 6]]) == 3
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3, 4]]) == 2
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2
    assert shared_prefix_length([[1, 2, 3], [2, 2, 3]]) == 0
    assert shared_prefix_length([[1, 2, 3]]) == 0


def test_micro_batches_hold_whole_prompts_when_a_repeated_prompt_is_computed_once():
    contexts = ["aa", "bbb", "aa", "c", "bbb", "dddd"]
    candidates = [["x"]] * 6
    rows = np.array([5, 0, 1, 2, 3, 4])
    by_prompt = micro_batches(rows, contexts, candidates, 2, by_prompt=True)
    assert [batch.tolist() for batch in by_prompt] == [[3, 0, 2], [1, 4, 5]]  # shortest prompts first
    by_row = micro_batches(rows, contexts, candidates, 2, by_prompt=False)
    assert [batch.tolist() for batch in by_row] == [[5, 0], [1, 2], [3, 4]]


def _rollout_update(path, prefix_sharing: bool) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """One PPO update (2 epochs of 2 minibatches, micro-batches of 2 prompts) on rows whose prompts repeat,
    as a rollout's do."""
    config = _config(prefix_sharing=prefix_sharing, scoring="logprob")
    contexts = [CONTEXTS[i] for i in (0, 1, 2, 3, 0, 4, 1, 0, 3, 2)]
    count = len(contexts)
    rng = np.random.default_rng(0)
    with Caller(llm_spec(config, str(path)), PPOUpdater(ppo_settings(config), micro_batch=2)) as caller:
        (result,) = caller.update(
            contexts,
            [COMMANDS] * count,
            actions=rng.integers(0, 6, count).tolist(),
            logprobs=(-1.8 + 0.1 * rng.normal(size=count)).tolist(),
            values=rng.normal(size=count).tolist(),
            advantages=rng.normal(size=count).tolist(),
            returns=rng.normal(size=count).tolist(),
            minibatches=2,
            seed=1,
        )
        return result, caller.trainable_state()


def test_the_ppo_update_is_the_same_with_and_without_prefix_sharing(tiny_llama):
    shared, shared_state = _rollout_update(tiny_llama, True)
    full, full_state = _rollout_update(tiny_llama, False)
    assert shared.keys() == full.keys()
    np.testing.assert_allclose([shared[k] for k in full], list(full.values()), **TOLERANCE)
    for name, value in full_state.items():
        np.testing.assert_allclose(shared_state[name].numpy(), value.numpy(), **TOLERANCE, err_msg=name)
    with Caller(llm_spec(_config(), str(tiny_llama))) as untrained:
        before = untrained.trainable_state()
    assert any(not torch.equal(before[k], full_state[k]) for k in before if k.startswith("model."))
