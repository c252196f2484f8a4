"""``textagents serve --enable-lora``: vLLM's runtime LoRA API (load, answer by the adapter's name, unload) over
the real ``openai`` client, and the refusals (unknown names, bad folders, adapters that do not fit)."""

from __future__ import annotations

import http.client
import json
import shutil

import openai
import pytest

from tests.textagents.lora_support import random_adapter
from textagents.llm.lora_files import ADAPTER_CONFIG
from textagents.llm.server import ModelHTTPServer
from textagents.llm.server_lora import LoraLimits
from textagents.llm.transformers_backend import TransformersBackend

PROMPTS = ["You are a one-handed household robot.", "go to living room 0", "pick up saucer 1, place"]


def _post(server: ModelHTTPServer, path: str, body: dict) -> tuple[int, str]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=60)
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    return response.status, text


def _error(text: str) -> dict:
    error = json.loads(text)["error"]
    assert set(error) == {"message", "type", "param", "code"}  # OpenAI's format
    return error


def _answers(client: openai.OpenAI, model: str) -> list[str]:
    replies = [
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": p}], max_tokens=8, temperature=0
        )
        for p in PROMPTS
    ]
    assert all(reply.model == model for reply in replies)
    return [reply.choices[0].message.content for reply in replies]


@pytest.fixture(scope="module")
def adapter(tiny_models, tmp_path_factory):
    """A random adapter's folder and the tiny model with it merged, as a backend."""
    folder = tmp_path_factory.mktemp("adapter") / "planner-lora"
    merged = TransformersBackend(tiny_models.causal)
    merged.model = random_adapter(tiny_models.causal, folder, seed=3)
    return folder, merged


@pytest.fixture()
def server(tiny_models):
    # A model of its own: loading adapters changes it.
    running = ModelHTTPServer(
        TransformersBackend(tiny_models.causal), port=0, model_name="base", lora=LoraLimits(max_loras=1)
    ).start()
    yield running
    running.stop()


def test_a_loaded_adapter_answers_as_the_merged_model_until_it_is_unloaded(server, adapter, causal_backend):
    folder, merged = adapter
    client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
    base = [causal_backend.chat([{"role": "user", "content": p}], max_tokens=8) for p in PROMPTS]
    tuned = [merged.chat([{"role": "user", "content": p}], max_tokens=8) for p in PROMPTS]
    assert tuned != base  # the adapter changes the answers

    status, text = _post(server, "/v1/load_lora_adapter", {"lora_name": "planner/iter 1", "lora_path": str(folder)})
    assert (status, text) == (200, "Success: LoRA adapter 'planner/iter 1' added successfully.")
    cards = {card.id: card for card in client.models.list().data}
    assert list(cards) == ["base", "planner/iter 1"]
    assert cards["planner/iter 1"].parent == "base" and cards["planner/iter 1"].root == str(folder)
    assert _answers(client, "planner/iter 1") == tuned
    assert _answers(client, "base") == base  # the served model itself is unchanged

    status, text = _post(server, "/v1/load_lora_adapter", {"lora_name": "planner/iter 1", "lora_path": str(folder)})
    assert status == 400 and "has already been loaded" in _error(text)["message"]
    status, text = _post(server, "/v1/load_lora_adapter", {"lora_name": "second", "lora_path": str(folder)})
    assert status == 400 and "--max-loras" in _error(text)["message"]

    status, text = _post(server, "/v1/unload_lora_adapter", {"lora_name": "planner/iter 1"})
    assert (status, text) == (200, "Success: LoRA adapter 'planner/iter 1' removed successfully.")
    with pytest.raises(openai.NotFoundError, match="available: 'base'"):
        _answers(client, "planner/iter 1")
    assert _answers(client, "base") == base


def test_unknown_adapters_are_404s_and_bad_folders_are_refused(server, adapter, tmp_path):
    folder, _ = adapter
    status, text = _post(server, "/v1/unload_lora_adapter", {"lora_name": "never-loaded"})
    error = _error(text)
    assert status == 404 and error["message"] == "The lora adapter 'never-loaded' cannot be found."
    assert error["param"] == "lora_name" and error["code"] == 404

    def refusal(path: str) -> str:
        status, text = _post(server, "/v1/load_lora_adapter", {"lora_name": "bad", "lora_path": path})
        assert status == 400
        return _error(text)["message"]

    assert "is not a folder" in refusal(str(tmp_path / "missing"))
    assert "is not a folder" in refusal(str(folder / ADAPTER_CONFIG))
    assert "has no adapter_config.json" in refusal(str(tmp_path))
    pickled = tmp_path / "pickled"
    shutil.copytree(folder, pickled)
    (pickled / "adapter_model.safetensors").rename(pickled / "adapter_model.bin")
    assert "safetensors only" in refusal(str(pickled))
    misfit = tmp_path / "misfit"  # the config says rank 2, the weights are rank 4
    shutil.copytree(folder, misfit)
    config = json.loads((misfit / ADAPTER_CONFIG).read_text())
    (misfit / ADAPTER_CONFIG).write_text(json.dumps(config | {"r": 2}))
    assert "does not fit the served model" in refusal(str(misfit))
    status, text = _post(server, "/v1/load_lora_adapter", {"lora_name": "", "lora_path": str(folder)})
    assert status == 400 and _error(text)["param"] == "lora_name"

    # Nothing of the refused adapters stays: the good one still loads into the only place.
    status, _ = _post(server, "/v1/load_lora_adapter", {"lora_name": "good", "lora_path": str(folder)})
    assert status == 200


def test_without_enable_lora_there_are_no_adapter_routes(causal_backend, adapter):
    plain = ModelHTTPServer(causal_backend, port=0, model_name="base").start()
    try:
        status, text = _post(plain, "/v1/load_lora_adapter", {"lora_name": "x", "lora_path": str(adapter[0])})
        assert status == 404 and "no route POST /v1/load_lora_adapter" in _error(text)["message"]
    finally:
        plain.stop()


def test_the_lora_limits_of_the_command_line_must_be_positive(capsys):
    from textagents.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--model", "tiny-causal-lm", "--enable-lora", "--max-loras", "0"])
    assert stopped.value.code == 2
    assert "argument --max-loras: expected an integer >= 1, got '0'" in capsys.readouterr().err
