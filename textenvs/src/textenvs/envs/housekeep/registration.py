"""The Housekeep-Text ids (imports no optional dependency)."""

from __future__ import annotations

from textenvs.core.registration import EnvEntry

_ENTRY_POINT = "textenvs.envs.housekeep.env:HousekeepTextEnv"

#: LLM-Personalize's scenes 1-4 (Han et al. 2024, Table 1).
LLM_PERSONALIZE_SCENES = ("Pomaria_1_int", "Merom_1_int", "Pomaria_2_int", "Rs_int")

ENV_ENTRIES: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="Housekeep-Text-v0",
        entry_point=_ENTRY_POINT,
        family="housekeep",
        summary="Housekeep's tidy-up task over its 14 scenes and human annotations, as text commands",
    ),
    EnvEntry(
        id="Housekeep-Text-LLMPersonalize-v0",
        entry_point=_ENTRY_POINT,
        family="housekeep",
        kwargs={"scenes": LLM_PERSONALIZE_SCENES, "episode_source": "llm_personalize", "expert_mode": "faithful"},
        summary="Housekeep on LLM-Personalize's four scenes, its episodes, train/test split and demonstrator",
    ),
)
