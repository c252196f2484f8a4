"""Fixtures for the fastsim tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def golden_dir(data_dir: Path) -> Path:
    """The traces recorded from the C++ libfastsim."""
    return data_dir / "fastsim" / "golden"
