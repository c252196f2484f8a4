"""ELLM's replay as the original's (golden ``ellm_replay.json``, from its ``ReplayBuffer`` run unchanged on a
scripted stream): each (episode, start) pair's clipped n-step return, discount, action and next observation;
the draw, a finished episode uniformly and then a start among its first ``len - n + 1`` steps (a chi-square
test over many draws, our RNG not being the original's); whole episodes evicted, oldest first. The replay with
its frames and texts in tensors (``storage``, as ``replay_on_device`` keeps them) draws the same batches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from textagents.methods.core.config import ConfigError
from textagents.methods.ellm.dqn import NStepReplay

GOLDEN = json.loads((Path(__file__).parent / "golden" / "ellm_replay.json").read_text())
RUN = GOLDEN["run"]
#: chi-square's 0.999 quantile for 17 degrees of freedom (the 18 pairs of the stream less one)
CHI2_17_999 = 40.79


def _transitions(running: int = 0):
    """The golden stream: frame ``20 * episode + step``, action ``(step + 1) % 5`` as the original's storage
    got them, the last step of each episode terminal; then ``running`` steps of an episode that has not ended."""
    for episode, rewards in enumerate([*RUN["episodes"], [0.0] * running]):
        for step, reward in enumerate(rewards):
            ends = episode < len(RUN["episodes"]) and step == len(rewards) - 1
            yield [20 * episode + step], [0], (step + 1) % 5, reward, [20 * episode + step + 1], [0], ends, False


def _stream(
    size: int, sampling: str = "episode", clip_reward: bool = True, running: int = 0, storage: str | None = None
) -> NStepReplay:
    """The golden stream in our replay."""
    replay = NStepReplay(size, 1, (1,), sampling=sampling, clip_reward=clip_reward, storage=storage)
    for transition in _transitions(running):
        replay.add(*transition)
    return replay


def _pairs(replay: NStepReplay, draws: int, seed: int) -> dict[tuple[int, int], int]:
    """How often each (episode, start) was drawn, in batches of 64 as the agent draws."""
    rng = np.random.default_rng(seed)
    counts: dict[tuple[int, int], int] = {}
    for _ in range(draws // 64):
        batch = replay.batch(replay.sample(64, RUN["nstep"], RUN["discount"], rng))
        for frame in batch["frames"].flatten().tolist():
            pair = divmod(frame, 20)
            counts[pair] = counts.get(pair, 0) + 1
    return counts


def _expected() -> dict[tuple[int, int], float]:
    """The original's draw: an episode uniformly, then a start among its first ``max(1, len - n + 1)``."""
    episodes = RUN["episodes"]
    return {
        (e, s): 1 / len(episodes) / max(1, len(r) - RUN["nstep"] + 1)
        for e, r in enumerate(episodes)
        for s in range(max(1, len(r) - RUN["nstep"] + 1))
    }


def _chi_square(counts: dict[tuple[int, int], int], expected: dict[tuple[int, int], float]) -> float:
    total = sum(counts.values())
    return sum((counts.get(pair, 0) - total * p) ** 2 / (total * p) for pair, p in expected.items())


@pytest.mark.parametrize("storage", [None, "cpu"])
def test_each_samples_return_discount_and_next_observation_are_the_originals(storage):
    replay = _stream(size=100, storage=storage)
    starts = np.cumsum([0] + [len(r) for r in RUN["episodes"]])
    samples = GOLDEN["samples"]
    indices = np.array([starts[c["episode"]] + c["start"] for c in samples])
    batch = replay.batch(replay.gather(indices, RUN["nstep"], RUN["discount"]))
    assert (batch["frames"].flatten().numpy() == [20 * c["episode"] + c["start"] for c in samples]).all()
    assert batch["actions"].tolist() == [c["action"] for c in samples]
    # the original sums in float16 (its reward spec): equal to its rounding
    np.testing.assert_allclose(batch["returns"].numpy(), [c["reward"] for c in samples], rtol=0, atol=2e-3)
    np.testing.assert_allclose(batch["discounts"].numpy(), [c["discount"] for c in samples], rtol=1e-6)
    # where the discount is 0 the original's next observation is its episode's next-to-last one, never used
    bootstrapped = [i for i, c in enumerate(samples) if c["discount"] > 0]
    next_steps = batch["next_frames"].flatten().numpy() % 20
    assert next_steps[bootstrapped].tolist() == [samples[i]["next_step"] for i in bootstrapped]


