"""textenvs installs and imports alone: no torch, no optional backend imported by ``import textenvs``."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import textenvs

REPO = Path(__file__).resolve().parents[2]


def _dependency_closure(dist: str, extras: tuple[str, ...] = ("all",)) -> set[str]:
    """Names of installed distributions ``dist[extras]`` pulls in, recursively."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(dist, extras)]
    while todo:
        name, wanted = todo.pop()
        key = (re.sub(r"[-_.]+", "-", name).lower(), wanted)
        if key in seen:
            continue
        seen.add(key)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for requirement in requirements:
            spec, _, marker = requirement.partition(";")
            extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
            if extra and extra.group(1) not in wanted:
                continue
            match = re.match(r"\s*([A-Za-z0-9_.-]+)(\[([^\]]+)\])?", spec)
            sub_extras = tuple(e.strip() for e in match.group(3).split(",")) if match.group(3) else ()
            todo.append((match.group(1), sub_extras))
    return {name for name, _ in seen}


def test_textenvs_all_does_not_depend_on_torch():
    closure = _dependency_closure("textenvs")
    assert "gymnasium" in closure and "minigrid" in closure
    assert not {"torch", "transformers", "stable-baselines3"} & closure


@pytest.mark.skipif(not os.environ.get("TEXTENVS_ISOLATED"), reason="only in the textenvs-alone tox env")
def test_torch_is_not_importable_where_textenvs_is_installed_alone():
    assert importlib.util.find_spec("torch") is None
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("textagents")


def test_import_textenvs_imports_no_optional_backend():
    code = (
        "import sys, textenvs; "
        "print(','.join(m for m in ('minigrid', 'crafter', 'numba', 'torch', 'pettingzoo') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


#: Per family, the optional backend its envs must import and every one they may (crafter imports opensimplex,
#: which imports numba where it is installed).
FAMILY_BACKENDS = {
    "babyai_text": ("minigrid", {"minigrid"}),
    "crafter_text": ("crafter", {"crafter", "numba"}),
    "fastsim": (None, {"numba"}),
    "housekeep": (None, set()),
}


@pytest.mark.parametrize("family", sorted(FAMILY_BACKENDS))
def test_making_an_env_imports_only_its_family_backend(family, data_dir):
    entry = next(e for e in textenvs.ENV_TABLE if e.family == family)
    if entry.missing_requirements():
        pytest.skip(f"{family} is not installed")
    backends = ("torch", "minigrid", "crafter", "numba", "pettingzoo")
    code = (
        f"import sys, gymnasium as gym, textenvs; gym.make({entry.id!r}).close(); "
        f"print(','.join(m for m in {backends!r} if m in sys.modules))"
    )
    env = {**os.environ, "TEXTENVS_DATA_DIR": str(data_dir)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    imported = set(filter(None, result.stdout.strip().split(",")))
    needed, allowed = FAMILY_BACKENDS[family]
    assert imported <= allowed, f"{entry.id} imports {sorted(imported - allowed)}"
    assert needed is None or needed in imported


def test_module_prefixed_id_works_without_import():
    entry = next((e for e in textenvs.ENV_TABLE if not e.missing_requirements()), None)
    if entry is None:
        pytest.skip("no family installed")
    code = f"import gymnasium as gym; env = gym.make('textenvs:{entry.id}'); print(type(env.unwrapped).__name__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_env_needing_data_fails_clearly_without_data_cache_or_network(tmp_path):
    """No data dir, an empty cache and no network (a closed loopback port): one error that says it all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEXTENVS_")}
    env.update(TEXTENVS_CACHE_DIR=str(tmp_path / "cache"), TEXTENVS_DATA_URL="http://127.0.0.1:9")
    code = "import gymnasium as gym, textenvs; gym.make('Fastsim-Text-HardMaze-v0')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode != 0
    message = result.stderr[result.stderr.index("DataNotFoundError") :]
    assert "fastsim/maps/maze_hard.pbm" in message
    assert "$TEXTENVS_DATA_DIR: not set" in message and str(tmp_path / "cache") in message
    assert "Connection refused" in message and "textenvs download fastsim" in message


def readme_first_python_snippet() -> str:
    """README.md's first ```python block, dedented (it sits in a list item)."""
    match = re.search(r"^[ \t]*```python\n(.*?)^[ \t]*```", (REPO / "README.md").read_text(), re.S | re.M)
    assert match, "README.md has no ```python block"
    return textwrap.dedent(match.group(1))


def _env_without_pythonpath() -> dict[str, str]:
    """This process's environment without PYTHONPATH, which would put source trees before a venv's install."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def test_readme_first_python_snippet_runs():
    result = subprocess.run([sys.executable, "-c", readme_first_python_snippet()], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "go forward" in result.stdout  # the admissible commands it prints


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TEXTENVS_ISOLATED"), reason="only in the textenvs-alone tox env (needs PyPI)")
def test_readme_first_python_snippet_runs_after_a_bare_pip_install_of_textenvs(tmp_path):
    """README: "`pip install ./textenvs` alone, no torch; then" the snippet. A fresh venv, no extras."""
    source = tmp_path / "textenvs"
    shutil.copytree(REPO / "textenvs", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    env = _env_without_pythonpath()
    install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(source)]
    installed = subprocess.run(install, capture_output=True, text=True, env=env)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # Run away from the repository, whose textenvs/ folder would otherwise be on the path.
    snippet = subprocess.run(
        [python, "-c", readme_first_python_snippet()], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert snippet.returncode == 0, snippet.stderr
    no_torch = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)"
    assert subprocess.run([python, "-c", no_torch], env=env, cwd=tmp_path).returncode == 0, "a bare install has torch"
