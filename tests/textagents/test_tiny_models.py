"""The tiny model names: resolved like a downloaded model's, built on first use into the cache (whole or not
at all), the same models ``textagents tiny-models`` writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from textagents import testing
from textagents.llm.models import resolve_model
from textagents.testing import TINY_MODELS, build_tiny_models, tiny_model_dir


@pytest.mark.parametrize("name", sorted(TINY_MODELS))
def test_a_tiny_model_name_resolves_to_the_model_tiny_models_writes(name, tmp_path):
    folder = Path(resolve_model(name))
    assert folder == tiny_model_dir(name) and folder.name == name
    assert resolve_model(name) == str(folder)  # built once
    assert not [p for p in folder.parent.iterdir() if p.name not in TINY_MODELS]  # no temporary folder left
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in folder.iterdir())
    written = getattr(build_tiny_models(tmp_path), TINY_MODELS[name])
    ours, theirs = load_file(folder / "model.safetensors"), load_file(written / "model.safetensors")
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_a_failed_build_leaves_nothing_under_the_name(monkeypatch, tmp_path):
    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setenv("TEXTENVS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(testing, "save_model", fail)
    with pytest.raises(OSError, match="disk full"):
        resolve_model("tiny-seq2seq-lm")
    assert list(tiny_model_dir("tiny-seq2seq-lm").parent.iterdir()) == []


def test_the_backend_names_a_tiny_model_by_its_name():
    from textagents.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend("tiny-causal-lm")
    assert backend.model_name == "tiny-causal-lm" and not backend.seq2seq