def test_rewards_are_clipped_before_they_are_discounted_and_summed_unless_turned_off():
    replay = _stream(size=100, clip_reward=False)
    batch = replay.gather(np.array([0, 3]), RUN["nstep"], RUN["discount"])  # episode 0 from 0, episode 2 from 0
    np.testing.assert_allclose(batch["returns"].numpy(), [0.5 + 0.99 * 2.0, 0.25 - 0.99 * 3.0 + 0.9801 * 0.5])


def test_the_original_draws_episodes_uniformly_then_starts_uniformly():
    expected = _expected()
    drawn = {(c["episode"], c["start"]): c["count"] for c in GOLDEN["samples"]}
    assert drawn.keys() == expected.keys()
    assert _chi_square(drawn, expected) < CHI2_17_999


def test_ours_draws_as_the_original_and_never_from_the_running_episode():
    expected = _expected()
    counts = _pairs(_stream(size=100, running=6), draws=RUN["draws"], seed=RUN["seed"])
    assert counts.keys() == expected.keys()  # no start in an episode's last n - 1 steps, none in the running one
    assert _chi_square(counts, expected) < CHI2_17_999


@pytest.mark.parametrize("draw_every", [1, 5, 100])
def test_a_replay_kept_in_tensors_draws_the_same_batches(draw_every):
    """Drawn as the stream goes on (blocks copied at draws, whole ones, and ones wrapping the ring's end)."""
    host, tensors = NStepReplay(13, 1, (1,)), NStepReplay(13, 1, (1,), storage="cpu")
    stream = list(_transitions(running=3))
    for count, transition in enumerate(stream, start=1):
        host.add(*transition)
        tensors.add(*transition)
        if (count % draw_every and count < len(stream)) or not host.ready():
            continue
        drawn = tensors.sample(8, RUN["nstep"], RUN["discount"], np.random.default_rng(count))
        assert set(drawn) == {"packed"}  # where the samples are, their actions, returns, discounts: no frames
        expected = host.sample(8, RUN["nstep"], RUN["discount"], np.random.default_rng(count))
        batch = tensors.batch(drawn)
        for name, value in expected.items():
            torch.testing.assert_close(batch[name], value, rtol=0, atol=0, msg=name)


def test_a_replay_that_does_not_fit_on_the_gpu_is_refused_before_it_is_allocated(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (2**30, 2**31))
    with pytest.raises(ConfigError, match=r"replay_on_device: .* needs 2.2 GiB on cuda, which has 1.0 GiB free"):
        NStepReplay(40_000, 384, (84, 84, 4), storage="cuda")


def test_transition_sampling_is_the_option_that_draws_every_transition():
    counts = _pairs(_stream(size=100, sampling="transition"), draws=6400, seed=0)
    assert len(counts) == sum(len(r) for r in RUN["episodes"])
    assert _chi_square(counts, _expected()) > 10 * CHI2_17_999


def test_whole_episodes_leave_oldest_first_as_the_originals_capacity():
    replay = NStepReplay(RUN["capacity"], text_size=1, frame_shape=(1,))
    held = []
    for episode, rewards in enumerate(RUN["episodes"]):
        for step, reward in enumerate(rewards):
            replay.add([20 * episode + step], [0], 0, reward, [0], [0], step == len(rewards) - 1, False)
        starts, lengths = replay.episodes()
        episodes = [int(replay.frames[s, 0]) // 20 for s in starts]
        assert lengths.tolist() == [len(RUN["episodes"][e]) for e in episodes]
        held.append(episodes)
    assert held == GOLDEN["capacity"]


def test_an_episode_longer_than_the_replay_is_never_drawn():
    replay = NStepReplay(4, text_size=1, frame_shape=(1,))
    for step in range(6):
        replay.add([step], [0], 0, 1.0, [0], [0], step == 5, False)
    assert not replay.ready()
    with pytest.raises(ValueError, match="no episode to sample yet"):
        replay.sample(2, 3, 0.99, np.random.default_rng(0))


def test_a_bad_sampling_name_is_refused():
    with pytest.raises(ValueError, match=r"sampling must be one of \['episode', 'transition'\], got 'uniform'"):
        NStepReplay(4, 1, (1,), sampling="uniform")
