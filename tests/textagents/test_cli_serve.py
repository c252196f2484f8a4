"""``textagents serve`` as users run it: a subprocess, a key from the environment, the openai client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import openai


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_command_answers_the_openai_client(tiny_models):
    port = _free_port()
    env = {**os.environ, "SERVE_KEY": "k-123", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "textagents.cli", "serve", "--model", str(tiny_models.causal)]
    command += ["--port", str(port), "--model-name", "tiny", "--api-key-env", "SERVE_KEY"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        banner = process.stdout.readline()
        while banner and not banner.startswith("serving"):
            banner = process.stdout.readline()
        assert banner.startswith(f"serving 'tiny' at http://127.0.0.1:{port}/v1 (API key from $SERVE_KEY)"), banner
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k-123", max_retries=0)
        reply = client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "go"}], max_tokens=3, temperature=0
        )
        assert reply.choices[0].finish_reason in ("stop", "length")
    finally:
        process.terminate()
        process.wait(30)


def test_serve_with_a_missing_model_path_says_so_without_loading_anything(tmp_path, monkeypatch, capsys):
    # It used to hand the path to transformers, which took it for a hub name: a repo-id error, or 28 s of
    # retries against the hub when offline.
    from textagents.cli import main
    from textagents.llm import transformers_backend

    def never(*args, **kwargs):
        raise AssertionError("the model must not be loaded")

    monkeypatch.setattr(transformers_backend.TransformersBackend, "__init__", never)
    assert main(["serve", "--model", str(tmp_path / "runs" / "planner")]) == 2
    assert capsys.readouterr().err == f"error: the model path {tmp_path / 'runs' / 'planner'} does not exist\n"
