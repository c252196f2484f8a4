"""The command line starts light: parsing arguments imports no heavy package, and a method run imports only the
packages its method uses. Each check runs in a fresh interpreter, whose ``sys.modules`` it reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "stable_baselines3", "ray", "sentence_transformers", "openai", "uvicorn")


def imported_by(code: str) -> set[str]:
    """The top-level packages that running ``code`` in a new interpreter adds to ``sys.modules`` (argparse's
    ``SystemExit`` after --help or a usage error included)."""
    script = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        f"try:\n    exec({code!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted({name.partition('.')[0] for name in set(sys.modules) - before})))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_importing_the_cli_imports_no_heavy_package():
    assert not imported_by("import textagents.cli") & set(HEAVY)


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["method", "run", "--help"], ["serve", "--help"], ["bench", "run", "--help"], ["method", "run"]],
    ids=["help", "method-run-help", "serve-help", "bench-run-help", "usage-error"],
)
def test_parsing_arguments_imports_only_the_standard_library(argv):
    """--help and a usage error end in argparse, before any command's imports: nothing outside the standard
    library and textagents is loaded (so none of ``HEAVY``, nor numpy, gymnasium or jinja2)."""
    imported = imported_by(f"from textagents.cli import main; main({argv!r})")
    assert not imported & set(HEAVY)
    assert imported - set(sys.stdlib_module_names) - {"textagents"} == set()


@pytest.mark.slow
def test_the_example_smoke_run_imports_none_of_the_packages_it_does_not_use(tmp_path):
    """The example method (tabular, no LLM in its smoke config) trains no network: no torch (its TensorBoard log
    is written without it), no LLM, SB3, SBERT, Ray, server or scikit-learn package is loaded."""
    out = tmp_path / "run"
    argv = ["method", "run", "example", "benchmarks/methods/example/smoke.yaml", "--out", str(out), "--no-progress"]
    imported = imported_by(f"from textagents.cli import main; main({argv!r})")
    assert (out / "report.md").is_file() and list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert not imported & {*HEAVY, "sklearn"}
    assert {"minigrid", "tensorboard", "matplotlib"} <= imported  # its env, its log, its report
