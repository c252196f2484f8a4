"""``make_vec``: Gymnasium vector envs that keep text observations intact."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from textenvs.core.spaces import check_choice

VECTORIZATION_MODES = ("sync", "async", "vector_entry_point")
#: The autoreset modes of textenvs' batched vector envs (Gymnasium's ``DISABLED`` is not offered).
AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)

Batch = tuple[dict[str, Any], dict[str, Any]]


def autoreset_choice(value: AutoresetMode | str) -> AutoresetMode:
    """``value`` (an ``AutoresetMode`` or its value, e.g. ``"SameStep"``) if a batched env offers it, else a
    ValueError naming the valid ones."""
    valid = tuple(mode.value for mode in AUTORESET_MODES)
    return AutoresetMode(check_choice("autoreset_mode", getattr(value, "value", value), valid))


def restart_in_same_step(batch: Batch, ended: np.ndarray, restart: Callable[[np.ndarray], Batch]) -> Batch:
    """Gymnasium's ``SAME_STEP`` autoreset for a batched env whose ``batch`` (observations, info) ends the
    episodes in ``ended``: ``restart(rows)`` starts those rows' next episodes and gives the batch after; its
    info gains ``final_obs`` (each ended env's last observation) and ``final_info`` (``batch``'s info), with
    their ``_final_obs`` / ``_final_info`` masks."""
    if not ended.any():
        return batch
    observation, info = batch
    final_obs = np.full(len(ended), None, dtype=object)
    for r in np.flatnonzero(ended):
        final_obs[r] = {key: part[r] for key, part in observation.items()}
    observation, after = restart(np.flatnonzero(ended))
    after.update(final_obs=final_obs, _final_obs=ended.copy(), final_info=info, _final_info=ended.copy())
    return observation, after


def make_vec(
    env_id: str,
    num_envs: int = 1,
    vectorization_mode: str | None = None,
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> gym.vector.VectorEnv:
    """Like ``gymnasium.make_vec``, but async mode never uses shared memory.

    Gymnasium's ``AsyncVectorEnv`` with ``shared_memory=True`` writes ``Text`` observations into a
    shared buffer that cannot hold strings and returns stale ``'0000…'`` values, so text would be lost.
    ``vectorization_mode=None`` picks the family's native batched env when it registers one, else sync.
    """
    spec = gym.spec(env_id)
    if vectorization_mode is None:
        vectorization_mode = "vector_entry_point" if spec.vector_entry_point is not None else "sync"
    if vectorization_mode not in VECTORIZATION_MODES:
        raise ValueError(f"vectorization_mode={vectorization_mode!r} is not valid; choose one of {VECTORIZATION_MODES}")
    vector_kwargs = dict(vector_kwargs or {})
    if vectorization_mode == "async":
        if vector_kwargs.get("shared_memory"):
            raise ValueError("shared_memory=True corrupts Text observations; textenvs always uses False")
        vector_kwargs["shared_memory"] = False
    return gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode=vectorization_mode,
        vector_kwargs=vector_kwargs,
        **env_kwargs,
    )
