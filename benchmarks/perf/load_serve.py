"""Load test of ``textagents serve``: how many concurrent clients it holds, their latency, and no 5xx.

``textagents serve`` runs as users run it (a subprocess, default limits) over the tiny random test model
(hidden size 32: the figures measure the server, not the LLM), on 127.0.0.1 only. For each level of
concurrency, that many clients connect at once, each on its own kept-alive connection, and send requests one
after another for ``--seconds``: alternately a chat completion (4 tokens, greedy) and a scoring request
(``/v1/completions`` with 2 prompts, ``echo``, ``logprobs=1``, ``max_tokens=0``, as ``OpenAIBackend.score``
sends). One more client sends 512-prompt requests all along (the request that used to hold the model for
minutes): each must be refused at once (400) while the others are served. Every client stops after its
current request once the time is up, so a run is bounded.

Recorded per level: connections opened and failed (reset or refused), answers by status, transport errors,
p50 / p90 / p99 / max latency of the answered requests, requests per second. Clients and server share the
machine's cores (and whatever else runs on it): the figures are a floor, not the server's capacity.
Writes ``benchmarks/results/load_serve.json``.
Run: ``python benchmarks/perf/load_serve.py [--clients 50,200,500] [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from common import write_result

from textagents.testing import build_tiny_models

CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "go to the red ball"}], "max_tokens": 4}
SCORE = {
    "model": "tiny",
    "prompt": ["You see a red ball. Action: go forward", "You see a red ball. Action: turn left"],
    "max_tokens": 0,
    "echo": True,
    "logprobs": 1,
}
HUGE = {"model": "tiny", "prompt": ["go"] * 512, "max_tokens": 16}
#: Seconds a client waits for one answer before it counts the request as a transport error.
ANSWER_TIMEOUT = 120


@dataclass
class Tally:
    """What a group of clients saw."""

    statuses: Counter = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    connect_errors: Counter = field(default_factory=Counter)
    transport_errors: Counter = field(default_factory=Counter)


def _request(path: str, body: dict) -> bytes:
    data = json.dumps(body).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
    return f"{head}\r\n\r\n".encode() + data


REQUESTS = [_request("/v1/chat/completions", CHAT), _request("/v1/completions", SCORE)]


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> int:
    """Send one request on a kept-alive connection and read its whole answer: the status."""
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    await reader.readexactly(int(headers.get("content-length", 0)))
    return int(lines[0].split()[1])


async def _client(port: int, stop_at: float, requests: list[bytes], tally: Tally) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as error:
        tally.connect_errors[type(error).__name__] += 1
        return
    try:
        sent = 0
        while time.monotonic() < stop_at:
            start = time.perf_counter()
            status = await asyncio.wait_for(_exchange(reader, writer, requests[sent % len(requests)]), ANSWER_TIMEOUT)
            if status == 200:
                tally.latencies.append(time.perf_counter() - start)
            tally.statuses[status] += 1
            sent += 1
    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as error:
        tally.transport_errors[type(error).__name__] += 1
    finally:
        writer.close()


async def _level(port: int, clients: int, seconds: float) -> dict:
    tally, huge = Tally(), Tally()
    stop_at = time.monotonic() + seconds
    start = time.perf_counter()
    tasks = [_client(port, stop_at, REQUESTS, tally) for _ in range(clients)]
    tasks.append(_client(port, stop_at, [_request("/v1/completions", HUGE)], huge))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    latencies = np.asarray(tally.latencies) * 1000
    answered = sum(tally.statuses.values())
    five_xx = sum(n for s, n in (tally.statuses + huge.statuses).items() if s >= 500)
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "connections_failed": dict(tally.connect_errors + huge.connect_errors),
        "transport_errors": dict(tally.transport_errors + huge.transport_errors),
        "statuses": {str(s): n for s, n in sorted(tally.statuses.items())},
        "requests_of_512_prompts": {str(s): n for s, n in sorted(huge.statuses.items())},
        "responses_5xx": five_xx,
        "requests_per_s": round(answered / elapsed, 1),
        "latency_ms": {
            name: round(float(np.percentile(latencies, q)), 1) if len(latencies) else None
            for name, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))
        },
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(model: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TEXTAGENTS_API_KEY": ""}
    command = [sys.executable, "-m", "textagents.cli", "serve", "--model", str(model), "--model-name", "tiny"]
    process = subprocess.Popen(
        [*command, "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    for line in process.stdout:
        if line.startswith("serving"):
            return process
    raise RuntimeError(f"textagents serve exited with {process.wait()} before serving")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="50,200,500", help="levels of concurrency, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long each level sends requests")
    args = parser.parse_args()
    levels = [int(n) for n in args.clients.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        models = build_tiny_models(tmp)
        port = _free_port()
        server = _start_server(models.causal, port)
        try:
            results = []
            for clients in levels:
                result = asyncio.run(_level(port, clients, args.seconds))
                results.append(result)
                print(json.dumps(result), flush=True)
        finally:
            server.terminate()
            server.wait(30)

    path = write_result(
        "load_serve",
        {
            "server": "textagents serve, default limits, tiny random GPT-2 (hidden 32, 2 layers), 1 torch thread",
            "requests": "alternately chat (max_tokens 4) and scoring (2 prompts, echo, logprobs 1, max_tokens 0)",
            "note": (
                "clients and server share the machine's cores (2 here, with other benchmark runs in the "
                "background): latencies are a floor on this machine, not the server's capacity"
            ),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "levels": results,
        },
    )
    print(f"-> {path}")


if __name__ == "__main__":
    main()
