"""``textagents serve``: an OpenAI-compatible HTTP server over a local ``transformers`` model.

Endpoints: ``GET /v1/models``, ``POST /v1/completions`` (``logprobs``, ``echo``, ``stream``),
``POST /v1/chat/completions`` (``logprobs``/``top_logprobs``, ``stream``), and with ``lora`` limits
(``--enable-lora``) vLLM's ``POST /v1/load_lora_adapter`` and ``POST /v1/unload_lora_adapter``
(``server_lora``). HTTP is uvicorn's (h11: strict
message framing, so a body is never read as the next request on a kept-alive connection; a listen backlog
of ``BACKLOG``); this module is the ASGI application over ``server_api`` (the checked requests) and
``server_queue`` (the model's fair queue), and the server object that runs it.

Slow clients: uvicorn closes idle kept-alive connections, but waits for ever for a request's headers and body.
Here a connection whose next request line and headers are not complete ``Limits.header_timeout`` seconds after
it opened or after its previous answer is closed (the rest of a body answered early, e.g. by a 413, counts in
that time), and a body not complete ``Limits.body_timeout`` seconds after its headers is a 408.

Who may ask: the server binds 127.0.0.1 unless told otherwise; the ``Host`` header must be an IP address,
``localhost`` or an allowed name (a web page that rebinds its own DNS name to this machine is refused,
403); requests from web pages (an ``Origin`` header) are refused (403); with an API key set, requests need
``Authorization: Bearer <key>`` (401). Errors are answered in OpenAI's format; an internal failure is a 500
with the exception's message and the server keeps running.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import ipaddress
import json
import socket
import threading
from collections.abc import Callable, Collection
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from textagents.llm.server_api import (
    Job,
    Limits,
    OpenAIEndpoints,
    RequestError,
    error_body,
    parse_body,
    quoted,
    stream_chunks,
    wants_stream,
)
from textagents.llm.server_lora import LoraAdapters, LoraLimits
from textagents.llm.server_queue import ClientGone, ModelQueue
from textagents.llm.transformers_backend import TransformersBackend

#: Connections the kernel holds for the server before it accepts them (the system's somaxconn caps it).
BACKLOG = 2048
#: Seconds ``stop`` gives open requests to finish.
SHUTDOWN_GRACE = 5


def host_allowed(host: str, allowed_hosts: Collection[str]) -> bool:
    """Whether a ``Host`` header names this server: an IP address, ``localhost`` or one of ``allowed_hosts``
    (``"*"`` allows any). A DNS rebinding page sends its own name, never an IP address."""
    try:
        name = urlsplit(f"//{host}").hostname  # without the port and an IPv6 address's brackets, lowercased
    except ValueError:
        return False
    if name is None:
        return False
    if name == "localhost" or name in allowed_hosts or "*" in allowed_hosts:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _json(status: HTTPStatus, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body), status_code=status, media_type="application/json")


def _event_stream(response: dict[str, Any]) -> Response:
    events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in stream_chunks(response)) + "data: [DONE]\n\n"
    return Response(events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, which closes a connection whose next request line and headers are not complete
    ``header_timeout`` seconds after it opened or after its previous answer (uvicorn's keep-alive timer stops
    at a request's first byte, and reads the rest of a body answered early for as long as it comes)."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self.header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self._start_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # uvicorn starts a cycle for each request whose headers it parsed
            self._stop_header_deadline()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._start_header_deadline()
        super().on_response_complete()  # parses a pipelined request, which stops the new deadline

    def _start_header_deadline(self) -> None:
        self._stop_header_deadline()
        self.header_deadline = self.loop.call_later(self.header_timeout, self.transport.close)

    def _stop_header_deadline(self) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
            self.header_deadline = None


async def _read_chunks(request: Request, max_bytes: int, too_large: RequestError) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_body(request: Request, max_bytes: int, timeout: float) -> bytes:
    """The body, which needs a ``Content-Length`` (411) of at most ``max_bytes`` (413) and must arrive within
    ``timeout`` seconds (408)."""
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a JSON body with a Content-Length header is required")
    too_large = RequestError(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"request body of {length} bytes exceeds the limit of {max_bytes} bytes"
    )
    if int(length) > max_bytes:
        raise too_large
    try:
        return await asyncio.wait_for(_read_chunks(request, max_bytes, too_large), timeout)
    except asyncio.TimeoutError as error:
        message = f"the request body did not arrive within {timeout:g} s"
        raise RequestError(HTTPStatus.REQUEST_TIMEOUT, message) from error


async def _disconnected(receive: Receive) -> None:
    """Returns when the client has gone (after the body was read, the next message is the disconnect)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class OpenAIApp:
    """The ASGI application: checks who asks, reads and checks the request, queues its job for the model,
    and answers (JSON or server-sent events)."""

    def __init__(
        self,
        endpoints: OpenAIEndpoints,
        queue: ModelQueue,
        api_key: str | None = None,
        allowed_hosts: Collection[str] = (),
    ):
        self.endpoints = endpoints
        self.queue = queue
        self.api_key = api_key
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.routes: dict[tuple[str, str], Callable[[dict[str, Any]], Job] | None] = {
            ("GET", "/v1/models"): None,
            ("POST", "/v1/completions"): endpoints.completions,
            ("POST", "/v1/chat/completions"): endpoints.chat_completions,
        }
        if endpoints.adapters is not None:
            self.routes[("POST", "/v1/load_lora_adapter")] = endpoints.adapters.load
            self.routes[("POST", "/v1/unload_lora_adapter")] = endpoints.adapters.unload
        #: Internal errors answered (500s) since the start.
        self.errors = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self._respond(request)
        await response(scope, receive, send)

    def _check_caller(self, headers: Headers) -> None:
        host = headers.get("host")
        if host is not None and not host_allowed(host, self.allowed_hosts):
            message = (
                f"Host {quoted(host)} is not a name of this server: use its IP address or localhost, or start it with "
                "--allowed-host NAME (requests through other names are refused against DNS rebinding)"
            )
            raise RequestError(HTTPStatus.FORBIDDEN, message)
        if "origin" in headers:
            message = f"requests from web pages (Origin {quoted(headers['origin'])}) are refused"
            raise RequestError(HTTPStatus.FORBIDDEN, message)
        if self.api_key is not None:
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.api_key}".encode()):
                raise RequestError(HTTPStatus.UNAUTHORIZED, "missing or wrong API key (Authorization: Bearer ...)")

    def _prepare(self, endpoint: Callable[[dict[str, Any]], Job], raw: bytes) -> tuple[bool, Job]:
        """Whether the answer is streamed, and the request's job."""
        body = parse_body(raw)
        return wants_stream(body), endpoint(body)

    async def _respond(self, request: Request) -> Response:
        deadline = asyncio.get_running_loop().time() + self.queue.timeout
        try:
            self._check_caller(request.headers)
            method, path = request.method, request.url.path.rstrip("/")
            if (method, path) not in self.routes:
                known = ", ".join(f"{m} {p}" for m, p in self.routes)
                raise RequestError(HTTPStatus.NOT_FOUND, f"no route {method} {path}; routes: {known}")
            endpoint = self.routes[(method, path)]
            if endpoint is None:
                return _json(HTTPStatus.OK, self.endpoints.models())
            limits = self.endpoints.limits
            raw = await _read_body(request, limits.max_request_bytes, limits.body_timeout)
            stream, job = await run_in_threadpool(self._prepare, endpoint, raw)
            response = await self.queue.run(job, deadline, _disconnected(request.receive))
            if isinstance(response, str):
                return Response(response, media_type="text/plain")  # as vLLM answers a loaded adapter
            return _event_stream(response) if stream else _json(HTTPStatus.OK, response)
        except RequestError as error:
            return _json(error.status, error_body(error.status, str(error), error.param))
        except (ClientGone, ClientDisconnect):
            return Response(status_code=HTTPStatus.NO_CONTENT)  # nobody reads it
        except Exception as error:  # a bug or a model failure: report it without killing the server
            self.errors += 1
            message = f"internal error: {type(error).__name__}: {error}"
            status = HTTPStatus.INTERNAL_SERVER_ERROR
            return _json(status, error_body(status, message))


