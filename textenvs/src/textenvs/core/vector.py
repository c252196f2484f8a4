"""``make_vec``: Gymnasium vector envs that keep text observations intact."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

VECTORIZATION_MODES = ("sync", "async", "vector_entry_point")


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
