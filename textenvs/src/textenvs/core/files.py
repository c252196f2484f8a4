"""Writing files and folders so that a reader sees the old one or the new one, never half of one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` through a temporary file, fsync and a rename: readers see the old file or the new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide results from the rest of a team
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """A temporary folder beside ``target`` to write into. When the block ends without an error it becomes
    ``target`` (an older ``target`` is moved aside, then deleted), readable by everyone; after an error it is
    deleted and ``target`` is left as it was."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    aside = None
    try:
        yield staged
        for path in staged.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)  # temporary folders and safetensors files are private
        staged.chmod(0o755)
        if target.exists():
            aside = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old."))
            os.replace(target, aside / target.name)
        os.replace(staged, target)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
