"""BK-Code's sandbox: an LLM-written potential function runs only in a separate process behind an OS boundary.

Layers, outermost first; only the first is a security boundary, the others filter what it need not see:

1. The OS boundary (``isolation.py``): bubblewrap namespaces (no network, no other processes, a read-only
   filesystem of system libraries and Python with an empty tmpfs), as an unprivileged user, with resource
   limits (CPU seconds, address space, no new processes, no file writes, few descriptors) set before the
   code is read. Where bubblewrap cannot run, the sandbox refuses to start unless the user passed
   ``--unsafe-local-exec``.
2. Before anything runs: the code is parsed, never executed, and refused unless every import is on
   ``ALLOWED_IMPORTS``, no name on ``FORBIDDEN_NAMES`` is used and no dunder attribute is touched, and it
   defines ``potential(observation)``.
3. Inside the process (``sandbox_runner.py``): an audit hook refuses files, sockets, processes, ctypes, new
   imports, compile and exec; the code runs with reduced builtins. Code that reaches ``sys`` (through
   ``collections._sys``, say) can undo this layer: it is a filter, not a boundary.
4. The protocol: length-prefixed JSON frames, requests on the process's stdin and replies on a dedicated pipe
   (its stdout and stderr go nowhere). A request carries a batch of observations (at most ``MAX_BATCH``) and
   is answered item by item: each reply carries its request's id and its item's index, is at most
   ``MAX_REPLY_BYTES`` and is read under its own deadline (``timeout_s`` from the previous reply). A reply
   that is late, oversized, malformed or for another request or item ends the process; the batch's
   remaining items go to a new one. Φ must be a finite number with ``|Φ| <= MAX_ABS_PHI``.

Every failure gives Φ = 0 and is counted by kind, per item: errors raised by the code, timeouts, crashes
(the process died or broke the protocol) and invalid values.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import selectors
import signal
import struct
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from textagents.methods.bk.isolation import BUBBLEWRAP, ISOLATIONS, runner_command
from textagents.methods.bk.shaping import MAX_ABS_PHI, valid_potential

ALLOWED_IMPORTS = frozenset({"math", "re", "collections", "itertools", "functools", "string", "statistics"})
FORBIDDEN_NAMES = frozenset(
    {
        "__import__",
        "eval",
        "exec",
        "compile",
        "open",
        "input",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "breakpoint",
        "memoryview",
        "help",
        "exit",
        "quit",
        "__builtins__",
        "__loader__",
        "__spec__",
    }
)
ENTRY_POINT = "potential"
#: A frame's header: the length of the JSON that follows (the runner's ``HEADER``).
FRAME_HEADER = struct.Struct(">I")
#: The most bytes one reply (one item's) may have.
MAX_REPLY_BYTES = 4096
#: The most observations one request carries; a longer list is sent as several requests.
MAX_BATCH = 256
#: The most bytes read from the reply pipe at once (replies that arrive together are read together).
READ_CHUNK = 1 << 16
MAX_ERROR_CHARS = 300
STARTUP_TIMEOUT_S = 10.0


class UnsafeCodeError(ValueError):
    """LLM-written code the sandbox refuses to run; the message says why."""


def check_code(source: str) -> None:
    """Refuse ``source`` unless it only imports allowed modules, uses no forbidden name or dunder attribute,
    and defines ``potential``."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise UnsafeCodeError(f"not valid Python: {error}") from error
    defined = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] not in ALLOWED_IMPORTS or (isinstance(node, ast.ImportFrom) and node.level):
                    raise UnsafeCodeError(f"import of {module!r} is not allowed; allowed: {sorted(ALLOWED_IMPORTS)}")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            raise UnsafeCodeError(f"the name {node.id!r} is not allowed")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise UnsafeCodeError(f"the attribute {node.attr!r} is not allowed")
        elif isinstance(node, ast.FunctionDef) and node.name == ENTRY_POINT:
            defined = True
    if not defined:
        raise UnsafeCodeError(f"the code defines no function {ENTRY_POINT}(observation)")


class ProtocolError(Exception):
    """The sandbox process broke the protocol: no reply, a malformed, oversized or foreign one, or it died."""


