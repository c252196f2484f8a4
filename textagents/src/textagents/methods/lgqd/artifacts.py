"""The pipeline folder every ``textagents lgqd`` stage reads and writes, and its file formats.

```
config.json                 the resolved config (written by the archive stage), versions, git commit, machine
archive/                    progress.jsonl (one line per generation), checkpoint.json + checkpoint_NNNNNN.npz,
                            archive.npz + archive.json (the result), progress.png, archive_map.png
dedupe/                     archive.npz + dedupe.json
annotate/                   rollouts.npz + annotations.jsonl + annotate.json
describe/                   descriptions.jsonl (one line per item, appended as described) + describe.json
split/                      split.json
llm_calls.jsonl             every LLM request and answer of the describe stage (replayable)
```

Arrays are ``.npz`` read as plain arrays only; everything else is JSON. Whole files are written to a
temporary file, fsynced and renamed, so a kill leaves the old file or the new one.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from textagents.bench.store import write_json_atomic
from textagents.methods.core.config import config_from_dict
from textagents.methods.core.run_dir import RunDir, RunDirError
from textagents.methods.lgqd.config import LGQDConfig
from textenvs.core.files import write_bytes_atomic

METHOD = "lgqd"


class PipelineError(RunDirError):
    """A pipeline folder that cannot be used as asked (a stage's input missing, a stage already done)."""


class Pipeline:
    """The folder at ``path``: its config, its stages' folders and what each stage left there."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.run = RunDir(self.path)

    def config(self) -> LGQDConfig:
        """The config the archive stage recorded."""
        if not (self.path / "config.json").is_file():
            raise PipelineError(
                f"{self.path} is not an lgqd pipeline folder (no config.json): "
                f"start one with `textagents lgqd archive CONFIG --out {self.path}`"
            )
        return config_from_dict(LGQDConfig, self.run.recorded()["config"], str(self.path / "config.json"))

    def stage(self, name: str) -> Path:
        """The folder of stage ``name`` (created)."""
        folder = self.path / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def require(self, stage: str, file: str) -> Path:
        """``stage``'s output ``file``; an error naming the command that makes it when it is missing."""
        path = self.path / stage / file
        if not path.is_file():
            raise PipelineError(f"{path} is missing: run `textagents lgqd {stage} {self.path}` first")
        return path


def write_npz_atomic(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Save ``arrays`` as an uncompressed ``.npz`` (no object arrays: nothing a reader would unpickle)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.asarray(array) for name, array in arrays.items()})
    write_bytes_atomic(path, buffer.getvalue())


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, read without pickle."""
    with np.load(path, allow_pickle=False) as data:  # trusted: plain arrays only, object arrays refused
        return {name: data[name] for name in data.files}


def write_artifact(folder: Path, name: str, arrays: dict[str, np.ndarray], metadata: dict[str, Any]) -> None:
    """``name.npz`` and then ``name.json`` (its metadata, with each array's shape and dtype): a stage is
    done when its JSON exists."""
    write_npz_atomic(folder / f"{name}.npz", arrays)
    shapes = {key: {"shape": list(value.shape), "dtype": str(value.dtype)} for key, value in arrays.items()}
    write_json_atomic(folder / f"{name}.json", {**metadata, "arrays": shapes})


def save_figure(figure: Any, path: Path) -> None:
    """A matplotlib ``figure`` as a PNG at ``path`` (tight layout, cropped to what is drawn so no title or legend
    is cut off, 100 dpi, written atomically), then closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    write_bytes_atomic(path, buffer.getvalue())
