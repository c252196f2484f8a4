"""The fastsim ids (imports nothing optional: numba is picked up when the env is built)."""

from __future__ import annotations

from textenvs.core.registration import EnvEntry

_ENTRY_POINT = "textenvs.envs.fastsim.env:FastsimNavEnv"
_VECTOR_ENTRY_POINT = "textenvs.envs.fastsim.vector_env:FastsimVectorEnv"

ENV_ENTRIES: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="Fastsim-Text-HardMaze-v0",
        entry_point=_ENTRY_POINT,
        vector_entry_point=_VECTOR_ENTRY_POINT,
        family="fastsim",
        kwargs={"layout": "hardmaze"},
        summary="libfastsim robot (3 lasers, 2 bumpers) in the deceptive hard maze; text + sensors.",
    ),
    EnvEntry(
        id="Fastsim-Text-Household-v0",
        entry_point=_ENTRY_POINT,
        vector_entry_point=_VECTOR_ENTRY_POINT,
        family="fastsim",
        kwargs={"layout": "household"},
        summary="libfastsim robot in the language-grounded QD apartment (tiles, 12 objects); text + sensors.",
    ),
)
