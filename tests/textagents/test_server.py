"""The real ``openai`` client against ``textagents serve`` on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import select
import selectors
import socket
import threading
from collections.abc import Iterator

import openai
import pytest

from tests.textagents.reference import hand_scores
from textagents.llm import OpenAIBackend
from textagents.llm.base import Sampling
from textagents.llm.server import ModelHTTPServer, host_allowed
from textagents.llm.server_api import Limits, RequestError
from textagents.llm.server_queue import ClientGone, ModelQueue

CONTEXTS = ["Goal: reach the door\nObservation: You are in cell 0 of 5.\nAction:", "You see a red ball. Action:"]
CANDIDATES = [[" go right", " go left", " wait"], [" pick up", " turn left"]]


@pytest.fixture(scope="module")
def server(causal_backend):
    limits = Limits(max_request_bytes=20_000, max_prompts=8, max_request_tokens=6_000)
    running = ModelHTTPServer(causal_backend, port=0, model_name="tiny", limits=limits).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=60)


def test_models_lists_the_served_model(client):
    assert [m.id for m in client.models.list().data] == ["tiny"]


def test_completions_match_in_process_generation(client, causal_backend):
    response = client.completions.create(model="tiny", prompt=CONTEXTS, max_tokens=5, temperature=0)
    assert [c.text for c in sorted(response.choices, key=lambda c: c.index)] == causal_backend.generate(
        CONTEXTS, max_tokens=5
    )
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens <= 10


def test_completion_logprobs_and_echo(client, causal_backend):
    response = client.completions.create(
        model="tiny", prompt=CONTEXTS[1], max_tokens=3, temperature=0, logprobs=2, echo=True
    )
    choice = response.choices[0]
    echoed = causal_backend.prompt_logprobs(CONTEXTS[1])
    prompt_tokens = len(echoed.tokens)
    assert choice.text.startswith(CONTEXTS[1])
    assert choice.logprobs.tokens[:prompt_tokens] == echoed.tokens
    assert choice.logprobs.token_logprobs[0] is None
    assert choice.logprobs.token_logprobs[1:prompt_tokens] == pytest.approx(echoed.token_logprobs[1:], abs=1e-5)
    assert len(choice.logprobs.tokens) == prompt_tokens + response.usage.completion_tokens
    assert all(len(top) <= 2 for top in choice.logprobs.top_logprobs[1:])
    # Offsets index the returned text: each token starts where its offset says.
    for token, offset in zip(choice.logprobs.tokens, choice.logprobs.text_offset, strict=True):
        assert choice.text[offset:].startswith(token)
    # Greedy generation picks the most likely token: its log-prob is the top alternative's.
    first_generated = prompt_tokens
    if len(choice.logprobs.tokens) > first_generated:
        top = choice.logprobs.top_logprobs[first_generated]
        assert choice.logprobs.token_logprobs[first_generated] == pytest.approx(max(top.values()), abs=1e-5)


def test_chat_with_logprobs_and_streaming(client, causal_backend):
    messages = [{"role": "system", "content": "You are a robot."}, {"role": "user", "content": "reach the door"}]
    response = client.chat.completions.create(
        model="tiny", messages=messages, max_tokens=4, temperature=0, logprobs=True, top_logprobs=3
    )
    content = response.choices[0].message.content
    assert content == causal_backend.chat(messages, max_tokens=4)
    entries = response.choices[0].logprobs.content
    assert "".join(e.token for e in entries) == content
    assert all(len(e.top_logprobs) == 3 and e.logprob <= 0 for e in entries)
    stream = client.chat.completions.create(model="tiny", messages=messages, max_tokens=4, temperature=0, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream) == content


def test_score_through_the_server_equals_in_process_and_by_hand(server, causal_backend):
    backend = OpenAIBackend("tiny", base_url=server.url, score_batch=2)
    remote = backend.score(CONTEXTS, CANDIDATES)
    assert backend.usage.requests == 3  # 5 (context, candidate) prompts, 2 per request
    local = causal_backend.score(CONTEXTS, CANDIDATES)
    for context, options, remote_row, local_row in zip(CONTEXTS, CANDIDATES, remote, local, strict=True):
        by_hand = [hand_scores(causal_backend, context, c) for c in options]
        assert remote_row == pytest.approx(local_row, abs=1e-4)
        assert local_row == pytest.approx(by_hand, abs=1e-4)


def test_openai_backend_generate_and_chat_through_the_server(server, causal_backend):
    backend = OpenAIBackend("tiny", base_url=server.url)
    assert backend.generate(CONTEXTS, max_tokens=4) == causal_backend.generate(CONTEXTS, max_tokens=4)
    messages = [{"role": "user", "content": "hello"}]
    assert backend.chat(messages, max_tokens=4) == causal_backend.chat(messages, max_tokens=4)
    assert backend.usage.requests == 2 and backend.usage.completion_tokens > 0


def _raw_post(server, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    payload = json.loads(response.read())
    connection.close()
    return response.status, payload


def test_malformed_json_is_a_400_with_a_message(server):
    status, payload = _raw_post(server, "/v1/completions", b'{"prompt": "hi", ')
    assert status == 400 and "malformed JSON" in payload["error"]["message"]
    status, payload = _raw_post(server, "/v1/completions", b"[1, 2]")
    assert status == 400 and "must be an object" in payload["error"]["message"]


def test_oversized_requests_are_refused(server):
    status, payload = _raw_post(server, "/v1/completions", json.dumps({"prompt": "x" * 30_000}).encode())
    assert status == 413 and "exceeds the limit of 20000 bytes" in payload["error"]["message"]


def test_bad_fields_unknown_model_and_routes(client, server):
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.completions.create(model="tiny", prompt="hi", max_tokens=10**6)
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="tiny", messages=[{"role": "user"}])
    with pytest.raises(openai.NotFoundError, match="available: 'tiny'"):
        client.completions.create(model="gpt-9", prompt="hi", max_tokens=1)
    status, payload = _raw_post(server, "/v1/embeddings", b"{}")
    assert status == 404 and "POST /v1/chat/completions" in payload["error"]["message"]


def test_api_key_is_required_when_set(causal_backend):
    guarded = ModelHTTPServer(causal_backend, port=0, model_name="tiny", api_key="s3cret").start()
    try:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=guarded.url, api_key="wrong", max_retries=0).models.list()
        ok = openai.OpenAI(base_url=guarded.url, api_key="s3cret", max_retries=0)
        assert ok.models.list().data[0].id == "tiny"
    finally:
        guarded.stop()


def test_server_binds_loopback_by_default(causal_backend):
    default = ModelHTTPServer(causal_backend, port=0)
    try:
        assert default.server_address[0] == "127.0.0.1"
    finally:
        default.stop()  # never started: closes without waiting for a serving loop


def test_sampling_fields_are_validated():
    with pytest.raises(ValueError, match="top_p"):
        Sampling.of(top_p=0)
    with pytest.raises(TypeError, match="unknown sampling argument"):
        Sampling.of(beams=4)


def test_score_with_token_ids_is_exact_for_glam_prompts(server, causal_backend, tiny_models):
    # GLAM's prompt ends with "Action 0: " and candidates have no leading space: text scoring would let the
    # server merge the boundary; token ids keep context and candidate tokenized apart, as lamorel does.
    contexts = [
        "Possible action of the agent: turn left, go forward \n Goal of the agent: go to the red ball \n"
        " Observation 0: You see a wall 2 steps forward, \n Action 0: "
    ]
    candidates = [["turn left", "go forward", "toggle"]]
    remote = OpenAIBackend("tiny", base_url=server.url, tokenizer=str(tiny_models.causal))
    local = causal_backend.score(contexts, candidates)[0]
    by_hand = [hand_scores(causal_backend, contexts[0], c) for c in candidates[0]]
    assert remote.score(contexts, candidates)[0] == pytest.approx(local, abs=1e-4)
    assert local == pytest.approx(by_hand, abs=1e-4)


def test_token_id_prompts_through_the_client(client, causal_backend):
    ids = causal_backend.encode(CONTEXTS[0])
    response = client.completions.create(model="tiny", prompt=ids, max_tokens=0, echo=True, logprobs=1)
    assert response.choices[0].text == causal_backend.tokenizer.decode(ids)
    assert len(response.choices[0].logprobs.tokens) == len(ids)
    with pytest.raises(openai.BadRequestError, match="token ids must be in"):
        client.completions.create(model="tiny", prompt=[10**7], max_tokens=1)


def test_streamed_completion_and_missing_length(client, server, causal_backend):
    stream = client.completions.create(model="tiny", prompt=CONTEXTS[0], max_tokens=4, temperature=0, stream=True)
    assert "".join(chunk.choices[0].text for chunk in stream) == causal_backend.generate([CONTEXTS[0]], max_tokens=4)[0]
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.putrequest("POST", "/v1/completions")
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 411 and "Content-Length" in json.loads(response.read())["error"]["message"]
    connection.close()


# ---------------------------------------------------------------------- hardening (issue #20)
def test_a_request_over_the_caps_is_refused_with_the_cap(client):
    with pytest.raises(openai.BadRequestError, match="holds 9 prompts; this server takes at most 8 per request"):
        client.completions.create(model="tiny", prompt=["go"] * 9, max_tokens=1)
    with pytest.raises(openai.BadRequestError, match="takes at most 6000 per request"):
        client.completions.create(model="tiny", prompt=["go"] * 8, max_tokens=1000)


def test_an_over_long_prompt_is_a_400_naming_the_context_length(client):
    # The tiny model's context is 4096 tokens; the position embeddings used to raise IndexError (a 500, which
    # the openai client retries).
    with pytest.raises(openai.BadRequestError, match="maximum context length is 4096 tokens; the prompt has 4097"):
        client.completions.create(model="tiny", prompt=[1] * 4097, max_tokens=0, echo=True, logprobs=0)
    with pytest.raises(openai.BadRequestError, match="has 4000 tokens and max_tokens asks for 200 more"):
        client.completions.create(model="tiny", prompt=[1] * 4000, max_tokens=200)
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "go " * 5000}])


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        ("/v1/completions", b'{"prompt": "hi", "seed": 18446744073709551616}', "'seed' must be in 0.."),
        ("/v1/completions", b'{"prompt": "hi", "seed": -1}', "'seed' must be in 0.."),
        ("/v1/completions", b'{"prompt": "hi", "temperature": NaN}', "NaN is not a JSON number"),
        ("/v1/completions", b'{"prompt": "hi", "temperature": Infinity}', "Infinity is not a JSON number"),
        ("/v1/completions", b'{"prompt": "hi", "temperature": 1e999}', "the number 1e999 is out of range"),
        ("/v1/completions", b'{"prompt": "hi", "temperature": -0.5}', "'temperature' must be in 0..2"),
        ("/v1/completions", b'{"prompt": "hi", "top_p": 1e300}', "'top_p' must be in 0..1"),
        ("/v1/completions", b'{"prompt": "hi", "max_tokens": ' + b"9" * 5000 + b"}", "malformed JSON"),
        ("/v1/completions", b'{"prompt": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
        ("/v1/completions", b'{"prompt": "\\ud800 go"}', "lone surrogate \\ud800"),
        ("/v1/completions", b'{"prompt": "go", "stop": ["\\udfff"]}', "lone surrogate"),
        ("/v1/completions", b'{"prompt": "\xff\xfe"}', "malformed JSON"),
        ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "\\ud83d"}]}', "lone surrogate"),
        ("/v1/completions", b'{"prompt": "hi", "stream": "yes"}', "'stream' must be bool, got str"),
        ("/v1/completions", b'{"prompt": "hi", "top_p": 0}', "'top_p' must be in (0, 1]"),
    ],
)
def test_malformed_values_are_400s_not_500s(server, path, body, expected):
    status, payload = _raw_post(server, path, body)
    assert status == 400, payload
    assert payload["error"]["type"] == "invalid_request_error" and expected in payload["error"]["message"]


def _raw_get(server, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection(*server.server_address, timeout=30)
    connection.request("GET", "/v1/models", headers=headers)
    status = connection.getresponse().status
    connection.close()
    return status


def test_web_pages_cannot_drive_the_server(server):
    port = server.server_address[1]
    # DNS rebinding: a page at http://evil.example:PORT whose name now resolves to 127.0.0.1 sends its own Host.
    assert _raw_get(server, {"Host": f"evil.example:{port}"}) == 403
    assert _raw_get(server, {"Host": f"localhost:{port}"}) == 200
    assert _raw_get(server, {"Origin": "http://evil.example"}) == 403  # a cross-site request from a browser
    status, payload = _raw_post(server, "/v1/completions", b'{"prompt": "hi"}', {"Host": "evil.example"})
    assert status == 403 and "--allowed-host" in payload["error"]["message"]


def test_host_rule():
    assert host_allowed("127.0.0.1:8000", ()) and host_allowed("[::1]:8000", ()) and host_allowed("LocalHost", ())
    assert host_allowed("10.1.2.3", ()) and not host_allowed("evil.example:8000", ())
    assert host_allowed("planner.lan:8000", ["planner.lan"]) and host_allowed("any.name", ["*"])
    assert not host_allowed("[::1", ()) and not host_allowed("", ())


def _read_until_closed(sock: socket.socket) -> bytes:
    sock.settimeout(30)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_body_on_a_kept_alive_connection_is_never_read_as_a_request(server):
    # The hand-written server did not read a GET's body, so a request hidden in it ran as the next one.
    hidden = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    head = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(hidden)
    with socket.create_connection(server.server_address) as sock:
        sock.sendall(head + hidden)
        sock.shutdown(socket.SHUT_WR)
        assert _read_until_closed(sock).count(b"HTTP/1.1 ") == 1


def test_the_listen_backlog_holds_hundreds_of_waiting_connections(causal_backend):
    # The kernel completes handshakes up to the backlog while nobody accepts (here: a server never started);
    # the hand-written server's backlog of 5 left the rest of 256 clients hanging, then reset.
    idle = ModelHTTPServer(causal_backend, port=0)
    clients: list[socket.socket] = []
    try:
        with selectors.DefaultSelector() as selector:
            for _ in range(256):
                client = socket.socket()
                clients.append(client)
                client.setblocking(False)
                client.connect_ex(idle.server_address)
                selector.register(client, selectors.EVENT_WRITE)
            connected = 0
            while events := selector.select(timeout=5):
                for key, _ in events:
                    selector.unregister(key.fileobj)
                    connected += key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
        assert connected == 256
    finally:
        for client in clients:
            client.close()
        idle.stop()


def test_concurrent_clients_are_all_answered(server):
    answers: list[int] = []
    start = threading.Barrier(48)

    def ask() -> None:
        start.wait(30)
        answers.append(_raw_post(server, "/v1/completions", b'{"prompt": "go", "max_tokens": 1}')[0])

    threads = [threading.Thread(target=ask) for _ in range(48)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert answers == [200] * 48


def test_the_model_queue_is_first_come_first_served_bounded_and_timed():
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        queue = ModelQueue(max_pending=5, timeout=0.2)
        release = threading.Event()
        ran: list[str] = []

        def job(name: str):
            return lambda: ran.append(name) or release.wait(30)

        def ask(name: str, deadline: float, disconnected: asyncio.Future | None = None) -> asyncio.Task:
            return asyncio.create_task(queue.run(job(name), deadline, disconnected or loop.create_future()))

        far = loop.time() + 60
        waiting = [ask("blocker", far), ask("queued 0", far), ask("queued 1", far)]
        await asyncio.sleep(0)
        # one more waits until its deadline: 503, and its job never runs
        with pytest.raises(RequestError, match=r"timed out after 0.2 s \(waiting for the model\)") as timed_out:
            await ask("timed out", loop.time() + 0.2)
        assert timed_out.value.status == 503
        gone = loop.create_future()
        left = ask("client gone", far, gone)
        waiting.append(ask("late", far))
        await asyncio.sleep(0)
        with pytest.raises(RequestError, match="5 requests are already waiting") as refused:
            await ask("refused", far)
        assert refused.value.status == 429
        gone.set_result(None)  # the client disconnected while its job waited: it gives its place up
        await asyncio.wait([left])
        assert isinstance(left.exception(), ClientGone)
        release.set()
        await asyncio.gather(*waiting)
        queue.close()
        return ran

    assert asyncio.run(scenario()) == ["blocker", "queued 0", "queued 1", "late"]


def _eventually(condition) -> bool:
    """Whether ``condition()`` holds within 10 s (polled; the server thread acts meanwhile)."""
    for _ in range(1000):
        if condition():
            return True
        threading.Event().wait(0.01)
    return False


@contextlib.contextmanager
def _busy_server(backend, request_timeout: float) -> Iterator[ModelHTTPServer]:
    """A server whose model is busy with a long job until the block ends; no other job runs meanwhile."""
    busy = ModelHTTPServer(backend, port=0, limits=Limits(request_timeout=request_timeout)).start()
    release = threading.Event()
    try:
        busy.queue.submit(lambda: release.wait(60))
        tokens = backend.usage.total_tokens
        yield busy
        release.set()
        assert _eventually(lambda: busy.queue.pending == 0)
        assert backend.usage.total_tokens == tokens  # no request's job ran
    finally:
        release.set()
        busy.stop()


COMPLETION = b'{"prompt": "go", "max_tokens": 1}'


def test_a_request_behind_a_busy_model_times_out_and_never_runs(causal_backend):
    with _busy_server(causal_backend, request_timeout=0.5) as busy:
        status, payload = _raw_post(busy, "/v1/completions", COMPLETION)
        assert status == 503 and "timed out after 0.5 s (waiting for the model)" in payload["error"]["message"]


def test_a_client_that_hangs_up_while_waiting_leaves_the_queue(causal_backend):
    with _busy_server(causal_backend, request_timeout=60) as busy:
        with socket.create_connection(busy.server_address) as sock:
            head = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n"
            sock.sendall(head % len(COMPLETION) + COMPLETION)
            assert _eventually(lambda: busy.queue.pending == 2)
        assert _eventually(lambda: busy.queue.pending == 1)


# ---------------------------------------------------------------------- hostile inputs and slow clients
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"prompt": ""}, "the prompt is empty (no tokens)"),
        ({"prompt": [""]}, "the prompt is empty (no tokens)"),
        ({"prompt": "", "stream": True}, "the prompt is empty (no tokens)"),
        ({"prompt": "", "max_tokens": 0, "echo": True, "logprobs": 1}, "the prompt is empty (no tokens)"),
        ({"prompt": ["go", ""]}, "prompt 1 is empty (no tokens)"),
    ],
)
def test_an_empty_prompt_is_a_400_naming_it(server, body, expected):
    # The tiny model's tokenizer adds no BOS token: "" has no tokens, and generation raised IndexError (a 500).
    status, payload = _raw_post(server, "/v1/completions", json.dumps(body).encode())
    assert status == 400 and payload["error"]["param"] == "prompt", payload
    assert expected in payload["error"]["message"]


def test_chat_with_empty_contents_is_answered(client):
    # The template (or transcript) adds its own tokens around the contents: nothing to refuse.
    reply = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": ""}], max_tokens=1)
    assert reply.choices[0].finish_reason in ("stop", "length")


def test_messages_a_chat_template_refuses_are_a_400(server, causal_backend, monkeypatch):
    template = (
        "{% for m in messages %}{% if m['role'] not in ('system', 'user', 'assistant') %}"
        "{{ raise_exception('unknown role ' + m['role']) }}{% endif %}{{ m['role'] }}: {{ m['content'] }}\n"
        "{% endfor %}assistant:"
    )
    monkeypatch.setattr(causal_backend.tokenizer, "chat_template", template, raising=False)
    body = {"messages": [{"role": "wizard", "content": "go"}], "max_tokens": 1}
    status, payload = _raw_post(server, "/v1/chat/completions", json.dumps(body).encode())
    assert status == 400 and payload["error"]["param"] == "messages", payload
    assert "chat template refuses these messages: 'unknown role wizard'" in payload["error"]["message"]


def test_a_vanishing_temperature_decodes_greedily(client, causal_backend):
    # Logits divided by 1e-300 (0 in float32) were infinite: "probability tensor contains inf", a 500.
    response = client.completions.create(model="tiny", prompt=CONTEXTS[0], max_tokens=4, temperature=1e-300)
    assert response.choices[0].text == causal_backend.generate([CONTEXTS[0]], max_tokens=4)[0]


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        (["x"] * 5, "'stop' holds 5 strings; this server takes at most 4"),
        ("x" * 65, "a stop string of 65 characters ('xxx"),
        (["\n", "y" * 10_000], "longer than this server's limit of 64 characters"),
    ],
)
def test_stop_strings_are_capped_in_number_and_length(server, stop, expected):
    # 100,000 stop strings held the model for 55 s: transformers builds a table per string over the vocabulary.
    body = json.dumps({"prompt": "go", "max_tokens": 1, "stop": stop}).encode()
    status, payload = _raw_post(server, "/v1/completions", body)
    assert status == 400 and payload["error"]["param"] == "stop", payload
    assert expected in payload["error"]["message"] and len(payload["error"]["message"]) < 200


def test_the_most_stop_strings_allowed_are_served(client):
    response = client.completions.create(model="tiny", prompt="go", max_tokens=2, stop=["a" * 64, "b", "c", "\n"])
    assert response.choices[0].finish_reason in ("stop", "length")


@pytest.mark.parametrize(
    ("field", "value", "status"),
    [
        ("model", '"' + "x" * 10_000 + '"', 404),
        ("n", '"' + "x" * 10_000 + '"', 400),
        ("stop", json.dumps(["w"] * 3_000), 400),
        ("echo", json.dumps(["w"] * 3_000), 400),
        ("seed", "9" * 4_000, 400),
        ("temperature", "1" * 10_000 + "e999", 400),
    ],
)
def test_error_messages_never_quote_a_whole_long_value(server, field, value, status):
    body = b'{"prompt": "go", "max_tokens": 1, "%s": %s}' % (field.encode(), value.encode())
    answered, payload = _raw_post(server, "/v1/completions", body)
    assert answered == status and len(payload["error"]["message"]) < 200, payload


@pytest.fixture(scope="module")
def impatient_server(causal_backend):
    limits = Limits(max_request_bytes=20_000, header_timeout=0.5, body_timeout=0.5)
    running = ModelHTTPServer(causal_backend, port=0, model_name="tiny", limits=limits).start()
    yield running
    running.stop()


def _drip_until_closed(sock: socket.socket, data: bytes, seconds: float = 10) -> tuple[bytes, bool]:
    """A slow client: sends ``data`` a byte every 0.1 s while reading; what it read, and whether the server
    closed the connection within ``seconds``."""
    received = b""
    for step in range(int(seconds / 0.1)):
        try:
            if step < len(data):
                sock.sendall(data[step : step + 1])
            if select.select([sock], [], [], 0.1)[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return received, True
                received += chunk
        except (BrokenPipeError, ConnectionResetError):
            return received, True
    return received, False


ENDLESS_HEADERS = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000
ENDLESS_BODY = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 30000\r\n\r\n"


@pytest.mark.parametrize("data", [b"", ENDLESS_HEADERS], ids=["silent", "slow headers"])
def test_a_connection_whose_headers_never_complete_is_closed(impatient_server, data):
    # uvicorn waited for ever for a request's headers: its keep-alive timer only runs between requests.
    with socket.create_connection(impatient_server.server_address) as sock:
        received, closed = _drip_until_closed(sock, data)  # the server closes it after 0.5 s
    assert closed and received == b""


def test_a_kept_alive_connection_whose_next_headers_never_complete_is_closed(impatient_server):
    # ... and the first byte of the next request on a kept-alive connection stopped the keep-alive timer.
    connection = http.client.HTTPConnection(*impatient_server.server_address, timeout=30)
    connection.request("GET", "/v1/models")
    assert connection.getresponse().read()
    received, closed = _drip_until_closed(connection.sock, ENDLESS_HEADERS)
    connection.close()
    assert closed and received == b""


def test_a_body_that_never_completes_is_a_408_and_the_connection_closes(impatient_server):
    with socket.create_connection(impatient_server.server_address) as sock:
        sock.sendall(ENDLESS_BODY.replace(b"30000", b"1000"))  # under the 20 kB cap: it is read
        received, closed = _drip_until_closed(sock, b'{"prompt": "' + b"a" * 1000)
    assert closed and received.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 0.5 s" in received


def test_the_rest_of_a_body_answered_early_is_read_under_the_header_deadline(impatient_server):
    # A 413 for a declared 30 kB body: the server went on reading the body for as long as the client sent it.
    with socket.create_connection(impatient_server.server_address) as sock:
        sock.sendall(ENDLESS_BODY)
        received, closed = _drip_until_closed(sock, b'{"prompt": "' + b"a" * 1000)
    assert closed and received.startswith(b"HTTP/1.1 413 ")
