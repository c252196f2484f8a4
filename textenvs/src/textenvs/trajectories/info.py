"""What a dataset holds (env, policy, seeds, format), and the optional packages that write and read it."""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any

from textenvs.core.messages import short_repr

#: ``--format`` values: a Minari dataset (Arrow storage), or Hugging Face ``datasets`` parquet.
FORMATS = ("minari", "hf")
#: The pip extra that installs ``minari`` and ``datasets``.
EXTRA = "datasets"

#: The license of a family's trajectories: that of the simulator or data they come from (docs/data.md).
FAMILY_LICENSES = {"babyai_text": "apache-2.0", "crafter_text": "mit", "fastsim": "gpl-3.0", "housekeep": "mit"}
DEFAULT_LICENSE = "mit"  # textenvs' own license, for ids of no listed family


def require(module: str) -> ModuleType:
    """Import an optional dependency of the dataset formats, or an ImportError naming the pip extra."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f'textenvs datasets need the {module!r} package ({error}): pip install "textenvs[{EXTRA}]"'
        ) from error


def check_format(value: str) -> str:
    if value not in FORMATS:
        raise ValueError(f"unknown dataset format {short_repr(value)}; valid formats: {', '.join(FORMATS)}")
    return value


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset's provenance: ``episodes`` episodes of ``policy`` on ``env_id`` (made with ``env_kwargs``),
    episode ``i`` reset with ``seeds[i]``; ``steps`` in all."""

    env_id: str
    policy: str
    format: str
    seeds: tuple[int, ...]
    steps: int
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    textenvs_version: str = ""

    @property
    def episodes(self) -> int:
        return len(self.seeds)

    @property
    def family(self) -> str | None:
        import textenvs

        return next((e.family for e in textenvs.ENV_TABLE if e.id == self.env_id), None)

    @property
    def license(self) -> str:
        return FAMILY_LICENSES.get(self.family or "", DEFAULT_LICENSE)

    @property
    def minari_id(self) -> str:
        """The Minari dataset id, ``textenvs/<env id>/<policy>-v0``."""
        return f"textenvs/{self.env_id}/{self.policy}-v0"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seeds": list(self.seeds), "episodes": self.episodes}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> DatasetInfo:
        """The info stored in a dataset (its card or Minari metadata); ``where`` names it in errors."""
        try:
            return cls(
                env_id=str(data["env_id"]),
                policy=str(data["policy"]),
                format=check_format(str(data["format"])),
                seeds=tuple(int(s) for s in data["seeds"]),
                steps=int(data["steps"]),
                env_kwargs=dict(data.get("env_kwargs") or {}),
                textenvs_version=str(data.get("textenvs_version", "")),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{where}: not a textenvs dataset description ({error}): {short_repr(data)}") from error
