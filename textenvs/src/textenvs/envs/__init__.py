"""Environment families and the one registration table of every id."""

from textenvs.core.registration import EnvEntry

#: Every registered id, family by family. A family adds its ``ENV_ENTRIES`` here.
ENV_TABLE: tuple[EnvEntry, ...] = ()
