"""LLM-Personalize with the planner behind ``textagents serve`` (``served_weights``): the served loop answers
exactly as the local loop (greedy), so the server serves each round's fine-tuned weights; a resumed run serves
them again; the restart path runs its argument list without a shell and leaves nothing behind when the
server does not come up."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.textagents.lora_support import random_adapter
from textagents.llm import OpenAIBackend
from textagents.llm.record import RecordingBackend
from textagents.llm.server import ModelHTTPServer
from textagents.llm.server_lora import LoraLimits
from textagents.llm.server_process import ServerStartError
from textagents.llm.transformers_backend import TransformersBackend
from textagents.methods.core.config import ConfigError, load_config
from textagents.methods.core.method import RunContext
from textagents.methods.core.runner import LLMChoice, run_method
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.served import SERVED_ADAPTER, AdapterServing, ServedPlannerError

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "llm_personalize" / "smoke.yaml"
#: Greedy answers, so that the served and the local planner can be compared answer for answer.
GREEDY = "temperature: 0.0\nbaselines: []\n"
SERVE = [sys.executable, "-m", "textagents.cli", "serve"]


def _config(folder: Path, extra: str = "", iterations: int = 2, name: str = "config.yaml") -> Path:
    """The smoke config, greedy, with ``iterations`` and the ``extra`` settings."""
    path = folder / name
    smoke = SMOKE.read_text()
    assert "\niterations: 2\n" in smoke
    path.write_text(smoke.replace("\niterations: 2\n", f"\niterations: {iterations}\n") + GREEDY + extra)
    return path


def _chats(run: Path) -> list[tuple[str, str]]:
    lines = (run / "llm_calls.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    return [(json.dumps(r["request"], sort_keys=True), r["response"]) for r in records if r["kind"] == "chat"]


def _evaluations(run: Path) -> list[dict]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "time"} for r in records if r["kind"] == "eval"]


@pytest.fixture(scope="module")
def local_run(tiny_models, tmp_path_factory) -> Path:
    """The reference: zero-shot, imitation and one self-training round with the planner in this process."""
    folder = tmp_path_factory.mktemp("local")
    out = folder / "run"
    run_method("llm_personalize", _config(folder), out, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    return out


def _adapter_server(model: Path, port: int = 0) -> ModelHTTPServer:
    backend = TransformersBackend(model)
    return ModelHTTPServer(backend, port=port, model_name=str(model), lora=LoraLimits(max_loras=1)).start()


def test_the_lora_adapter_loop_answers_as_the_local_loop_and_a_resumed_run_serves_its_adapter_again(
    tiny_models, tmp_path, local_run
):
    config = _config(tmp_path, "served_weights: lora_adapter\n")
    out = tmp_path / "served"
    server = _adapter_server(tiny_models.causal)
    port = server.server_address[1]
    choice = LLMChoice(model=str(tiny_models.causal), base_url=server.url)
    try:
        # zero-shot and imitation, then the run stops
        interrupted = _config(tmp_path, "served_weights: lora_adapter\n", iterations=1, name="first.yaml")
        run_method("llm_personalize", interrupted, out, llm=choice, progress=False)
        assert server.endpoints.models()["data"][1:] == []  # the run unloaded its adapter when it ended
    finally:
        server.stop()
    fresh = _adapter_server(tiny_models.causal, port)  # a server restarted since: no adapter loaded
    try:
        run_method("llm_personalize", config, out, resume=True, llm=choice, progress=False)
    finally:
        fresh.stop()

    assert (out / "models" / "iter_000001" / "served_adapter" / "adapter_model.safetensors").is_file()
    served, local = _chats(out), _chats(local_run)
    assert served == local  # every answer, zero-shot, after imitation, in and after self-training
    assert _evaluations(out) == _evaluations(local_run)
    first_prompt = served[0][0]
    answers = [response for request, response in served if request == first_prompt]
    assert answers[0] != answers[-1]  # zero-shot, then after imitation: what is served changed

    # Replayed with the same config (the server's address is not asked: nothing is served or trained).
    replayed = tmp_path / "replayed"
    calls = tmp_path / "calls.jsonl"
    calls.write_bytes((out / "llm_calls.jsonl").read_bytes())
    replay = LLMChoice(replay=str(calls), base_url=choice.base_url)
    run_method("llm_personalize", config, replayed, llm=replay, progress=False)
    assert _evaluations(replayed) == _evaluations(local_run) and not (replayed / "models").exists()


def test_the_restart_loop_runs_its_argument_list_without_a_shell(tiny_models, tmp_path, local_run):
    command = [*SERVE, "--model", "{model}", "--port", "{port}", "--model-name", "$(touch pwned)"]
    config = _config(tmp_path, f"served_weights: restart\nserve_command: {json.dumps(command)}\n", iterations=1)
    out = tmp_path / "served"
    run_method("llm_personalize", config, out, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)

    served = _chats(out)
    assert served == _chats(local_run)[: len(served)]  # zero-shot, then the merged imitation weights
    assert _evaluations(out) == _evaluations(local_run)[:1]
    log = (out / "server.log").read_text()
    assert log.count("$ ") == 2 and str(out / "models" / "iter_000001") in log  # restarted on the new weights
    assert not any(Path(p, "pwned").exists() for p in (tmp_path, out, Path.cwd()))


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def _still_alive_after(pids: list[int], wait_s: float) -> list[int]:
    """The processes of ``pids`` still alive after up to ``wait_s`` seconds: a killed process takes a
    moment to exit after the signal is sent."""
    deadline = time.monotonic() + wait_s
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_server_that_does_not_come_up_is_a_one_line_error_and_nothing_is_left(tiny_models, tmp_path):
    pids = tmp_path / "pids"
    # A "server" that starts a worker of its own, says something, and never listens.
    never = (
        "import subprocess, sys, time;"
        "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
        "open(sys.argv[1], 'w').write(f'{worker.pid} {__import__(\"os\").getpid()}');"
        "print('loading', flush=True); print('still loading', file=sys.stderr, flush=True); time.sleep(600)"
    )
    command = [sys.executable, "-c", never, str(pids), "{model}", "{port}"]
    settings = f"served_weights: restart\nserve_timeout_s: 20\nserve_command: {json.dumps(command)}\n"
    config = _config(tmp_path, settings)
    out = tmp_path / "run"
    with pytest.raises(ServerStartError) as failed:
        run_method("llm_personalize", config, out, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    message = str(failed.value)
    assert "\n" not in message and "did not answer within 20 s" in message
    assert message.endswith("its last output: loading | still loading")
    assert not _still_alive_after([int(pid) for pid in pids.read_text().split()], wait_s=5)  # server and worker
    assert not out.exists()  # the failed start is undone: the same command can run again

    crash = [sys.executable, "-c", "import sys; sys.exit('cannot load ' + sys.argv[1])", "{model}", "{port}"]
    config.write_text(config.read_text().replace(json.dumps(command), json.dumps(crash)))
    with pytest.raises(ServerStartError, match=r"exited with status 1 before it answered .*: cannot load /"):
        run_method("llm_personalize", config, out, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)


def test_served_settings_are_checked(tmp_path):
    path = tmp_path / "bad.yaml"
    for text, message in (
        ("served_weights: vllm", r"served_weights must be one of \['none', 'lora_adapter', 'restart'\], got 'vllm'"),
        ("served_weights: lora_adapter", "served_weights: lora_adapter asks a running server: give its base_url"),
        ("served_weights: lora_adapter\nlora: false\nbase_url: http://127.0.0.1:8000/v1", "set lora: true"),
        ("served_weights: restart\nserve_command: [vllm, serve, '{model}']", "must be an argument list holding"),
        ("served_weights: restart\nserve_command: 'vllm serve {model} --port {port}'", "serve_command: expected"),
        ("serve_command: [a, '{model}', '{port}']", "serve_command is run by served_weights: restart, not 'none'"),
        ("served_weights: restart\nfine_tuning: openai", "fine-tunes locally: set fine_tuning: local"),
        ("served_weights: lora_adapter\nllm_backend: llamacpp", "fine-tunes a transformers model: set llm_backend"),
        (
            "served_weights: lora_adapter\nrollout_backend: llamacpp\nbase_url: http://127.0.0.1:8000/v1",
            "served_weights and rollout_backend: llamacpp both choose the planner's LLM: set one",
        ),
    ):
        path.write_text(text + "\n")
        with pytest.raises(ConfigError, match=message):
            load_config(LLMPersonalizeConfig, path)


def test_a_server_that_cannot_serve_the_run_is_a_clear_error_before_any_rollout(tiny_models, tmp_path, causal_backend):
    model = str(tiny_models.causal)
    adapter = tmp_path / "models" / "iter_000001" / SERVED_ADAPTER
    random_adapter(tiny_models.causal, adapter, seed=0)
    for name, lora, expected in (
        ("other", None, r"serves \['other'\], not the run's model .*start it under that name"),
        (model, None, r"load_lora_adapter answered 404 .*textagents serve with --enable-lora"),
    ):
        server = ModelHTTPServer(causal_backend, port=0, model_name=name, lora=lora).start()
        try:
            overrides = {"model": model, "base_url": server.url}
            config = load_config(LLMPersonalizeConfig, _config(tmp_path, "served_weights: lora_adapter\n"), overrides)
            recorder = RecordingBackend(OpenAIBackend(model, base_url=server.url), tmp_path / "calls.jsonl")
            served = AdapterServing(config, RunContext(tmp_path, lambda recorder=recorder: recorder))
            served.resume(adapter.parent)
            with pytest.raises(ServedPlannerError, match=expected):
                served.llm()
        finally:
            server.stop()
