"""Environment families and the one registration table of every id."""

from textenvs.core.registration import EnvEntry
from textenvs.envs.babyai_text.registration import ENV_ENTRIES as BABYAI_TEXT_ENTRIES
from textenvs.envs.crafter_text.registration import ENV_ENTRIES as CRAFTER_TEXT_ENTRIES
from textenvs.envs.fastsim.registration import ENV_ENTRIES as FASTSIM_ENTRIES
from textenvs.envs.housekeep.registration import ENV_ENTRIES as HOUSEKEEP_ENTRIES

#: Every registered id, family by family. A family adds its ``ENV_ENTRIES`` here.
ENV_TABLE: tuple[EnvEntry, ...] = (
    *BABYAI_TEXT_ENTRIES,
    *CRAFTER_TEXT_ENTRIES,
    *FASTSIM_ENTRIES,
    *HOUSEKEEP_ENTRIES,
)
