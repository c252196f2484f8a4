"""ELLM's DQN with ``cuda_graphs``: the captured update and greedy acting give what the plain code gives (the
same actions, losses and weights over a run with target syncs and a restore from a checkpoint). On the CPU the
option changes nothing; the CUDA comparison runs where there is a GPU (``benchmarks/gpu/check.sh`` runs it)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from textagents.methods.core.optimizer_state import optimizer_tensors
from textagents.methods.ellm.dqn import DQNAgent, DQNSettings

SHAPE, TEXT, ACTIONS = (36, 36, 2), 6, 5


def _settings(cuda_graphs: bool) -> DQNSettings:
    return DQNSettings(
        batch_size=8, buffer_size=256, learning_starts=16, train_every=2, target_update_every=20,
        epsilon_frames=100, cuda_graphs=cuda_graphs,
    )  # fmt: skip


def _agent(cuda_graphs: bool, device: str) -> DQNAgent:
    return DQNAgent(TEXT, ACTIONS, _settings(cuda_graphs), seed=3, frame_shape=SHAPE, hidden=16, device=device)


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


def _restored(agent: DQNAgent, cuda_graphs: bool, device: str) -> DQNAgent:
    """A new agent from ``agent``'s networks and Adam state, as a checkpoint restores one (replay and RNG too)."""
    copy = _agent(cuda_graphs, device)
    copy.load_tensors(agent.tensors())
    copy.load_optimizer(optimizer_tensors(agent.optimizer, prefix="adam."), prefix="adam.")
    copy.replay, copy.rng, copy.frames = agent.replay, agent.rng, agent.frames
    return copy


def _compare(device: str, atol: float) -> None:
    plain, graphed = _agent(False, device), _agent(True, device)
    assert _play(plain, 120) == _play(graphed, 120)
    np.testing.assert_allclose(graphed.losses, plain.losses, rtol=1e-4, atol=atol)
    assert len(plain.losses) == (120 - 16) // 2 + 1
    plain, graphed = _restored(plain, False, device), _restored(graphed, True, device)
    assert _play(plain, 60, start=120) == _play(graphed, 60, start=120)
    np.testing.assert_allclose(graphed.losses[-30:], plain.losses[-30:], rtol=1e-4, atol=atol)
    for name, value in plain.tensors().items():
        torch.testing.assert_close(graphed.tensors()[name], value, rtol=1e-4, atol=atol, msg=name)


def test_on_the_cpu_the_option_changes_nothing():
    _compare("cpu", atol=0.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_the_captured_update_and_acting_match_the_plain_ones():
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    agent = _agent(True, "cuda")
    _play(agent, 40)
    assert agent._update.graph is not None and agent._greedy.graph is not None  # captured and replayed
    _compare("cuda", atol=1e-5)
