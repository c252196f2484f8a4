"""DRRN (He et al. 2016) as GLAM compared it: Q(s, a) from a GRU encoding of the observation (goal and
descriptions) and one of the command, through an MLP; Boltzmann exploration over the admissible commands;
one-step TD (Huber) from a replay buffer, as Jericho's DRRN agent does."""

from __future__ import annotations

import re
from collections import deque
from typing import Any

import numpy as np
import torch
from torch import nn

from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.episodes import Episodes
from textagents.methods.glam.learner import Learner, episode_stats

VOCABULARY = 512  # word ids, 0 = padding, 1 = a word first seen after the table filled up
_WORDS = re.compile(r"[a-z]+")


class WordIds:
    """Words to ids in order of first sight (kept in checkpoints, so ids never move)."""

    def __init__(self, words: list[str] | None = None):
        self.words = list(words or [])
        self.index = {w: i + 2 for i, w in enumerate(self.words)}

    def __call__(self, text: str) -> list[int]:
        ids = []
        for word in _WORDS.findall(text.lower()):
            if word not in self.index and len(self.index) < VOCABULARY - 2:
                self.index[word] = len(self.index) + 2
                self.words.append(word)
            ids.append(self.index.get(word, 1))
        return ids or [1]


class DRRN(nn.Module):
    def __init__(self, hidden: int = 128):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, hidden, padding_idx=0)
        self.state_encoder = nn.GRU(hidden, hidden, batch_first=True)
        self.action_encoder = nn.GRU(hidden, hidden, batch_first=True)
        self.q = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def encode(self, encoder: nn.GRU, sequences: list[list[int]]) -> torch.Tensor:
        lengths = torch.tensor([len(s) for s in sequences])  # pack_padded_sequence wants them on the CPU
        padded = torch.zeros((len(sequences), int(lengths.max())), dtype=torch.long)
        for row, ids in enumerate(sequences):
            padded[row, : len(ids)] = torch.tensor(ids)
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embedding(padded.to(self.embedding.weight.device)), lengths, batch_first=True, enforce_sorted=False
        )
        return encoder(packed)[1][-1]

    def forward(self, states: list[list[int]], actions: list[list[list[int]]]) -> list[torch.Tensor]:
        """Per state, the Q-values of its commands."""
        encoded_states = self.encode(self.state_encoder, states)
        flat = [a for options in actions for a in options]
        encoded_actions = self.encode(self.action_encoder, flat)
        counts = torch.tensor([len(o) for o in actions], device=encoded_states.device)
        rows = torch.repeat_interleave(torch.arange(len(states), device=encoded_states.device), counts)
        q = self.q(torch.cat([encoded_states[rows], encoded_actions], dim=-1)).squeeze(-1)
        return list(torch.split(q, [len(o) for o in actions]))


def _state_text(episodes: Episodes, index: int) -> str:
    info = episodes.infos[index]
    return " ".join(info.get("descriptions", [])) + " goal " + episodes.missions[index]


class DRRNLearner(Learner):
    def __init__(self, config: GlamConfig):
        super().__init__(config)
        torch.manual_seed(config.seed)
        self.device = config.torch_device()
        self.net = DRRN(config.drrn_hidden).to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.baseline_learning_rate)
        self.words = WordIds()
        self.replay: deque[tuple] = deque(maxlen=config.replay_capacity)
        self.train = Episodes(
            config.env_id, config.envs, config.max_steps, config.seed * 1_000_003, config.prompt_observations
        )
        self.rng = np.random.default_rng(config.seed)

    def _encoded(self, episodes: Episodes, index: int) -> tuple[list[int], list[list[int]]]:
        commands = episodes.infos[index]["admissible_commands"]
        return self.words(_state_text(episodes, index)), [self.words(c) for c in commands]

    def _q(self, episodes: Episodes, indices: list[int]) -> list[np.ndarray]:
        encoded = [self._encoded(episodes, i) for i in indices]
        with torch.no_grad():
            q = self.net([s for s, _ in encoded], [a for _, a in encoded])
        return [row.cpu().numpy().astype(np.float64) for row in q]

    def choose(self, episodes: Episodes, indices: list[int], rng: np.random.Generator, greedy: bool) -> list[int]:
        choices = []
        for q in self._q(episodes, indices):
            if greedy:
                choices.append(int(np.argmax(q)))
            else:
                p = np.exp(q - q.max())
                choices.append(int(rng.choice(len(q), p=p / p.sum())))
        return choices

    def train_frames(self, iteration: int) -> dict[str, float]:
        finished: list[tuple[float, bool]] = []
        everyone = list(range(self.config.envs))
        for _ in range(self.config.frames_per_env):
            before = [self._encoded(self.train, i) for i in everyone]
            for index, action in zip(everyone, self.choose(self.train, everyone, self.rng, False), strict=True):
                episode_return = self.train.returns[index]
                reward, done, success = self.train.step(index, action)
                after = self._encoded(self.train, index)
                self.replay.append((*before[index], action, reward, *after, done))
                if done:
                    finished.append((episode_return + reward, success))
        losses = [self._update() for _ in range(self.config.drrn_updates)] if len(self.replay) else []
        self.frames += self.config.envs * self.config.frames_per_env
        self.episodes += len(finished)
        return {
            "frames": self.frames,
            "episodes": self.episodes,
            **episode_stats(finished),
            "loss": float(np.mean(losses)) if losses else float("nan"),
        }

    def _update(self) -> float:
        picks = self.rng.integers(0, len(self.replay), size=min(self.config.minibatch_size, len(self.replay)))
        batch = [self.replay[i] for i in picks]
        states, actions, chosen, rewards, next_states, next_actions, dones = zip(*batch, strict=True)
        q = torch.stack([row[a] for row, a in zip(self.net(list(states), list(actions)), chosen, strict=True)])
        with torch.no_grad():
            best = torch.stack([row.max() for row in self.net(list(next_states), list(next_actions))])
        alive = 1.0 - torch.tensor(dones, dtype=torch.float32, device=self.device)
        target = torch.tensor(rewards, dtype=torch.float32, device=self.device) + self.config.gamma * alive * best
        loss = nn.functional.smooth_l1_loss(q, target)
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.net.parameters(), 5.0)
        self.optimizer.step()
        return float(loss.detach())

    def state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        # The replay buffer is not kept (it would be most of the checkpoint): a resumed run refills it, so
        # it is not bit-exact, unlike the LLM learners.
        state = {
            "frames": self.frames,
            "episodes": self.episodes,
            "rng": self.rng.bit_generator.state,
            "envs": self.train.state(),
            "words": self.words.words,
        }
        return state, {f"net.{k}": v.detach().clone() for k, v in self.net.state_dict().items()}

    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        self.net.load_state_dict({k[len("net.") :]: v for k, v in tensors.items()})  # copied onto the net's device
        self.frames, self.episodes = int(state["frames"]), int(state["episodes"])
        self.rng.bit_generator.state = state["rng"]
        self.words = WordIds(state["words"])
        self.train.restore(state["envs"])

    def close(self) -> None:
        self.train.close()
