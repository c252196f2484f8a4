"""``CrafterTextVectorEnv``: N Crafter-Text games stepped by one ``CrafterBatch`` call (a Gymnasium ``VectorEnv``)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from textenvs.core.commands import CommandVocabulary
from textenvs.core.spaces import ACTION_MODES, check_choice, text_space
from textenvs.core.text_env import MISSION_MAX_LENGTH
from textenvs.core.vector import autoreset_choice, restart_in_same_step
from textenvs.envs.crafter_text.batched import CrafterBatch
from textenvs.envs.crafter_text.captioner import CAPTION_STYLES, balrog_contexts, caption
from textenvs.envs.crafter_text.constants import (
    ACHIEVEMENTS,
    COMMAND_ALIASES,
    COMMANDS,
    CRAFTER_ACTIONS,
    INVENTORY_ITEMS,
)
from textenvs.envs.crafter_text.env import TEXT_MAX_LENGTH, episode_seeds
from textenvs.envs.crafter_text.metrics import episode_metrics
from textenvs.envs.crafter_text.tasks import FULL_GAME_MISSION


class CrafterTextVectorEnv(VectorEnv):
    """``num_envs`` Crafter-Text games (the full game) stepped together; each behaves exactly as one
    ``CrafterTextEnv`` seeded the way ``SyncVectorEnv`` seeds it (``seed + i``): the same worlds, captions,
    rewards and episode ends. ``autoreset_mode`` as Gymnasium's ``SyncVectorEnv``: ``NEXT_STEP`` (the default:
    the step after an episode's end starts the next, ignoring its action) or ``SAME_STEP`` (the ending step
    returns the next episode's first observation and puts the last one in ``final_obs`` and its info in
    ``final_info``, each with its ``_final_obs`` / ``_final_info`` mask: the form SB3 trains on).

    Observations batch the single env's text mode: ``text`` and ``mission`` tuples of strings. Actions are
    ``Discrete(17)`` indices (``action_mode="discrete"``) or commands (``"text"``: an unknown command is a
    no-op step with ``invalid_action``). Infos are arrays over the envs: ``achievements`` int64[n, 22] and
    ``inventory`` int64[n, 16] in crafter's orders (``ACHIEVEMENTS``, ``INVENTORY_ITEMS``), ``player_pos``
    int64[n, 2], ``sleeping``, ``invalid_action``, ``success`` bool[n], ``progression`` float64[n]; with
    ``caption_style="balrog"`` also ``long_term_context`` and ``short_term_context``; on an episode's last
    step ``episode_metrics`` with its ``_episode_metrics`` mask. Pixels are not batched: use
    ``make_vec(..., vectorization_mode="sync")`` for them, or step a ``CrafterBatch`` directly for raw speed.
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["ansi"]}

    def __init__(
        self,
        num_envs: int,
        caption_style: str = "smartplay",
        length: int = 10000,
        obs_mode: str = "text",
        action_mode: str = "text",
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ):
        if obs_mode != "text":
            raise ValueError(
                f"obs_mode={obs_mode!r} is not batched; CrafterTextVectorEnv gives 'text' "
                "(pixels: make_vec(..., vectorization_mode='sync'))"
            )
        self.caption_style = check_choice("caption_style", caption_style, CAPTION_STYLES)
        self.action_mode = check_choice("action_mode", action_mode, ACTION_MODES)
        if render_mode is not None:
            check_choice("render_mode", render_mode, tuple(self.metadata["render_modes"]))
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_choice(autoreset_mode)}
        self.num_envs = num_envs
        self.batch = CrafterBatch(num_envs, length=length)
        self.length = self.batch.length
        self.vocabulary = CommandVocabulary(COMMANDS, COMMAND_ALIASES)
        self.single_observation_space = spaces.Dict(
            {"mission": text_space(MISSION_MAX_LENGTH), "text": text_space(TEXT_MAX_LENGTH)}
        )
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.single_action_space = (
            spaces.Discrete(len(COMMANDS)) if action_mode == "discrete" else text_space(TEXT_MAX_LENGTH)
        )
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._rngs = [seeding.np_random(None)[0] for _ in range(num_envs)]
        self._last_action: list[str | None] = [None] * num_envs
        self._returns = np.zeros(num_envs)
        self._autoreset = np.zeros(num_envs, bool)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if options:
            raise ValueError(f"reset options {sorted(options)} are not valid; Crafter-Text takes none")
        seeds = seed if isinstance(seed, list) else [None if seed is None else seed + i for i in range(self.num_envs)]
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds given for {self.num_envs} envs")
        self._rngs = [seeding.np_random(s)[0] for s in seeds]
        self._autoreset[:] = False
        return self._restart(np.arange(self.num_envs))

    def _new_worlds(self, rows: np.ndarray) -> None:
        """As ``CrafterTextEnv._reset_world``: each env's generator draws its world seed (and a noise seed)."""
        world_seeds = [episode_seeds(self._rngs[r])[0] for r in rows]
        self.batch.reset_worlds(rows, world_seeds)
        for r in rows:
            self._last_action[r] = None
        self._returns[rows] = 0.0

    def step(self, actions: Any) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        restarting = self._autoreset.copy()
        if restarting.any():
            self._new_worlds(np.flatnonzero(restarting))
        indices, invalid = self._decode(actions)
        invalid &= ~restarting
        rewards, dead = self.batch.step(indices, active=~restarting)
        terminated = dead & ~restarting
        truncated = ~terminated & ~restarting & (self.batch.steps >= self.length)
        for r in np.flatnonzero(~restarting):
            self._last_action[r] = CRAFTER_ACTIONS[indices[r]]
        self._returns += rewards
        ended = terminated | truncated
        semantic = self.batch.semantic()
        batch = self._observation(semantic), self._info(invalid, ended, semantic)
        if self.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP:
            self._autoreset = ended
        else:
            batch = restart_in_same_step(batch, ended, self._restart)
        return batch[0], rewards, terminated, truncated, batch[1]

    def _restart(self, rows: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        """New worlds for ``rows`` and every env's observation and info after (reset, ``SAME_STEP``)."""
        self._new_worlds(rows)
        semantic = self.batch.semantic()
        nothing = np.zeros(self.num_envs, bool)
        return self._observation(semantic), self._info(nothing, nothing, semantic)

    def _decode(self, actions: Any) -> tuple[np.ndarray, np.ndarray]:
        """Crafter action indices and which actions were invalid (played as a no-op, as a single env does)."""
        if self.action_mode == "discrete":
            indices = np.asarray(actions).reshape(self.num_envs)
            if not np.issubdtype(indices.dtype, np.integer):
                raise ValueError(f"actions {actions!r} are not valid; give {self.num_envs} integers in 0..16")
            invalid = (indices < 0) | (indices >= len(COMMANDS))
            return np.where(invalid, 0, indices).astype(np.int64), invalid
        commands = [self.vocabulary.parse(a) if isinstance(a, str) else None for a in actions]
        if len(commands) != self.num_envs:
            raise ValueError(f"{len(commands)} actions given for {self.num_envs} envs")
        invalid = np.array([c is None for c in commands])
        return np.array([COMMANDS.index(c) if c is not None else 0 for c in commands], np.int64), invalid

    # ----------------------------------------------------------------- views
    def game_state(self, r: int, semantic: np.ndarray) -> dict[str, Any]:
        """Env ``r``'s state as ``CrafterTextEnv.game_state`` gives it to the captioners."""
        batch = self.batch
        return {
            "semantic": semantic,
            "player_pos": batch.player_pos(r),
            "facing": (int(batch.facing[r, 0]), int(batch.facing[r, 1])),
            "inventory": dict(zip(INVENTORY_ITEMS, batch.inventory[r].tolist(), strict=True)),
            "sleeping": bool(batch.sleeping[r]),
            "action": self._last_action[r],
        }

    def _observation(self, semantic: np.ndarray) -> dict[str, Any]:
        return {"mission": (FULL_GAME_MISSION,) * self.num_envs, "text": self._texts(semantic)}

    def _texts(self, semantic: np.ndarray) -> tuple[str, ...]:
        return tuple(caption(self.game_state(r, semantic[r]), self.caption_style) for r in range(self.num_envs))

    def _info(self, invalid: np.ndarray, ended: np.ndarray, semantic: np.ndarray) -> dict[str, Any]:
        batch = self.batch
        unlocked = (batch.achievements > 0).sum(axis=1)
        info: dict[str, Any] = {
            "achievements": batch.achievements.copy(),
            "inventory": batch.inventory.copy(),
            "player_pos": np.stack([batch.xs[:, 1], batch.ys[:, 1]], axis=1).astype(np.int64),
            "sleeping": batch.sleeping.copy(),
            "invalid_action": invalid,
            "success": unlocked == len(ACHIEVEMENTS),
            "progression": unlocked / len(ACHIEVEMENTS),
        }
        if self.caption_style == "balrog":
            contexts = [balrog_contexts(self.game_state(r, semantic[r])) for r in range(self.num_envs)]
            info["long_term_context"] = tuple(c[0] for c in contexts)
            info["short_term_context"] = tuple(c[1] for c in contexts)
        if ended.any():
            metrics = np.full(self.num_envs, None, dtype=object)
            for r in np.flatnonzero(ended):
                counts = dict(zip(ACHIEVEMENTS, batch.achievements[r].tolist(), strict=True))
                metrics[r] = episode_metrics(counts, int(batch.steps[r]), float(self._returns[r]))
            info.update(episode_metrics=metrics, _episode_metrics=ended.copy())
        return info

    def render(self) -> tuple[str, ...] | None:
        if self.render_mode == "ansi":
            return tuple(f"Mission: {FULL_GAME_MISSION}\n{text}" for text in self._texts(self.batch.semantic()))
        return None
