"""JSON-lines files that several processes append to and a kill can cut: whole-line appends under a lock,
fsynced; readers skip (and count) a line that does not parse."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any


def append_lines(path: Path, lines: list[str]) -> None:
    """Append whole lines with one write under an exclusive lock, then fsync (safe across processes)."""
    data = "".join(lines).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock


def append_records(path: Path, records: list[dict[str, Any]], default: Any = None) -> None:
    """Append JSON objects as lines (``default`` as in ``json.dumps``)."""
    append_lines(path, [json.dumps(r, ensure_ascii=False, default=default) + "\n" for r in records])


def read_jsonl(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of a JSONL file, and the number of lines skipped (cut by a kill, or not objects)."""
    records, skipped = [], 0
    with Path(path).open("rb") as handle:
        for raw in handle:
            try:
                record = json.loads(raw)
            except ValueError:
                skipped += 1
                continue
            if isinstance(record, dict):
                records.append(record)
            else:
                skipped += 1
    return records, skipped