class ModelHTTPServer:
    """The server: its socket is bound and listening from construction (``port=0`` picks a free port);
    ``start()`` serves from a background thread (tests), ``serve_forever()`` blocks (the CLI; Ctrl-C stops).

    Arguments:
        backend: the model.
        host, port: where to listen; 127.0.0.1 (this machine only) by default.
        model_name: the name clients use (default: the backend's).
        api_key: the key clients must send; None: no key.
        limits: per-request caps, the queue's length and the request timeout.
        allowed_hosts: names besides IP addresses and ``localhost`` that clients may reach it by.
        lora: the adapters clients may load at run time (``server_lora``); None: none (no such routes).
        verbose: log every request.
    """

    def __init__(
        self,
        backend: TransformersBackend,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        model_name: str | None = None,
        api_key: str | None = None,
        limits: Limits | None = None,
        allowed_hosts: Collection[str] = (),
        lora: LoraLimits | None = None,
        verbose: bool = False,
    ):
        limits = limits or Limits()
        name = model_name or backend.model_name
        adapters = LoraAdapters(backend, name, lora) if lora is not None else None
        self.endpoints = OpenAIEndpoints(backend, name, limits, adapters)
        self.queue = ModelQueue(limits.max_queue, limits.request_timeout)
        self.app = OpenAIApp(self.endpoints, self.queue, api_key=api_key, allowed_hosts=allowed_hosts)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family, backlog=BACKLOG)
        config = uvicorn.Config(
            self.app,
            http=functools.partial(DeadlineH11Protocol, header_timeout=limits.header_timeout),
            ws="none",
            lifespan="off",
            backlog=BACKLOG,
            proxy_headers=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE,
            log_config=uvicorn.config.LOGGING_CONFIG if verbose else None,
            log_level="info" if verbose else "warning",
            access_log=verbose,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def server_address(self) -> tuple[str, int]:
        return self.socket.getsockname()[:2]

    @property
    def url(self) -> str:
        host, port = self.server_address
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"

    def serve_forever(self) -> None:
        """Serve until Ctrl-C / SIGTERM (in the main thread) or ``stop()``; then close the socket."""
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self.queue.close()
            self.socket.close()

    def start(self) -> ModelHTTPServer:
        """Serve from a background thread; returns once the server answers."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True, name="textagents-serve")
        self._thread.start()
        while not self._server.started and self._thread.is_alive():
            self._thread.join(0.01)
        return self

    def stop(self) -> None:
        """Stop serving (when ``start`` was called) and close the socket."""
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join()
            self._thread = None
        self.queue.close()
        self.socket.close()
