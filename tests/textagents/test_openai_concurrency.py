"""``OpenAIBackend``'s concurrent requests: answers equal to one request at a time against ``textagents serve``
(whose tiny random model answers every chat alike: the order shows in ``generate``'s answers and the numbered
answers of a loopback server that makes requests wait for each other), in-flight requests real and bounded,
the first failure raised, token totals summed; and the wrappers that pass batches on."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.textagents.json_reply import send_json
from textagents.llm import CachedBackend, LLMRequestError, OpenAIBackend, ResponseCache, TokenUsage
from textagents.llm.server import ModelHTTPServer

CONVERSATIONS = [
    [{"role": "system", "content": "You are a robot."}, {"role": "user", "content": text}]
    for text in ("reach the door", "go left", "wait", "go right, go right", "cell 0 of 5", "the door is 4 steps")
]
CONTEXTS = ["You are in cell 0 of 5. Action:", "The door is 4 steps right. Action:", "Goal: wait. Action:"]
CANDIDATES = [[" go right", " go left", " wait", " go", " stop", " turn left", " turn right"]] * 3


@pytest.fixture(scope="module")
def served(causal_backend) -> Iterator[ModelHTTPServer]:
    running = ModelHTTPServer(causal_backend, port=0, model_name="tiny").start()
    yield running
    running.stop()


def test_chat_batch_through_the_server_equals_chats_one_at_a_time_in_order(served, causal_backend):
    one_at_a_time = OpenAIBackend("tiny", base_url=served.url, max_concurrency=1)
    sequential = [one_at_a_time.chat(c, max_tokens=6) for c in CONVERSATIONS]
    assert sequential == [causal_backend.chat(c, max_tokens=6) for c in CONVERSATIONS]
    concurrent = OpenAIBackend("tiny", base_url=served.url, max_concurrency=4)
    assert concurrent.chat_batch(CONVERSATIONS, max_tokens=6) == sequential
    assert concurrent.usage.as_dict() == one_at_a_time.usage.as_dict()
    assert concurrent.usage.requests == len(CONVERSATIONS) and concurrent.usage.latency.total == len(CONVERSATIONS)


@pytest.mark.parametrize("token_ids", [False, True])
def test_score_in_concurrent_requests_equals_one_request(served, causal_backend, tiny_models, token_ids):
    tokenizer = str(tiny_models.causal) if token_ids else None
    whole = OpenAIBackend("tiny", base_url=served.url, tokenizer=tokenizer, max_concurrency=1)
    split = OpenAIBackend("tiny", base_url=served.url, tokenizer=tokenizer, score_batch=4, max_concurrency=4)
    expected = whole.score(CONTEXTS, CANDIDATES)
    assert whole.usage.requests == 1
    scores = split.score(CONTEXTS, CANDIDATES)
    assert split.usage.requests == 6  # 21 (context, candidate) prompts, 4 per request
    for row, expected_row in zip(scores, expected, strict=True):
        assert row == pytest.approx(expected_row, abs=1e-5)
    if token_ids:  # text prompts are tokenized together by the server: only token ids equal in-process scores
        for row, local_row in zip(scores, causal_backend.score(CONTEXTS, CANDIDATES), strict=True):
            assert row == pytest.approx(local_row, abs=1e-4)


def test_generate_in_concurrent_requests_keeps_the_prompts_order(served, causal_backend):
    prompts = [c[1]["content"] for c in CONVERSATIONS]
    expected = causal_backend.generate(prompts, max_tokens=4)
    assert len(set(expected)) == len(prompts)  # an answer out of order would show
    backend = OpenAIBackend("tiny", base_url=served.url, generate_batch=2, max_concurrency=3)
    assert backend.generate(prompts, max_tokens=4) == expected
    assert backend.usage.requests == 3


#: Seconds the held requests wait once ``hold`` are in flight: time for a request over the bound to arrive.
GRACE_S = 0.3
#: Seconds the held requests wait at most for ``hold`` of them to be in flight together.
TIMEOUT_S = 30


class WaitingServer(ThreadingHTTPServer):
    """Chat completions that count the requests in flight. The first requests are held until ``hold`` of
    them are in flight together and ``GRACE_S`` more seconds have passed; then every request is answered
    at once (a 400 when ``hold`` were not in flight together within ``TIMEOUT_S``). The answer to ``"q{i}"``
    is ``"a{i}"`` with ``10 + i`` prompt and ``i`` completion tokens; a question in ``refuse`` gets a 400,
    one in ``flaky`` a 503 the first time."""

    request_queue_size = 64

    def __init__(self, hold: int = 0, refuse: dict[str, str] | None = None, flaky: set[str] | None = None):
        super().__init__(("127.0.0.1", 0), _Waiting)
        self.hold = hold
        self.released = threading.Event()
        if not hold:
            self.released.set()
        self.refuse = refuse or {}
        self.flaky = set(flaky or ())
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        self.questions: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Waiting(BaseHTTPRequestHandler):
    server: WaitingServer

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        server = self.server
        question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"][-1]["content"]
        with server.lock:
            server.questions.append(question)
            server.in_flight += 1
            server.most_in_flight = max(server.most_in_flight, server.in_flight)
            if server.in_flight == server.hold and not server.released.is_set():
                threading.Timer(GRACE_S, server.released.set).start()
        if server.released.wait(TIMEOUT_S):
            status, body = self._answer(question)
        else:
            status, body = 400, _error(f"{server.hold} requests were never in flight together")
        with server.lock:  # before answering: the client's next request cannot arrive before this one left
            server.in_flight -= 1
        send_json(self, body, status)

    def _answer(self, question: str) -> tuple[int, dict]:
        if question in self.server.refuse:
            return 400, _error(self.server.refuse[question])
        with self.server.lock:
            if question in self.server.flaky:
                self.server.flaky.discard(question)
                return 503, _error("busy")
        i = int(question[1:])
        message = {"role": "assistant", "content": f"a{i}"}
        return 200, {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10 + i, "completion_tokens": i, "total_tokens": 10 + 2 * i},
        }


def _error(message: str) -> dict:
    return {"error": {"message": message, "type": "x", "param": None, "code": None}}


@pytest.fixture
def waiting(loopback_servers):
    return lambda **kwargs: loopback_servers(WaitingServer, **kwargs)


def _questions(count: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"q{i}"}] for i in range(count)]


def test_requests_are_in_flight_together_but_never_more_than_max_concurrency(waiting):
    server = waiting(hold=4)
    backend = OpenAIBackend("m", base_url=server.url, max_concurrency=4, max_retries=0)
    assert backend.chat_batch(_questions(12)) == [f"a{i}" for i in range(12)]
    assert server.most_in_flight == 4
    assert backend.usage.as_dict() == {
        "prompt_tokens": sum(10 + i for i in range(12)),
        "completion_tokens": sum(range(12)),
        "total_tokens": sum(10 + 2 * i for i in range(12)),
        "requests": 12,
        "cache_hits": 0,
    }


def test_the_bound_holds_for_every_caller_of_one_backend_together(waiting):
    server = waiting(hold=3)
    backend = OpenAIBackend("m", base_url=server.url, max_concurrency=3, max_retries=0)
    answers: dict[int, list[str]] = {}

    def ask(caller: int) -> None:
        answers[caller] = backend.chat_batch(_questions(6))

    callers = [threading.Thread(target=ask, args=(caller,)) for caller in range(2)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(120)
    assert answers == {0: [f"a{i}" for i in range(6)], 1: [f"a{i}" for i in range(6)]}
    assert server.most_in_flight == 3 and backend.usage.requests == 12


def test_a_transient_failure_is_retried_without_disturbing_the_others(waiting):
    server = waiting(hold=2, flaky={"q1"})
    waits: list[float] = []
    backend = OpenAIBackend("m", base_url=server.url, max_concurrency=2, backoff_s=0.25, sleep=waits.append)
    assert backend.chat_batch(_questions(3)) == ["a0", "a1", "a2"]  # q1 retried beside q2
    assert waits == [0.25] and sorted(server.questions) == ["q0", "q1", "q1", "q2"]
    assert backend.usage.requests == 3


def test_the_first_failure_in_input_order_is_one_line_naming_model_and_server(waiting):
    server = waiting(refuse={"q2": "q2 is too long", "q5": "q5 is too long"})
    backend = OpenAIBackend("planner", base_url=server.url, max_concurrency=8)
    with pytest.raises(LLMRequestError) as raised:
        backend.chat_batch(_questions(10))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"planner at {server.url}/ refused the request (HTTP 400)")
    assert message.endswith("q2 is too long")


def test_requests_not_started_when_one_fails_are_never_sent(waiting):
    server = waiting(refuse={"q0": "no"})
    backend = OpenAIBackend("m", base_url=server.url, max_concurrency=1)
    with pytest.raises(LLMRequestError, match="no"):
        backend.chat_batch(_questions(10))
    assert len(server.questions) < 10


@pytest.mark.parametrize("setting", ["max_concurrency", "score_batch", "generate_batch"])
def test_settings_below_one_are_refused(setting):
    with pytest.raises(ValueError, match=f"{setting} must be >= 1, got 0"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", **{setting: 0})


class BatchOnly:
    """A backend whose conversations must come as batches: ``chat`` fails."""

    model_name = "batch-only"

    def __init__(self) -> None:
        self.usage = TokenUsage()
        self.batches: list[list[str]] = []

    def chat(self, messages, **sampling):
        raise AssertionError("a batch was split into single chats")

    def chat_batch(self, conversations, **sampling):
        questions = [c[-1]["content"] for c in conversations]
        self.batches.append(questions)
        return [f"answer to {q}" for q in questions]


def test_the_cache_serves_hits_and_sends_the_misses_as_one_batch(tmp_path):
    inner = BatchOnly()
    backend = CachedBackend(inner, ResponseCache(tmp_path / "c.sqlite"))
    assert backend.chat_batch(_questions(3)) == ["answer to q0", "answer to q1", "answer to q2"]
    again = backend.chat_batch([*_questions(4)[::-1], *_questions(5)[4:]])
    assert again == ["answer to q3", "answer to q2", "answer to q1", "answer to q0", "answer to q4"]
    assert inner.batches == [["q0", "q1", "q2"], ["q3", "q4"]] and inner.usage.cache_hits == 3
    assert backend.chat(_questions(1)[0]) == "answer to q0" and inner.usage.cache_hits == 4
    sampled = backend.chat_batch(_questions(2), temperature=1.0)  # not cached: straight to the batch
    assert sampled == ["answer to q0", "answer to q1"] and inner.batches[-1] == ["q0", "q1"]


def test_the_lamorel_caller_answers_conversations_as_one_batch(tiny_models, monkeypatch):
    from textagents.llm.lamorel import Caller, LLMSpec
    from textagents.llm.transformers_backend import TransformersBackend

    expected = TransformersBackend(tiny_models.causal).chat_batch(CONVERSATIONS, max_tokens=4)
    batches: list[int] = []
    batched = TransformersBackend.chat_batch

    def counted(self, conversations, **sampling):
        batches.append(len(conversations))
        return batched(self, conversations, **sampling)

    monkeypatch.setattr(TransformersBackend, "chat_batch", counted)
    monkeypatch.setattr(TransformersBackend, "chat", lambda *a, **k: pytest.fail("a batch was split into chats"))
    with Caller(LLMSpec(str(tiny_models.causal), {}, seed=3)) as caller:
        assert caller.chat_batch(CONVERSATIONS, max_tokens=4) == expected
        assert caller.chat(CONVERSATIONS[0], max_tokens=4) == expected[0]
    assert batches == [len(CONVERSATIONS), 1]


def test_the_runner_builds_the_server_backend_with_max_concurrency_from_config_or_command_line(tmp_path):
    from textagents.methods.core.config import MethodConfig, config_from_dict
    from textagents.methods.core.run_dir import RunDir
    from textagents.methods.core.runner import LLMChoice, _llm_factory

    raw = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "max_concurrency": 3}
    for choice, expected in ((LLMChoice(), 3), (LLMChoice(max_concurrency=5), 5)):
        config = config_from_dict(MethodConfig, raw, "config.yaml", choice.config_overrides())
        assert _llm_factory(config, RunDir(tmp_path / str(expected)), choice)().backend.max_concurrency == expected


def test_a_bad_max_concurrency_is_refused_naming_it(capsys):
    from textagents.cli import main
    from textagents.methods.core.config import ConfigError, MethodConfig, config_from_dict

    with pytest.raises(ConfigError, match=r"config.yaml: max_concurrency must be >= 1, got 0"):
        config_from_dict(MethodConfig, {"max_concurrency": 0}, "config.yaml")
    with pytest.raises(SystemExit) as exited:
        main(["method", "run", "example", "config.yaml", "--out", "run", "--max-concurrency", "0"])
    assert exited.value.code == 2
    assert "argument --max-concurrency: expected an integer >= 1, got '0'" in capsys.readouterr().err


def test_a_run_resumes_with_another_max_concurrency(tmp_path, monkeypatch):
    from pathlib import Path

    from textagents.methods.core.runner import LLMChoice, run_method

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    out, smoke = tmp_path / "run", "benchmarks/methods/example/smoke.yaml"
    run_method("example", smoke, out, llm=LLMChoice(max_concurrency=2), progress=False)
    assert json.loads((out / "config.json").read_text())["config"]["max_concurrency"] == 2
    run_method("example", smoke, out, llm=LLMChoice(max_concurrency=16), progress=False, resume=True)
