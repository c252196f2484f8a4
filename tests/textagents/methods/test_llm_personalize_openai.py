"""LLM-Personalize's OpenAI fine-tuning backend against a loopback stand-in for OpenAI's API: the exported
chat JSONL, the uploaded file, the jobs (each round from the last fine-tuned model) and the planner asking
the fine-tuned model afterwards."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.textagents.json_reply import send_json
from textagents.methods.core.runner import LLMChoice, run_method
from textagents.methods.llm_personalize.openai_finetune import OpenAIFineTuner, check_chat_pair, export_chat_jsonl

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "llm_personalize" / "smoke.yaml"
PLAN = "step 1: go to bathroom 0\nstep 2: go to bedroom 0\nstep 3: go to corridor 0\nstep 4: mission complete"


class FakeOpenAI(ThreadingHTTPServer):
    """Files, fine-tuning jobs (running for ``polls`` status checks, then succeeded) and chat completions
    (always ``PLAN``); records what it was sent."""

    def __init__(self, polls: int = 1, fail: bool = False):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.polls, self.fail = polls, fail
        self.files: dict[str, bytes] = {}
        self.jobs: list[dict] = []
        self.chat_models: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def _job(server: FakeOpenAI, job: dict) -> dict:
    done = job["checks"] >= server.polls
    status = ("failed" if server.fail else "succeeded") if done else "running"
    suffix = job["suffix"]
    return {
        "id": job["id"],
        "object": "fine_tuning.job",
        "created_at": 0,
        "error": {"code": "invalid_file", "message": "bad data", "param": None} if server.fail else None,
        "fine_tuned_model": f"ft:{job['model']}:{suffix}" if done and not server.fail else None,
        "finished_at": 1 if done else None,
        "hyperparameters": job["hyperparameters"],
        "model": job["model"],
        "organization_id": "org",
        "result_files": [],
        "seed": 0,
        "status": status,
        "trained_tokens": 1234 if done else None,
        "training_file": job["training_file"],
        "validation_file": None,
    }


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        job = next(j for j in self.server.jobs if self.path.endswith(j["id"]))
        job["checks"] += 1
        send_json(self, _job(self.server, job))

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path.endswith("/files"):
            assert b'name="purpose"' in body and b"fine-tune" in body
            part = body.split(b'name="file"', 1)[1].split(b"\r\n\r\n", 1)[1]  # the file part, past its headers
            payload = part.split(b"\r\n--", 1)[0]
            file_id = f"file-{len(self.server.files)}"
            self.server.files[file_id] = payload
            return send_json(
                self,
                {
                    "id": file_id,
                    "object": "file",
                    "bytes": len(payload),
                    "created_at": 0,
                    "filename": "x.jsonl",
                    "purpose": "fine-tune",
                    "status": "processed",
                },
            )
        request = json.loads(body)
        if self.path.endswith("/fine_tuning/jobs"):
            job = {**request, "id": f"ftjob-{len(self.server.jobs)}", "checks": 0}
            self.server.jobs.append(job)
            return send_json(self, _job(self.server, job))
        self.server.chat_models.append(request["model"])
        send_json(
            self,
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": PLAN}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )


@pytest.fixture
def fake_openai(loopback_servers):
    return lambda **kwargs: loopback_servers(FakeOpenAI, **kwargs)


PAIR = [
    {"role": "system", "content": "You are a one-handed household robot."},
    {"role": "user", "content": "tidy up"},
    {"role": "assistant", "content": "step 1: go to kitchen 0"},
]


def test_the_export_is_the_chat_format_of_the_fine_tuning_api_and_refuses_bad_pairs(tmp_path):
    path = export_chat_jsonl([PAIR, PAIR], tmp_path / "d" / "train.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [{"messages": PAIR}] * 2
    with pytest.raises(ValueError, match=r"pair 1: roles must be \['system', 'user', 'assistant'\], got \['user'\]"):
        export_chat_jsonl([PAIR, PAIR[1:2]], tmp_path / "bad.jsonl")
    with pytest.raises(ValueError, match="pair 0: the assistant message has no text"):
        check_chat_pair([*PAIR[:2], {"role": "assistant", "content": " "}])
    assert not (tmp_path / "bad.jsonl").exists()


def test_a_job_is_created_from_the_current_model_awaited_and_its_model_used(tmp_path, fake_openai):
    from textagents.llm import OpenAIBackend

    server = fake_openai(polls=3)
    backend = OpenAIBackend("gpt-3.5-turbo", base_url=server.url)
    dataset = export_chat_jsonl([PAIR], tmp_path / "train.jsonl")
    sleeps = []
    result = OpenAIFineTuner(backend, poll_s=5, sleep=sleeps.append).finetune(dataset, epochs=1, suffix="lp-1")
    assert result == {"job": "ftjob-0", "model": "ft:gpt-3.5-turbo:lp-1", "trained_tokens": 1234}
    assert backend.model_name == "ft:gpt-3.5-turbo:lp-1" and sleeps == [5, 5, 5]
    (job,) = server.jobs
    assert job["model"] == "gpt-3.5-turbo" and job["hyperparameters"] == {"n_epochs": 1}
    assert server.files[job["training_file"]] == dataset.read_bytes()


def test_a_failed_or_endless_job_is_an_error_naming_the_job(tmp_path, fake_openai):
    from textagents.llm import OpenAIBackend

    dataset = export_chat_jsonl([PAIR], tmp_path / "train.jsonl")
    backend = OpenAIBackend("m", base_url=fake_openai(fail=True).url)
    with pytest.raises(RuntimeError, match=r"fine-tuning job ftjob-0 ended 'failed'.*bad data"):
        OpenAIFineTuner(backend, sleep=lambda s: None).finetune(dataset, epochs=1, suffix="x")
    assert backend.model_name == "m"
    backend = OpenAIBackend("m", base_url=fake_openai(polls=100).url)
    with pytest.raises(TimeoutError, match="fine-tuning job ftjob-0 still 'running' after 60 s"):
        OpenAIFineTuner(backend, poll_s=30, timeout_s=60, sleep=lambda s: None).finetune(dataset, epochs=1, suffix="x")


def test_the_method_fine_tunes_through_the_api_and_plans_with_the_fine_tuned_models(tmp_path, fake_openai):
    server = fake_openai()
    config = tmp_path / "openai.yaml"
    config.write_text(SMOKE.read_text() + "fine_tuning: openai\nopenai_poll_s: 0.01\nbaselines: [sayplan]\n")
    out = tmp_path / "run"
    run_method(
        "llm_personalize", config, out, llm=LLMChoice(model="gpt-3.5-turbo", base_url=server.url), progress=False
    )
    assert [job["model"] for job in server.jobs] == ["gpt-3.5-turbo", "ft:gpt-3.5-turbo:llm-personalize-1"][
        : len(server.jobs)
    ]
    assert server.files["file-0"] == (out / "datasets" / "imitation_train.jsonl").read_bytes()
    first_tuned = server.chat_models.index("ft:gpt-3.5-turbo:llm-personalize-1")
    assert set(server.chat_models[:first_tuned]) == {"gpt-3.5-turbo"}  # zero-shot and SayPlan: the base model
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["trained_tokens"] == 1234 and records[1]["test/parse_rate"] == 1.0
    assert not (out / "models").exists()
