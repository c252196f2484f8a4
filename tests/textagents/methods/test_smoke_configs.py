"""Every method's smoke config runs exactly as its docs write the command: no --model, nothing downloaded (the
configs that use an LLM name a tiny model built on first use), in seconds."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.textagents.methods.sandbox_support import needs_bubblewrap
from textagents.cli import main
from textagents.methods.registry import METHODS

REPO = Path(__file__).resolve().parents[3]
SMOKE_RUN = re.compile(r"^textagents method run \S+ benchmarks/methods/\S+/smoke\.yaml.*$", re.MULTILINE)


def documented_smoke_runs() -> dict[str, list[list[str]]]:
    """The smoke ``method run`` command lines of docs/methods/*.md (comments cut), by method."""
    runs: dict[str, list[list[str]]] = {}
    for page in sorted((REPO / "docs" / "methods").glob("*.md")):
        for line in SMOKE_RUN.findall(page.read_text()):
            words = shlex.split(line, comments=True)
            runs.setdefault(words[3], []).append(words)
    return runs


def test_every_method_documents_its_smoke_run_with_only_out_and_resume():
    runs = documented_smoke_runs()
    assert sorted(runs) == sorted(METHODS)
    for method, lines in runs.items():
        for words in lines:
            assert words[4] == f"benchmarks/methods/{method}/smoke.yaml"
            assert words[5] == "--out" and words[7:] in ([], ["--resume"]), shlex.join(words)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", [pytest.param(m, marks=needs_bubblewrap) if m == "bk" else m for m in sorted(METHODS)]
)
def test_the_documented_smoke_run_works_as_written(method, tmp_path, monkeypatch, capsys):
    words = next(w for w in documented_smoke_runs()[method] if "--resume" not in w)
    monkeypatch.chdir(REPO)  # the config path is relative to the checkout, as in the docs
    out = tmp_path / "run"
    assert main([*words[1:6], str(out), "--no-progress"]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert Path(result["report"]).is_file() and (out / "checkpoints").is_dir()
