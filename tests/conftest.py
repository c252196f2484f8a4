"""Shared fixtures: the reference data directory (../shared/data in CI, via TEXTENVS_DATA_DIR)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def shared_data_dir() -> Path | None:
    env = os.environ.get("TEXTENVS_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[1].parent / "shared" / "data")
    return next((p for p in candidates if (p / "SOURCE.md").is_file()), None)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The reference data directory: skipped when absent on a developer machine, a failure in CI."""
    path = shared_data_dir()
    if path is None:
        message = "reference data not found: set TEXTENVS_DATA_DIR to ../shared/data"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path