@dataclass
class SandboxStats:
    calls: int = 0  # observations evaluated
    batches: int = 0  # requests sent: round trips to the process
    failures: int = 0  # every call that gave Φ = 0 by failing: the four kinds below
    errors: int = 0  # raised by the code, or refused by the in-process filter
    timeouts: int = 0
    crashes: int = 0  # the process died or broke the protocol
    invalid: int = 0  # not a finite number within ±MAX_ABS_PHI
    restarts: int = 0
    impure: int = (
        0  # samples that the labelling's check (``code_potential.try_potential``) saw answered twice differently
    )
    seconds: float = 0.0
    last_error: str = ""

    def as_dict(self) -> dict[str, float]:
        counts = ("calls", "batches", "failures", "errors", "timeouts", "crashes", "invalid", "restarts", "impure")
        return {
            **{name: getattr(self, name) for name in counts},
            "seconds_per_call": self.seconds / self.calls if self.calls else 0.0,
        }


class Evaluation(NamedTuple):
    """One observation's Φ, and the kind of failure (a ``SandboxStats`` count) that made it 0, if any."""

    value: float
    failure: str | None = None


class SandboxedPotential:
    """``potential(observation) -> float`` from LLM-written ``source``, run in the sandbox process.

    Called as a potential (``obj(obs, info)``: the observation's text); ``evaluate`` takes a list of texts in
    one round trip. ``isolation`` is ``bubblewrap`` (the
    OS boundary) or ``unsafe-local-exec`` (none: only when the user asked for it). ``check=False`` skips the
    static check and ``restrict=False`` the in-process filter, for tests that show the OS boundary stops what
    those layers would have refused.
    """

    def __init__(
        self,
        source: str,
        *,
        isolation: str = BUBBLEWRAP,
        timeout_s: float = 1.0,
        cpu_s: int = 60,
        memory_mb: int = 512,
        check: bool = True,
        restrict: bool = True,
    ):
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {list(ISOLATIONS)}, got {isolation!r}")
        if check:
            check_code(source)
        self.source, self.isolation, self.restrict = source, isolation, restrict
        self.timeout_s, self.cpu_s, self.memory_mb = timeout_s, cpu_s, memory_mb
        self.stats = SandboxStats()
        #: (kind, message) when the process did not start or the code did not load: every call fails so
        self.start_failure: tuple[str, str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._replies = -1
        self._received = bytearray()  # read from the reply pipe, not yet taken as a reply
        self._request_id = 0
        self._start()

    def _start(self) -> None:
        replies, reply_end = os.pipe()
        self._replies = replies
        arguments = [str(reply_end), str(self.cpu_s), str(self.memory_mb << 20), str(int(self.restrict))]
        try:
            self._process = subprocess.Popen(
                runner_command(self.isolation, arguments),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(reply_end,),
                env={},
                cwd="/",
                start_new_session=True,
            )
        except OSError:
            self.close_process()
            raise
        finally:
            os.close(reply_end)
        os.set_blocking(replies, False)
        os.set_blocking(self._process.stdin.fileno(), False)
        try:
            deadline = time.monotonic() + max(self.timeout_s, STARTUP_TIMEOUT_S)
            self._send({"code": self.source, "allowed": sorted(ALLOWED_IMPORTS)}, deadline)
            reply = self._receive(deadline)
        except (ProtocolError, TimeoutError) as error:
            self.start_failure = ("crashes", f"crash: the sandbox did not start: {error}")
        else:
            if reply.get("ready") is not True:
                self.start_failure = ("errors", str(reply.get("error", "the code did not load"))[:MAX_ERROR_CHARS])
        if self.start_failure is not None:
            self.close_process()

    def _send(self, message: dict[str, Any], deadline: float) -> None:
        data = json.dumps(message).encode()
        pending = memoryview(FRAME_HEADER.pack(len(data)) + data)
        stream = self._process.stdin.fileno()
        while pending:
            if not _wait(stream, selectors.EVENT_WRITE, deadline):
                raise TimeoutError("the sandbox did not read its request in time")
            try:
                pending = pending[os.write(stream, pending) :]
            except BlockingIOError:
                continue
            except OSError as error:
                raise ProtocolError(f"the sandbox process died ({type(error).__name__})") from error

    def _receive(self, deadline: float) -> dict[str, Any]:
        header = self._read_exactly(FRAME_HEADER.size, deadline)
        (length,) = FRAME_HEADER.unpack(header)
        if length > MAX_REPLY_BYTES:
            raise ProtocolError(f"a reply of {length} bytes (at most {MAX_REPLY_BYTES})")
        try:
            reply = json.loads(self._read_exactly(length, deadline))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ProtocolError("a reply that is not JSON") from error
        if not isinstance(reply, dict):
            raise ProtocolError("a reply that is not a JSON object")
        return reply

    def _read_exactly(self, size: int, deadline: float) -> bytes:
        while len(self._received) < size:
            if not _wait(self._replies, selectors.EVENT_READ, deadline):
                raise TimeoutError("no reply in time")
            try:
                chunk = os.read(self._replies, max(READ_CHUNK, size - len(self._received)))
            except BlockingIOError:
                continue
            if not chunk:
                raise ProtocolError("the sandbox process died")
            self._received += chunk
        data = bytes(self._received[:size])
        del self._received[:size]
        return data

    def _fail(self, kind: str, error: str) -> Evaluation:
        setattr(self.stats, kind, getattr(self.stats, kind) + 1)
        self.stats.failures += 1
        self.stats.last_error = error[:MAX_ERROR_CHARS]
        return Evaluation(0.0, kind)

    def __call__(self, obs: Any, info: dict[str, Any] | None = None) -> float:
        return self.phi(observation_text(obs))

    def phi(self, observation: str) -> float:
        """Φ of ``observation``, or 0 when the code fails, times out, crashes or returns no valid number."""
        return self.evaluate([observation])[0].value

    def evaluate(self, observations: Sequence[str]) -> list[Evaluation]:
        """Φ of each of ``observations`` (0 where it failed, with the failure's kind), ``MAX_BATCH`` to a
        request. After a timeout or a crash the process is restarted for the items that follow."""
        self.stats.calls += len(observations)
        start = time.perf_counter()
        results: list[Evaluation] = []
        try:
            while len(results) < len(observations):
                if self._process is None and self.start_failure is None:
                    self.stats.restarts += 1
                    self._start()
                if self.start_failure is not None:
                    results.append(self._fail(*self.start_failure))
                    continue
                results += self._batch(observations[len(results) : len(results) + MAX_BATCH])
            return results
        finally:
            self.stats.seconds += time.perf_counter() - start

    def _batch(self, observations: Sequence[str]) -> list[Evaluation]:
        """One request for ``observations``: their evaluations up to and including the first that timed out
        or broke the protocol (which ends the process), or all of them."""
        self._request_id += 1
        self.stats.batches += 1
        results: list[Evaluation] = []
        deadline = time.monotonic() + self.timeout_s
        try:
            self._send({"id": self._request_id, "observations": list(observations)}, deadline)
            for index in range(len(observations)):
                reply = self._receive(deadline)
                if reply.get("id") != self._request_id or reply.get("index") != index:
                    raise ProtocolError("a reply to another request or item")
                results.append(self._checked(reply))
                deadline = time.monotonic() + self.timeout_s
        except TimeoutError as error:
            self.close_process()
            results.append(self._fail("timeouts", f"timeout: {error}"))
        except ProtocolError as error:
            self.close_process()
            results.append(self._fail("crashes", f"crash: {error}"))
        return results

    def _checked(self, reply: dict[str, Any]) -> Evaluation:
        if "error" in reply:
            return self._fail("errors", str(reply["error"]))
        value = reply.get("phi")
        if not valid_potential(value):
            return self._fail("invalid", f"not a finite number within ±{MAX_ABS_PHI:g}: {str(value)[:40]}")
        return Evaluation(float(value))

    def close_process(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
            self._process.stdin.close()
            self._process = None
        self._received.clear()
        if self._replies >= 0:
            os.close(self._replies)
            self._replies = -1

    def close(self) -> None:
        self.close_process()

    def __enter__(self) -> SandboxedPotential:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def observation_text(obs: Any) -> str:
    """The text a potential is given: a textenvs observation's ``text``, or ``obs`` itself as a string."""
    return obs["text"] if isinstance(obs, dict) else str(obs)


def _wait(fd: int, event: int, deadline: float) -> bool:
    """Whether ``fd`` is ready for ``event`` before ``deadline``."""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, event)
        return bool(selector.select(max(0.0, deadline - time.monotonic())))
