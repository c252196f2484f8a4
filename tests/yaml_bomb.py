"""A "billion laughs" YAML document, and a command line run with capped memory and time: the tests that check
such a document is refused must not exhaust the machine when the check is missing."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

#: The address space a bounded command may use: ~200 MB suffice to refuse a suite or config; expanding the
#: bomb takes several GB.
MEMORY_BYTES = 2 << 30
TIMEOUT_S = 60


def alias_bomb(key: str) -> str:
    """``key:`` then 9 lists of 9 aliases, each naming the list before it: ~400 bytes that expand to 9**9
    (387 million) values."""
    lines = [f"{key}:", "  - &a [x, x, x, x, x, x, x, x, x]"]
    for named, anchor in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"  - &{anchor} [{', '.join([f'*{named}'] * 9)}]")
    return "\n".join(lines) + "\n"


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def run_bounded(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` with its address space capped at ``MEMORY_BYTES`` (a MemoryError past it)
    and killed after ``TIMEOUT_S`` (``subprocess.TimeoutExpired``)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # no per-core buffers in the cap
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        preexec_fn=_cap_memory,
        check=False,
    )
