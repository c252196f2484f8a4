"""``OpenAIBackend``'s concurrent requests against one at a time, in the same process, on the same server.

Two servers on 127.0.0.1:

- ``parallel``: a loopback server that answers each chat request after ``--service-s`` seconds, however many
  are in flight: the stand-in for a GPU server with continuous batching (vLLM), whose per-request latency
  hardly grows with a few more requests in the batch. It measures the client: how much of a batch's wall time
  concurrency removes, with the real ``openai`` client, threads and HTTP.
- ``serve``: ``textagents serve`` (in this process) over the tiny random test model: one request at a time on
  the model, so concurrency can only overlap HTTP and JSON with the model's work. ``chat_batch`` of
  ``--conversations`` conversations and ``score`` of ``--candidates`` candidates, ``score_batch`` 8.

Each case is timed ``--repeats`` times, alternating one at a time (``max_concurrency=1``) and concurrent; the
medians are compared as a ratio (one at a time / concurrent: above 1 is faster). Clients and servers share the
machine's cores with whatever else runs: the load average is recorded before and after.
Writes ``benchmarks/results/perf_openai_concurrency.json``.
Run: ``python benchmarks/perf/perf_openai_concurrency.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from common import write_result

from textagents.llm import OpenAIBackend


class FixedLatencyServer(ThreadingHTTPServer):
    """Chat completions answered after ``service_s`` seconds each, every request in parallel."""

    request_queue_size = 256
    daemon_threads = True

    def __init__(self, service_s: float):
        super().__init__(("127.0.0.1", 0), _FixedLatency)
        self.service_s = service_s

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _FixedLatency(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept-alive connections, as a real server's
    server: FixedLatencyServer

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(self.server.service_s)
        body = json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "go"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def conversations(count: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"Observation {i}: you see a red ball. Action:"}] for i in range(count)]


def compare(make: Callable[[int], Callable[[], object]], concurrency: int, repeats: int) -> dict[str, float]:
    """Median wall seconds of ``make(1)()`` and ``make(concurrency)()`` (alternated) and their ratio."""
    one, many = make(1), make(concurrency)
    one(), many()  # warm-up: connections, the model's first pass
    times: dict[str, list[float]] = {"one_at_a_time_s": [], "concurrent_s": []}
    for _ in range(repeats):
        for key, run in (("one_at_a_time_s", one), ("concurrent_s", many)):
            start = time.perf_counter()
            run()
            times[key].append(time.perf_counter() - start)
    medians = {key: statistics.median(values) for key, values in times.items()}
    return {**medians, "speedup": medians["one_at_a_time_s"] / medians["concurrent_s"], "max_concurrency": concurrency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service-s", type=float, default=0.05)
    parser.add_argument("--conversations", type=int, default=32)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()
    batch = conversations(args.conversations)

    parallel = FixedLatencyServer(args.service_s)
    threading.Thread(target=parallel.serve_forever, daemon=True).start()

    def parallel_chat(concurrency: int) -> Callable[[], object]:
        backend = OpenAIBackend("m", base_url=parallel.url, max_concurrency=concurrency)
        return lambda: backend.chat_batch(batch, max_tokens=1)

    results = {"parallel_chat_batch": compare(parallel_chat, args.concurrency, args.repeats)}
    parallel.shutdown()

    from textagents.llm.server import ModelHTTPServer
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.testing import tiny_model

    served = ModelHTTPServer(TransformersBackend(tiny_model("tiny-causal-lm")), port=0, model_name="tiny").start()
    contexts = [f"Observation {i}: you see a red ball. Action:" for i in range(args.candidates // 8)]
    options = [[" go forward", " turn left", " turn right", " pick up", " drop", " toggle", " done", " wait"]]

    def serve_chat(concurrency: int) -> Callable[[], object]:
        backend = OpenAIBackend("tiny", base_url=served.url, max_concurrency=concurrency)
        return lambda: backend.chat_batch(batch, max_tokens=8)

    def serve_score(concurrency: int) -> Callable[[], object]:
        backend = OpenAIBackend("tiny", base_url=served.url, max_concurrency=concurrency, score_batch=8)
        return lambda: backend.score(contexts, options * len(contexts))

    try:
        results["serve_chat_batch"] = compare(serve_chat, args.concurrency, args.repeats)
        results["serve_score"] = compare(serve_score, args.concurrency, args.repeats)
    finally:
        served.stop()
    settings = {k: getattr(args, k) for k in ("service_s", "conversations", "candidates", "concurrency", "repeats")}
    load = {"before": load_before, "after": os.getloadavg()}
    path = write_result("perf_openai_concurrency", {"settings": settings, "load_average": load, **results})
    print(json.dumps(results, indent=2))
    print(f"-> {path}")


if __name__ == "__main__":
    main()
