"""Housekeep tests read the reference data through ``$TEXTENVS_DATA_DIR`` (set from the shared fixture)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def housekeep_data_dir(data_dir):
    previous = os.environ.get("TEXTENVS_DATA_DIR")
    os.environ["TEXTENVS_DATA_DIR"] = str(data_dir)
    yield data_dir
    if previous is None:
        os.environ.pop("TEXTENVS_DATA_DIR", None)
    else:
        os.environ["TEXTENVS_DATA_DIR"] = previous
