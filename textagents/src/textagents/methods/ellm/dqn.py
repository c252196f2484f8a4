"""ELLM's agent: DQN with Double-DQN targets, dueling heads and n-step returns on pixels and, when the method
gives one, a text vector (the caption's sentence embedding, the goal string's, or the joint embedding of the
two, ``joint.py``).

Stable-Baselines3's DQN has n-step returns but only for flat observations, and neither Double targets nor
dueling heads; this is the small part written here: a replay of uint8 frames and float16 embeddings with
n-step returns computed at sampling time (never across an episode's end), drawn as the original's (an
episode, then a start in it), and the update.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from textagents.methods.core.config import ConfigError
from textagents.methods.core.optimizer_state import load_optimizer_tensors
from textagents.methods.ellm.config import REPLAY_SAMPLINGS, ReplaySampling, TargetNetwork


@dataclass(frozen=True)
class DQNSettings:
    """The original's ``config.yaml``: lr 6.25e-5, 3-step returns, batch 64, replay 5M, learning from frame
    5,000, an update every 4 frames, the target's heads copied every 8,000 (its encoder shared with the online
    network, ``target_network``), ε 1 → 0.01 over 1M frames, Adam's default eps (1e-8), no gradient
    clipping (``max_grad_norm=None``), episodes drawn from the replay before a start in each
    (``replay_sampling``) and rewards clipped to [-1, 1] (``clip_reward``). ``cuda_graphs`` (ours, off by
    default): on CUDA, the update and greedy acting replay captured CUDA graphs (``CapturedStep``): the same
    arithmetic without Python's per-kernel launch cost; nothing changes on the CPU. ``replay_on_device`` (ours,
    off by default): the replay keeps its frames and texts on the agent's device, and an update gathers its
    batch there (inside the captured graph with ``cuda_graphs``): the same batches without copying them from
    host memory each update."""

    learning_rate: float = 6.25e-5
    gamma: float = 0.99
    n_steps: int = 3
    batch_size: int = 64
    buffer_size: int = 5_000_000
    learning_starts: int = 5_000
    train_every: int = 4
    target_update_every: int = 8_000
    epsilon_start: float = 1.0
    epsilon_end: float = 0.01
    epsilon_frames: int = 1_000_000
    adam_eps: float = 1e-8
    max_grad_norm: float | None = None
    target_network: TargetNetwork = "shared_encoder"
    replay_sampling: ReplaySampling = "episode"
    clip_reward: bool = True
    cuda_graphs: bool = False
    replay_on_device: bool = False


def _head(features: int, hidden: int, layers: int, out: int) -> nn.Sequential:
    """``layers`` hidden layers of ``hidden`` units with ReLUs, then ``out`` outputs."""
    sizes = [features] + [hidden] * layers
    parts: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        parts += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*parts, nn.Linear(sizes[-1], out))


def original_init(module: nn.Module, generator: torch.Generator | None = None) -> None:
    """The original's ``utils.weight_init`` (utils.py:62-71), for ``Module.apply``: orthogonal weights (a ReLU's
    gain for convolutions), zero biases; drawn from ``generator`` (default: torch's global one, as the original)."""
    if isinstance(module, nn.Linear | nn.Conv2d):
        gain = nn.init.calculate_gain("relu") if isinstance(module, nn.Conv2d) else 1.0
        with torch.no_grad():
            nn.init.orthogonal_(module.weight, gain, generator=generator)
            if module.bias is not None:
                module.bias.zero_()


def reinitialise_as_original(encoder: nn.Module, seed: int) -> None:
    """What the original's ``Critic.__init__`` (dqn.py:204) does to the sentence encoder inside the DQN: every
    ``nn.Linear`` re-initialised by ``original_init`` (embeddings and LayerNorms keep their pretrained values).
    The original drew from the global RNG between the network's own layers (and twice: the target critic,
    built on the same encoder, re-initialised it again); here a generator seeded with ``seed`` draws them."""
    generator = torch.Generator().manual_seed(seed)
    encoder.apply(lambda module: original_init(module, generator))


class DuelingQNetwork(nn.Module):
    """The original's ``Encoder`` and ``Critic`` (dqn.py:78-217): the frames' conv features, L2-normalised, to a
    linear of ``hidden``; the text vector, if ``text_size`` > 0, to a linear of ``hidden`` (the original's
    ``Linear(384, 512)`` over the sentence embedding); joined by a linear of ``hidden`` and a ReLU; dueling
    value/advantage heads of ``head_layers`` hidden layers of ``hidden`` units (the original's: 2 of 512);
    orthogonal initialisation. ``ENCODER`` names the encoder's parts, the rest are the heads."""

    ENCODER = ("conv", "image", "text", "mlp")

    def __init__(
        self,
        text_size: int,
        actions: int,
        hidden: int = 512,
        head_layers: int = 2,
        frame_shape: tuple[int, int, int] = (84, 84, 4),
    ):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(frame_shape[2], 32, 8, stride=4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            conv_size = self.conv(torch.zeros(1, frame_shape[2], *frame_shape[:2])).shape[-1]
        self.image = nn.Linear(conv_size, hidden)
        self.text = nn.Linear(text_size, hidden) if text_size else None
        self.mlp = nn.Sequential(nn.Linear((2 if text_size else 1) * hidden, hidden), nn.ReLU())
        self.value = _head(hidden, hidden, head_layers, 1)
        self.advantage = _head(hidden, hidden, head_layers, actions)
        self.apply(original_init)

    def encode(self, frames: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        pixels = frames.permute(0, 3, 1, 2).float() / 255.0
        parts = [self.image(nn.functional.normalize(self.conv(pixels), p=2, dim=1))]
        if self.text is not None:
            parts.append(self.text(texts.float()))
        return self.mlp(torch.cat(parts, dim=-1))

    def q_values(self, features: torch.Tensor) -> torch.Tensor:
        """The dueling heads on ``encode``'s features (the original's ``Critic.forward_encoded``)."""
        advantage = self.advantage(features)
        return self.value(features) + advantage - advantage.mean(-1, keepdim=True)

    def forward(self, frames: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        return self.q_values(self.encode(frames, texts))

    def share_encoder(self, other: DuelingQNetwork) -> None:
        """Use ``other``'s encoder modules (the same objects) in place of this network's own."""
        for name in self.ENCODER:
            setattr(self, name, getattr(other, name))

    def shares_encoder_with(self, other: DuelingQNetwork) -> bool:
        return self.conv is other.conv

    def own_state(self, other: DuelingQNetwork) -> dict[str, torch.Tensor]:
        """The state that is this network's own: all of it, less the encoder when it is ``other``'s."""
        shared = self.ENCODER if self.shares_encoder_with(other) else ()
        return {k: v for k, v in self.state_dict().items() if k.split(".")[0] not in shared}


class NStepReplay:
    """Transitions of one env in order, in a ring of ``size``; a sample's return sums up to ``n`` rewards of its
    own episode, each clipped to [-1, 1] first with ``clip_reward`` (the original's, replay_buffer.py:200-207).

    ``sampling`` ``episode``, the original's (replay_buffer.py:132-134, 186-188): a finished episode uniformly,
    then a start uniformly among its first ``max(1, len - n + 1)`` steps; the running episode is never drawn.
    An episode leaves the draw whole as soon as the ring overwrites its first transition, so the held episodes
    are the newest ones that fit, as the original's, which evicts whole episodes, oldest first, to keep its
    transitions within its size (replay_buffer.py:143-151); here the running episode takes its share of the
    ring. ``transition``: a transition uniformly, the running episode's included.

    ``storage``: where the frames and texts are kept: numpy arrays in host memory (``None``), or tensors on that
    device, where the transitions added are copied a block at a time (at the next draw, or every ``BLOCK``);
    then a draw is one small tensor (``packed``: where its samples are, their actions, returns and discounts)
    and ``batch`` gathers the rest there. Each copy from host memory to a GPU waits for the work queued there,
    hence as few as possible. The rest (actions, rewards, episode ends) stays in host memory either way."""

    #: transitions copied to a ``storage`` device together (one copy per array, not one per transition)
    BLOCK = 64

    def __init__(
        self,
        size: int,
        text_size: int,
        frame_shape: tuple[int, ...] = (64, 64, 3),
        sampling: ReplaySampling = "episode",
        clip_reward: bool = True,
        storage: torch.device | str | None = None,
    ):
        if sampling not in REPLAY_SAMPLINGS:
            raise ValueError(f"sampling must be one of {list(REPLAY_SAMPLINGS)}, got {sampling!r}")
        self.size, self.count, self.position = size, 0, 0
        self.sampling, self.clip_reward = sampling, clip_reward
        if storage is None:
            arrays = _transition_arrays(size, frame_shape, text_size)
            self.frames, self.texts, self.next_frames, self.next_texts = arrays
        else:
            storage = torch.device(storage)
            self._pending = _transition_arrays(min(self.BLOCK, size), frame_shape, text_size)
            _check_fits(storage, size * sum(pending[0].nbytes for pending in self._pending))
            self.frames, self.texts, self.next_frames, self.next_texts = (
                torch.zeros((size, *pending.shape[1:]), dtype=torch.from_numpy(pending).dtype, device=storage)
                for pending in self._pending
            )
            self._pending_from, self._pending_count = 0, 0
        self.storage = storage
        self.actions = np.zeros(size, np.int64)
        self.rewards = np.zeros(size, np.float32)
        self.ends = np.zeros(size, bool)  # the episode ended after this transition
        self.terminals = np.zeros(size, bool)  # ... by termination (no bootstrap), not by a time limit
        self.added = 0  # transitions ever added; the ring holds the last ``size`` of them
        self.episode_start = 0  # where the running episode began, counted as ``added``
        self.held: deque[tuple[int, int]] = deque()  # finished episodes in the ring: (start as ``added``, length)
        self._held_arrays: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, frame, text, action, reward, next_frame, next_text, terminated: bool, truncated: bool) -> None:
        i = self.position
        if self.storage is None:
            self.frames[i], self.texts[i], self.next_frames[i], self.next_texts[i] = frame, text, next_frame, next_text
        else:
            if self._pending_count == 0:
                self._pending_from = i
            row = self._pending_count
            for pending, value in zip(self._pending, (frame, text, next_frame, next_text), strict=True):
                pending[row] = value
            self._pending_count += 1
            if self._pending_count == len(self._pending[0]):
                self._flush()
        self.actions[i], self.rewards[i] = action, reward
        self.ends[i], self.terminals[i] = terminated or truncated, terminated
        self.position = (i + 1) % self.size
        self.count = min(self.count + 1, self.size)
        self.added += 1
        if self.ends[i]:
            self.held.append((self.episode_start, self.added - self.episode_start))
            self.episode_start = self.added
            self._held_arrays = None
        while self.held and self.held[0][0] < self.added - self.size:  # its first transition was overwritten
            self.held.popleft()
            self._held_arrays = None

    def ready(self) -> bool:
        """Whether there is something to draw: a finished episode (``episode``), a transition (``transition``)."""
        return bool(self.held) if self.sampling == "episode" else self.count > 0

    def episodes(self) -> tuple[np.ndarray, np.ndarray]:
        """The finished episodes held: their first transitions' ring positions and their lengths."""
        if self._held_arrays is None:
            starts, lengths = np.array(self.held, np.int64).reshape(-1, 2).T
            self._held_arrays = (starts % self.size, lengths)
        return self._held_arrays

    def sample(
        self, batch: int, n: int, gamma: float, rng: np.random.Generator, device: torch.device | str = "cpu"
    ) -> dict[str, torch.Tensor]:
        if not self.ready():
            raise ValueError(f"the replay has no {self.sampling} to sample yet")
        if self.sampling == "transition":
            return self.gather(rng.integers(0, self.count, size=batch), n, gamma, device)
        starts, lengths = self.episodes()
        chosen = rng.integers(0, len(starts), size=batch)
        offsets = rng.integers(0, np.maximum(1, lengths[chosen] - n + 1))
        return self.gather((starts[chosen] + offsets) % self.size, n, gamma, device)

    def gather(
        self, indices: np.ndarray, n: int, gamma: float, device: torch.device | str = "cpu"
    ) -> dict[str, torch.Tensor]:
        """The n-step samples starting at ``indices``, on ``device``: the sum stops at the episode's end or at
        the newest transition (bootstrapping from there with the discount reached). With ``storage``, one int64
        tensor on the storage's device, ``packed``: rows ``indices``, ``last`` (the transition whose next frame
        and text they bootstrap from) and the actions, then the returns and discounts as float64 bits (exact
        for float32 values); ``batch`` unpacks it and gathers the frames and texts."""
        last, returns, discounts = self._n_step(indices, n, gamma)
        actions = self.actions[indices]
        if self.storage is not None:
            self._flush()
            packed = np.empty((5, len(indices)), np.int64)
            packed[0], packed[1], packed[2] = indices, last, actions
            packed[3:].view(np.float64)[:] = returns, discounts
            return {"packed": torch.as_tensor(packed, device=self.storage)}
        arrays = {"actions": actions, "returns": returns, "discounts": discounts}
        arrays.update(frames=self.frames[indices], texts=self.texts[indices])
        arrays.update(next_frames=self.next_frames[last], next_texts=self.next_texts[last])
        return {name: torch.as_tensor(array, device=device) for name, array in arrays.items()}

    def batch(self, drawn: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``drawn`` as ``gather`` gave it, with its frames and texts: unpacked and gathered from the storage's
        tensors where it is ``packed``, as it is otherwise."""
        if "packed" not in drawn:
            return drawn
        packed = drawn["packed"]
        indices, last = packed[0], packed[1]
        returns, discounts = packed[3:].view(torch.float64).float()
        return {
            "frames": self.frames[indices],
            "texts": self.texts[indices],
            "actions": packed[2],
            "returns": returns,
            "discounts": discounts,
            "next_frames": self.next_frames[last],
            "next_texts": self.next_texts[last],
        }

    def _stored(self) -> tuple[torch.Tensor, ...]:
        return self.frames, self.texts, self.next_frames, self.next_texts

    def _flush(self) -> None:
        """Copy the transitions added since the last flush to the storage device (a block may wrap around the
        ring's end: then in two parts)."""
        count, start = self._pending_count, self._pending_from
        if count == 0:
            return
        first = min(count, self.size - start)
        for tensor, pending in zip(self._stored(), self._pending, strict=True):
            tensor[start : start + first].copy_(torch.from_numpy(pending[:first]))
            if count > first:
                tensor[: count - first].copy_(torch.from_numpy(pending[first:count]))
        self._pending_count = 0

    def _n_step(self, indices: np.ndarray, n: int, gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For samples starting at ``indices``: the transition each bootstraps from, its return and the
        discount of the bootstrap (zero after a termination)."""
        newest = (self.position - 1) % self.size
        batch = len(indices)
        returns = np.zeros(batch, np.float32)
        discounts = np.ones(batch, np.float32)
        last = indices.copy()
        alive = np.ones(batch, bool)
        for k in range(n):
            step = (indices + k) % self.size
            valid = alive & ((k == 0) | (step != (newest + 1) % self.size))
            rewards = np.clip(self.rewards[step], -1.0, 1.0) if self.clip_reward else self.rewards[step]
            returns += np.where(valid, discounts * rewards, 0.0)
            discounts = np.where(valid, discounts * gamma, discounts)
            last = np.where(valid, step, last)
            alive = valid & ~self.ends[step] & (step != newest)
        return last, returns, discounts * ~self.terminals[last]


def _transition_arrays(rows: int, frame_shape: tuple[int, ...], text_size: int) -> tuple[np.ndarray, ...]:
    """Zeroed frames (uint8), texts (float16), next frames and next texts of ``rows`` transitions, in host
    memory, in ``NStepReplay._stored``'s order."""
    kinds = ((frame_shape, np.uint8), ((text_size,), np.float16))
    return tuple(np.zeros((rows, *shape), dtype) for shape, dtype in kinds * 2)


def _check_fits(device: torch.device, size: int) -> None:
    """A one-line error (a config error: exit 2) where ``size`` bytes exceed ``device``'s free memory (CUDA;
    other devices are not checked)."""
    if device.type != "cuda":
        return
    free = torch.cuda.mem_get_info(device)[0]
    if size > free:
        raise ConfigError(
            f"replay_on_device: a replay of this buffer_size needs {size / 2**30:.1f} GiB on {device}, which has "
            f"{free / 2**30:.1f} GiB free; lower buffer_size or set replay_on_device: false"
        )


def pack_observation(frame: np.ndarray, text: np.ndarray) -> np.ndarray:
    """A frame's bytes (uint8), padded to a multiple of 4, then its text vector's as float32, in one row of
    ``uint8[1, n]``: one copy to the device where there were two (``unpack_observation`` splits it there)."""
    pixels = np.ascontiguousarray(frame, np.uint8).reshape(-1)
    vector = np.ascontiguousarray(text, np.float32).reshape(-1).view(np.uint8)
    return np.concatenate([pixels, np.zeros(-len(pixels) % 4, np.uint8), vector])[None]


def unpack_observation(packed: torch.Tensor, frame_shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """``pack_observation``'s frame (``uint8[1, *frame_shape]``) and text vector (``float32[1, n]``), as views."""
    size = int(np.prod(frame_shape))
    start = size + (-size % 4)
    return packed[:, :size].reshape(1, *frame_shape), packed[:, start:].view(torch.float32)


def double_dqn_loss(online: DuelingQNetwork, target: DuelingQNetwork, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Huber loss to R + γ^k Q_target(s', argmax_a Q_online(s', a)) (zero bootstrap after a termination), as
    the original's ``update_critic`` (dqn.py:322-334): the target side without gradients, s' encoded once when
    the target shares the online network's encoder."""
    q = online(batch["frames"], batch["texts"]).gather(1, batch["actions"].unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        features = online.encode(batch["next_frames"], batch["next_texts"])
        best = online.q_values(features).argmax(1, keepdim=True)
        if not target.shares_encoder_with(online):
            features = target.encode(batch["next_frames"], batch["next_texts"])
        next_q = target.q_values(features).gather(1, best).squeeze(1)
        goal = batch["returns"] + batch["discounts"] * next_q
    return nn.functional.smooth_l1_loss(q, goal)


class CapturedStep:
    """``step`` (a function of named tensors returning a tensor) replayed as a CUDA graph: its first ``warmup``
    calls run as they are on a side stream (the allocator and the optimizer's state settle), the next one
    captures it reading static copies of its inputs, and every later call copies its inputs in and replays the
    graph. The graph holds the tensors it was captured with, so weights and optimizer state may only change in
    place (``load_state_dict`` copies in place); after anything else, ``reset``. Inputs off CUDA, or with
    ``enabled`` false, run ``step`` as it is."""

    def __init__(self, step: Callable[[dict[str, torch.Tensor]], torch.Tensor], enabled: bool, warmup: int = 3):
        self.step, self.enabled, self.warmup = step, enabled, warmup
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.graph: torch.cuda.CUDAGraph | None = None
        self.inputs: dict[str, torch.Tensor] = {}
        self.output: torch.Tensor | None = None

    def __call__(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        if not self.enabled or next(iter(inputs.values())).device.type != "cuda":
            return self.step(inputs)
        if self.graph is None and self.calls < self.warmup:
            self.calls += 1
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                output = self.step(inputs)
            torch.cuda.current_stream().wait_stream(side)
            return output
        if self.graph is None:
            self.inputs = {name: value.clone() for name, value in inputs.items()}
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.output = self.step(self.inputs)
        for name, value in inputs.items():
            self.inputs[name].copy_(value, non_blocking=True)
        self.graph.replay()
        return self.output.clone()


class DQNAgent:
    """ε-greedy acting, replay, Double-DQN updates every ``train_every`` frames, target syncs every
    ``target_update_every`` frames (of the heads alone when the target shares the encoder). Losses stay on the
    device until ``losses`` is read (no synchronisation per update)."""

    def __init__(
        self,
        text_size: int,
        actions: int,
        settings: DQNSettings,
        seed: int = 0,
        frame_shape: tuple[int, int, int] = (84, 84, 4),
        hidden: int = 512,
        head_layers: int = 2,
        device: torch.device | str = "cpu",
    ):
        torch.manual_seed(seed)
        self.settings, self.actions, self.device = settings, actions, torch.device(device)
        self.frame_shape = frame_shape
        self.online = DuelingQNetwork(text_size, actions, hidden, head_layers, frame_shape).to(self.device)
        self.target = DuelingQNetwork(text_size, actions, hidden, head_layers, frame_shape).to(self.device)
        if settings.target_network == "shared_encoder":
            self.target.share_encoder(self.online)
        self.sync_target()
        graphs = settings.cuda_graphs and self.device.type == "cuda"
        self.optimizer = torch.optim.Adam(
            self.online.parameters(), lr=settings.learning_rate, eps=settings.adam_eps, capturable=graphs
        )
        self._update = CapturedStep(self._update_step, graphs)
        self._greedy = CapturedStep(self._greedy_step, graphs)
        self.replay = NStepReplay(
            settings.buffer_size,
            text_size,
            frame_shape,
            settings.replay_sampling,
            settings.clip_reward,
            storage=self.device if settings.replay_on_device else None,
        )
        self.rng = np.random.default_rng(seed)
        self.frames = 0
        self._losses: list[float] = []
        self._pending_losses: list[torch.Tensor] = []

    @property
    def losses(self) -> list[float]:
        """Every update's loss, in order."""
        if self._pending_losses:
            self._losses += torch.stack(self._pending_losses).tolist()
            self._pending_losses = []
        return self._losses

    def epsilon(self) -> float:
        s = self.settings
        fraction = min(1.0, self.frames / max(1, s.epsilon_frames))
        return s.epsilon_start + fraction * (s.epsilon_end - s.epsilon_start)

    def act(self, frame: np.ndarray, text: np.ndarray, epsilon: float | None = None) -> int:
        if self.rng.random() < (self.epsilon() if epsilon is None else epsilon):
            return int(self.rng.integers(self.actions))
        packed = torch.as_tensor(pack_observation(frame, text), device=self.device)  # one copy, not two
        return int(self._greedy({"observation": packed}))

    def _greedy_step(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            return self.online(*unpack_observation(inputs["observation"], self.frame_shape)).argmax(1)

    def observe(self, *transition: Any) -> None:
        """Store a transition (frame, text, action, reward, next frame, next text, terminated, truncated)
        and learn when it is time and the replay has something to draw (with ``episode`` sampling, a finished
        episode: the original would fail to draw before one)."""
        self.replay.add(*transition)
        self.frames += 1
        s = self.settings
        if self.frames >= s.learning_starts and self.frames % s.train_every == 0 and self.replay.ready():
            self.learn(self.replay.sample(s.batch_size, s.n_steps, s.gamma, self.rng, self.device))
        if self.frames % s.target_update_every == 0:
            self.sync_target()

    def learn(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """One Adam step of the online network on ``batch``'s loss, which is returned (a 0-d tensor on the
        device); ``batch`` as the replay draws it (``NStepReplay.gather``)."""
        loss = self._update(batch)
        self._pending_losses.append(loss)
        return loss

    def _update_step(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        loss = double_dqn_loss(self.online, self.target, self.replay.batch(batch))
        self.optimizer.zero_grad()
        loss.backward()
        if self.settings.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(self.online.parameters(), self.settings.max_grad_norm)
        self.optimizer.step()
        return loss.detach()

    def sync_target(self) -> None:
        """Copy the online network's weights into the target's own (all of them, or the heads alone)."""
        self.target.load_state_dict(self.target_state(self.online.state_dict()), strict=False)

    def target_state(self, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The entries of ``state`` that the target keeps its own copy of; an error if one is missing."""
        own = self.target.own_state(self.online)
        missing = sorted(own.keys() - state.keys())
        if missing:
            raise ValueError(f"the target network's state lacks {missing[:3]} ({len(missing)} entries)")
        return {k: state[k] for k in own}

    def tensors(self) -> dict[str, torch.Tensor]:
        state = {f"online.{k}": v.detach().clone() for k, v in self.online.state_dict().items()}
        state.update({f"target.{k}": v.detach().clone() for k, v in self.target.own_state(self.online).items()})
        return state

    def load_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        self.online.load_state_dict({k[7:]: v for k, v in tensors.items() if k.startswith("online.")})
        target = {k[7:]: v for k, v in tensors.items() if k.startswith("target.")}
        self.target.load_state_dict(self.target_state(target), strict=False)

    def load_optimizer(self, tensors: dict[str, torch.Tensor], prefix: str) -> None:
        """Adam's state from ``optimizer_tensors``'s entries under ``prefix`` (new state tensors: the update's
        graph is captured again)."""
        load_optimizer_tensors(self.optimizer, tensors, prefix)
        self._update.reset()
