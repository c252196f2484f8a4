"""What a model value means (``textagents.llm.models.resolve_model``), the same for every command and backend:
a missing path says it does not exist, an unknown name gets the known names, and a downloaded model's name or
alias loads from the cache with no network at all."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from textagents.cli import main
from textagents.llm.models import SMOLLM2, ModelNotFoundError, model_dir, model_reference, resolve_model

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTENVS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def no_network(monkeypatch):
    """Online as far as the environment says, but any connection fails the test."""
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TEXTENVS_OFFLINE"):
        monkeypatch.delenv(variable, raising=False)

    def refuse(*args, **kwargs):
        raise AssertionError(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture
def downloaded(cache, tiny_models):
    """The tiny causal model where `textagents download smollm2` puts SmolLM2."""
    folder = model_dir(SMOLLM2.name)
    shutil.copytree(tiny_models.causal, folder)
    return folder


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--model", "./no-such-model"],
        ["bench", "run", "SUITE", "--out", "OUT", "--dry-run", "--model", "./no-such-model"],
        ["method", "run", "example", "CONFIG", "--out", "OUT", "--model", "./no-such-model"],
    ],
    ids=["serve", "bench-run", "method-run"],
)
def test_a_model_path_that_does_not_exist_is_refused_in_one_line(command, tmp_path, monkeypatch, capsys):
    # method run used to fail with transformers' "Repo id must use alphanumeric chars ...: './no-such-model'",
    # bench run skipped the suite's LLM agents and exited 0, serve said "no model directory".
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    paths = {
        "SUITE": REPO / "benchmarks" / "suites" / "llm.yaml",
        "CONFIG": REPO / "benchmarks" / "methods" / "example" / "smollm2.yaml",
        "OUT": out,
    }
    command = [str(paths.get(part, part)) for part in command]
    assert main(command) == 2
    assert capsys.readouterr().err == "error: the model path ./no-such-model does not exist\n"
    assert not out.exists()


def test_an_unknown_name_suggests_the_known_names_and_the_download(cache):
    with pytest.raises(ModelNotFoundError) as raised:
        resolve_model("smolm2")
    message = str(raised.value)
    assert "no model 'smolm2'" in message and "did you mean 'smollm2'?" in message
    known = "qwen-coder-0.5b, qwen-coder-1.5b, qwen2.5-coder-0.5b-instruct, qwen2.5-coder-1.5b-instruct, smollm2,"
    assert f"known names: {known} smollm2-135m-instruct" in message
    fetch = " or ".join(f"`textagents download {short}`" for short in ("smollm2", "qwen-coder-0.5b", "qwen-coder-1.5b"))
    assert message.endswith(f"(fetch once with {fetch})") and "\n" not in message


def test_an_uncached_hub_id_offline_is_refused_without_asking_the_hub(cache, tmp_path, monkeypatch, no_network):
    # `--model smollm2` used to spend ~36 s in the hub's retries on a machine without network, then fail.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError) as raised:
        resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")
    message = str(raised.value)
    assert "HF_HUB_OFFLINE is set, so the hub is not asked" in message
    assert "did you mean 'smollm2-135m-instruct'?" in message


def test_an_unreachable_hub_is_said_so_after_one_refused_connection(cache, tmp_path, monkeypatch):
    from huggingface_hub import constants

    from textagents.llm import models

    def unreachable(address, timeout):
        raise OSError("no route to host")

    for variable in models.OFFLINE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(socket, "create_connection", unreachable)
    with pytest.raises(ModelNotFoundError, match=r"and huggingface\.co cannot be reached; known names"):
        resolve_model("someone/some-model")


def test_a_hub_id_in_the_local_hub_cache_resolves_to_its_snapshot_with_no_network(tmp_path, monkeypatch, no_network):
    from huggingface_hub import constants

    repo = tmp_path / "hub" / "models--someone--tiny"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text("{}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert resolve_model("someone/tiny") == str(repo / "snapshots" / "abc123")
    assert model_reference("someone/tiny") == "someone/tiny"


@pytest.mark.parametrize("alias", ["smollm2", "SmolLM2", "smollm2-135m-instruct"])
def test_a_downloaded_alias_loads_from_the_cache_with_no_network(alias, downloaded, no_network):
    from textagents.llm.transformers_backend import TransformersBackend

    assert resolve_model(alias) == str(downloaded)
    assert model_reference(alias) == SMOLLM2.name
    backend = TransformersBackend(alias)
    assert backend.model_name == SMOLLM2.name
    assert backend.generate(["go"], max_tokens=2, temperature=0)


def test_the_llama_cpp_backend_takes_the_same_names(downloaded, tmp_path, monkeypatch):
    from textagents.llm.llamacpp_backend import gguf_file

    assert gguf_file("smollm2") == downloaded / "SmolLM2-135M-Instruct.Q4_1.gguf"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelNotFoundError, match=r"^the model path \./missing\.gguf does not exist$"):
        gguf_file("./missing.gguf")
