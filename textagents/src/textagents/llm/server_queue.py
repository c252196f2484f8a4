"""The server's model queue: requests use the model one at a time, first come, first served.

One worker thread runs the jobs in the order they arrived (a lock shared by handler threads would let any
waiter through next, so one client's burst could starve another). At most ``max_pending`` jobs wait or run;
one more is refused at once (429). A request waits at most until its deadline: then it is answered 503, and
its job, if it has not started, never runs; a job already running finishes in the background (a forward pass
cannot be interrupted; the per-request caps bound how long it takes). A client that disconnects while its
job waits gives its place up the same way.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from http import HTTPStatus
from typing import TypeVar

from textagents.llm.server_api import RequestError

T = TypeVar("T")


class ClientGone(Exception):
    """The client disconnected before its answer was ready: there is nobody to answer."""


class ModelQueue:
    """Runs jobs on one worker thread in arrival order, each bounded by a deadline (see the module)."""

    def __init__(self, max_pending: int, timeout: float):
        self.max_pending = max_pending
        self.timeout = timeout
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="textagents-model")
        self._lock = threading.Lock()
        self._pending = 0

    @property
    def pending(self) -> int:
        """Jobs waiting or running."""
        return self._pending

    def _finished(self, _: Future) -> None:
        with self._lock:
            self._pending -= 1

    def submit(self, job: Callable[[], T]) -> Future[T]:
        """Queue ``job``: a future of its result; 429 when ``max_pending`` jobs are already queued."""
        with self._lock:
            if self._pending >= self.max_pending:
                message = f"{self._pending} requests are already waiting for the model; retry later"
                raise RequestError(HTTPStatus.TOO_MANY_REQUESTS, message)
            self._pending += 1
        future = self._executor.submit(job)
        future.add_done_callback(self._finished)
        return future

    async def run(self, job: Callable[[], T], deadline: float, disconnected: Awaitable[object]) -> T:
        """``job``'s result, waiting in line until the event loop's clock reads ``deadline`` at the latest
        (503 then) or until ``disconnected`` completes (``ClientGone``)."""
        future = self.submit(job)
        result = asyncio.wrap_future(future)
        gone = asyncio.ensure_future(disconnected)
        try:
            remaining = deadline - asyncio.get_running_loop().time()
            await asyncio.wait({result, gone}, timeout=max(remaining, 0), return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if result.done():
            return result.result()
        started = not future.cancel()  # a job that has not started never will
        result.cancel()  # nobody reads a late result (or error)
        if gone.done() and not gone.cancelled():
            raise ClientGone()
        where = "running" if started else "waiting for the model"
        message = f"the request timed out after {self.timeout:g} s ({where}); retry later or ask for less"
        raise RequestError(HTTPStatus.SERVICE_UNAVAILABLE, message)

    def close(self) -> None:
        """Drop the jobs that have not started; the running one finishes."""
        self._executor.shutdown(wait=False, cancel_futures=True)
