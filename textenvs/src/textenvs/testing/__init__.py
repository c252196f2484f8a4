"""The contract test kit: checks every textenvs id must pass (see ``textenvs.testing.contract``)."""

from textenvs.testing.contract import (
    check_determinism_across_processes,
    check_expert_episode,
    check_garbage_actions,
    check_gymnasium_api,
    check_info_keys,
    check_obs_modes_agree,
    check_rejected_reset_recovers,
    check_render_modes,
    check_vector_env,
    rollout_digests_in_subprocess,
)
from textenvs.testing.rollout import rollout_digest, rollout_records

__all__ = [
    "check_determinism_across_processes",
    "check_expert_episode",
    "check_garbage_actions",
    "check_gymnasium_api",
    "check_info_keys",
    "check_obs_modes_agree",
    "check_rejected_reset_recovers",
    "check_render_modes",
    "check_vector_env",
    "rollout_digest",
    "rollout_digests_in_subprocess",
    "rollout_records",
]
