"""ELLM's DQN with its speed options, ``cuda_graphs`` (the captured update and greedy acting) and
``replay_on_device`` (the batch gathered on the device, inside the captured update with both): each gives what
the plain code gives (the same actions, losses and weights over a run with target syncs and a restore from a
checkpoint). On the CPU they change nothing; the CUDA comparisons run where there is a GPU
(``benchmarks/gpu/check.sh`` runs them)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from textagents.methods.core.optimizer_state import optimizer_tensors
from textagents.methods.ellm.dqn import DQNAgent, DQNSettings, pack_observation, unpack_observation

SHAPE, TEXT, ACTIONS = (36, 36, 2), 6, 5


OPTIONS = {
    "cuda_graphs": {"cuda_graphs": True},
    "replay_on_device": {"replay_on_device": True},
    "both": {"cuda_graphs": True, "replay_on_device": True},
}


def _agent(device: str, **options: bool) -> DQNAgent:
    settings = DQNSettings(
        batch_size=8, buffer_size=256, learning_starts=16, train_every=2, target_update_every=20,
        epsilon_frames=100, **options,
    )  # fmt: skip
    return DQNAgent(TEXT, ACTIONS, settings, seed=3, frame_shape=SHAPE, hidden=16, device=device)


def _play(agent: DQNAgent, frames: int, start: int = 0) -> list[int]:
    """``frames`` transitions of a fixed synthetic stream (episodes of 7 steps), acting greedily on every
    third: the actions taken."""
    actions = []
    for t in range(start, start + frames):
        rng = np.random.default_rng(t)
        frame, next_frame = rng.integers(0, 255, (2, *SHAPE), dtype=np.uint8)
        text, next_text = rng.normal(size=(2, TEXT)).astype(np.float32)
        action = agent.act(frame, text, epsilon=0.0) if t % 3 == 0 else int(rng.integers(ACTIONS))
        actions.append(action)
        agent.observe(frame, text, action, float(rng.normal()), next_frame, next_text, t % 7 == 6, False)
    return actions


def _restored(agent: DQNAgent, device: str, **options: bool) -> DQNAgent:
    """A new agent from ``agent``'s networks and Adam state, as a checkpoint restores one (replay and RNG too)."""
    copy = _agent(device, **options)
    copy.load_tensors(agent.tensors())
    copy.load_optimizer(optimizer_tensors(agent.optimizer, prefix="adam."), prefix="adam.")
    copy.replay, copy.rng, copy.frames = agent.replay, agent.rng, agent.frames
    return copy


def _compare(device: str, atol: float, **options: bool) -> None:
    plain, fast = _agent(device), _agent(device, **options)
    assert _play(plain, 120) == _play(fast, 120)
    np.testing.assert_allclose(fast.losses, plain.losses, rtol=1e-4, atol=atol)
    assert len(plain.losses) == (120 - 16) // 2 + 1
    plain, fast = _restored(plain, device), _restored(fast, device, **options)
    assert _play(plain, 60, start=120) == _play(fast, 60, start=120)
    np.testing.assert_allclose(fast.losses[-30:], plain.losses[-30:], rtol=1e-4, atol=atol)
    for name, value in plain.tensors().items():
        torch.testing.assert_close(fast.tensors()[name], value, rtol=1e-4, atol=atol, msg=name)


@pytest.mark.parametrize("options", OPTIONS)
def test_on_the_cpu_the_options_change_nothing(options):
    _compare("cpu", atol=0.0, **OPTIONS[options])


def test_the_replay_on_the_device_keeps_frames_and_texts_in_tensors_there():
    replay = _agent("cpu", replay_on_device=True).replay
    assert isinstance(replay.frames, torch.Tensor) and replay.storage == torch.device("cpu")
    assert isinstance(_agent("cpu").replay.frames, np.ndarray)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("options", OPTIONS)
def test_on_cuda_the_options_match_the_plain_code(options):
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    agent = _agent("cuda", **OPTIONS[options])
    _play(agent, 40)
    if agent.settings.cuda_graphs:
        assert agent._update.graph is not None and agent._greedy.graph is not None  # captured and replayed
    if agent.settings.replay_on_device:
        assert agent.replay.frames.device.type == "cuda"
    _compare("cuda", atol=1e-5, **OPTIONS[options])


@pytest.mark.parametrize("frame_shape, text_size", [((36, 36, 2), 6), ((5, 3, 1), 4), ((84, 84, 4), 0)])
def test_a_packed_observation_unpacks_to_its_frame_and_text(frame_shape, text_size):
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, frame_shape, dtype=np.uint8)
    text = rng.normal(size=text_size).astype(np.float32)
    frames, texts = unpack_observation(torch.as_tensor(pack_observation(frame, text)), frame_shape)
    assert torch.equal(frames, torch.as_tensor(frame[None])) and torch.equal(texts, torch.as_tensor(text[None]))
