"""Shared helpers for the throughput benchmarks: timing loops and atomic result files."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def rate(step: Callable[[], object], min_seconds: float = 2.0, min_calls: int = 100) -> float:
    """Calls per second of ``step``, measured over at least ``min_seconds`` and ``min_calls``."""
    calls = 0
    start = time.perf_counter()
    while True:
        step()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and calls >= min_calls:
            return calls / elapsed


def timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, dict[str, float]]:
    """``call``'s result and the seconds it took: ``cpu`` (this process's processor time: one thread, so
    what the other jobs' load adds is mostly waiting, left out) and ``wall``."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = call(*args, **kwargs)
    return result, {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
    }


def cpu_model() -> str:
    """The processor's name (Linux's /proc/cpuinfo; elsewhere what ``platform`` knows)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def write_result(name: str, result: dict[str, Any]) -> Path:
    """Write ``benchmarks/results/<name>.json`` atomically (temp file + rename) and return its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    payload = {"benchmark": name, "machine": machine(), "measured_at": stamp, **result}
    fd, tmp = tempfile.mkstemp(dir=RESULTS_DIR, prefix=f".{name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    return path
