"""The real ``openai`` client against ``textagents serve`` on loopback."""

from __future__ import annotations

import http.client
import json

import openai
import pytest

from tests.textagents.reference import hand_scores
from textagents.llm import OpenAIBackend
from textagents.llm.base import Sampling
from textagents.llm.server import ModelHTTPServer

CONTEXTS = ["Goal: reach the door\nObservation: You are in cell 0 of 5.\nAction:", "You see a red ball. Action:"]
CANDIDATES = [[" go right", " go left", " wait"], [" pick up", " turn left"]]


@pytest.fixture(scope="module")
def server(causal_backend):
    running = ModelHTTPServer(causal_backend, port=0, model_name="tiny", max_request_bytes=20_000).start()
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
