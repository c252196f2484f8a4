"""Shared fixtures: the reference data directory (../shared/data in CI, via TEXTENVS_DATA_DIR); a temporary cache.

The test session never writes to the user's cache: textenvs' cache (downloads, Housekeep's compact episodes,
models), Hugging Face's and every other XDG cache point into a temporary folder, set here, when pytest loads
this file, before any test module imports a library that reads them; it is removed when the session ends.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import platformdirs
import pytest

#: The user's real textenvs cache, read before the override below: only `user_models` looks there, read-only.
USER_TEXTENVS_CACHE = Path(
    os.environ.get("TEXTENVS_CACHE_DIR") or platformdirs.user_cache_dir("textenvs", appauthor=False)
).expanduser()
SESSION_CACHE = Path(tempfile.mkdtemp(prefix="textenvs-tests-cache-"))
os.environ.update(
    XDG_CACHE_HOME=str(SESSION_CACHE),
    TEXTENVS_CACHE_DIR=str(SESSION_CACHE / "textenvs"),
    HF_HOME=str(SESSION_CACHE / "huggingface"),
)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(SESSION_CACHE, ignore_errors=True)


def user_model_dir(name: str) -> Path:
    """Where `textagents download` put model ``name`` in the user's cache (tests of real weights look here)."""
    return USER_TEXTENVS_CACHE / "models" / name


@pytest.fixture
def user_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache whose models are links to the models the user downloaded: real-weight tests load them by name
    without the session ever writing to the user's cache."""
    cache = tmp_path / "cache-with-user-models"
    (cache / "models").mkdir(parents=True)
    for folder in (USER_TEXTENVS_CACHE / "models").glob("*"):
        (cache / "models" / folder.name).symlink_to(folder, target_is_directory=True)
    monkeypatch.setenv("TEXTENVS_CACHE_DIR", str(cache))
    return cache


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """tox runs textenvs' tests in ``envs`` and textagents' in ``full``: a ``-k``/``-m``/``--deselect`` selection
    that matches only the other env's tests (``tox -- -k glam``) leaves none here, which is no failure. Without a
    selection, no tests (a wrong path, a module without tests) still ends with pytest's status 5."""
    options = session.config.option
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and (options.keyword or options.markexpr or options.deselect):
        session.exitstatus = pytest.ExitCode.OK
