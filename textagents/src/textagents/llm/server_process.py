"""An OpenAI-compatible server (``textagents serve``, vLLM, ...) run as a child process from an argument list.

The list is run as it is, never through a shell (nothing in it is expanded or interpreted), in a process group
of its own, with its output appended to a log file. ``ServerProcess.start`` returns once ``GET /v1/models``
answers with a model; a server that exits first, or does not answer within the timeout, is a
``ServerStartError`` of one line that ends with its last lines of output, and nothing of it is left running.
``stop`` ends the whole group (a server's own workers included): SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Lines of the server's output quoted in a start error, and characters of each.
TAIL_LINES, TAIL_CHARS = 5, 300
#: Seconds between checks of a starting server; seconds ``stop`` waits before SIGKILL.
POLL_S, STOP_GRACE_S = 0.5, 30.0


class ServerStartError(RuntimeError):
    """A server that did not start: what it ran, what happened, its last lines of output (one line)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port no one listens on now (the server binds it a moment later; another program could come first)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


@dataclass
class ServerProcess:
    """A started server: its ``argv``, its API's ``url`` (``http://host:port/v1``), the ``log`` its output goes
    to, and the ``models`` its ``/v1/models`` listed when it came up."""

    argv: list[str]
    url: str
    log: Path
    process: subprocess.Popen
    models: list[str]

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        url: str,
        log: Path,
        timeout_s: float,
        headers: dict[str, str] | None = None,
    ) -> ServerProcess:
        """Run ``argv`` and wait until ``url``'s ``/models`` lists a model (module docstring)."""
        argv = [str(arg) for arg in argv]
        if not argv:
            raise ServerStartError("no server command to run")
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as output:
            output.write(f"$ {shlex.join(argv)}\n".encode())
            offset = output.tell()
            try:
                process = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
                )
            except OSError as error:
                raise ServerStartError(f"cannot run the server command {argv[0]!r}: {error.strerror}") from error
        server = cls(argv, url, log, process, [])
        try:
            server.models = server._wait_for_models(timeout_s, headers or {}, offset)
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_for_models(self, timeout_s: float, headers: dict[str, str], offset: int) -> list[str]:
        import httpx

        deadline = time.monotonic() + timeout_s
        while True:
            code = self._exit_status()
            if code is not None:
                raise ServerStartError(self._failure(f"exited with status {code} before it answered", offset))
            try:
                response = httpx.get(f"{self.url}/models", headers=headers, timeout=10.0)
                if response.status_code == 200:
                    models = [str(card["id"]) for card in response.json().get("data", [])]
                    if models:
                        return models
            except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
                pass  # not listening yet, or not an OpenAI server yet
            if time.monotonic() >= deadline:
                raise ServerStartError(self._failure(f"did not answer within {timeout_s:g} s", offset))
            time.sleep(POLL_S)

    def _failure(self, what: str, offset: int) -> str:
        with self.log.open("rb") as output:
            output.seek(offset)
            text = output.read().decode(errors="replace")
        lines = [line.strip()[:TAIL_CHARS] for line in text.splitlines() if line.strip()][-TAIL_LINES:]
        said = " | ".join(lines) if lines else "(nothing)"
        return f"the server {shlex.join(self.argv)[:TAIL_CHARS]} {what} {self.url}/models; its last output: {said}"

    def _exit_status(self) -> int | None:
        """The server's exit status once it has exited, None while it runs. It is not reaped here: until
        ``stop`` reaps it, its process id stays its group's, so signalling the group reaches no one else."""
        exited = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return None if exited is None else exited.si_status

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """End the server's process group: SIGTERM, then SIGKILL for what is left once the server has exited
        or after ``grace_s`` seconds; then reap the server."""
        if self.process.returncode is not None:
            return  # stopped already
        if self._exit_status() is None:
            _signal_group(self.process.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while self._exit_status() is None and time.monotonic() < deadline:
                time.sleep(0.1)
        _signal_group(self.process.pid, signal.SIGKILL)
        self.process.wait()


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # nothing of the group is left
        os.killpg(group, signum)
