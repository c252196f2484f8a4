"""BK-Code's sandbox: an LLM-written potential function runs only in a separate, locked-down process.

Layers, each enough to stop the common attacks on its own where it applies:

1. Before anything runs: the code is parsed, never executed, and refused
   unless every import is on ``ALLOWED_IMPORTS``, no name on ``FORBIDDEN_NAMES`` is used and no dunder
   attribute (``__class__``, ``__subclasses__`` ...) is touched, and it defines ``potential(observation)``.
2. The process: ``python -I -S`` with an empty environment (no inherited variables, no keys), a fresh
   temporary working directory, resource limits set before the code is read (CPU seconds, address space,
   no new processes, no file larger than 0 bytes, few file descriptors).
3. Inside it: the allowed modules are imported first, then an audit hook refuses opening files, sockets,
   processes, ctypes, new imports, compile and exec (but the one exec of the checked code); the code runs
   with a reduced ``__builtins__`` (no ``open``, ``__import__`` only for the allow-list, no ``eval``/``exec``).
4. The call protocol is fixed: one JSON line in (``{"observation": str}``), one JSON line out (``{"phi":
   float}``), under a wall-clock timeout; a crash, a timeout, a non-number or a refused action gives Φ = 0,
   is counted, and the process is restarted.

What it does not do: network namespaces (they need privileges); the audit hook and the missing ``socket``
module are what keep the code off the network.
"""

from __future__ import annotations

import ast
import json
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

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


# The sandbox process's program. It must not import this package: it runs with -I -S from a temporary
# directory, with nothing but the standard library.
_RUNNER = r"""
import json, resource, sys
cpu_s, memory_bytes = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8))
ALLOWED = json.loads(sys.argv[3])
source = json.loads(sys.stdin.readline())["code"]
modules = {name: __import__(name) for name in ALLOWED}
import builtins
SAFE = {k: getattr(builtins, k) for k in (
    "abs all any bool dict enumerate filter float frozenset int isinstance len list map max min "
    "range reversed round set sorted str sum tuple zip ValueError KeyError IndexError TypeError "
    "ZeroDivisionError Exception True False None"
).split()}
def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name.split(".")[0] not in modules:
        raise ImportError(f"import of {name!r} is not allowed")
    return modules[name.split(".")[0]]
SAFE["__import__"] = guarded_import
state = {"exec_allowed": 1}
BLOCKED = ("open", "socket", "subprocess", "os.", "ctypes", "import", "compile", "shutil", "pty", "sys._getframe",
           "object.__getattr__", "code.", "marshal", "pickle", "fcntl", "mmap", "winreg", "urllib", "http")
def hook(event, args):
    if event == "exec":
        if state["exec_allowed"]:
            state["exec_allowed"] -= 1
            return
        raise RuntimeError(f"refused by the sandbox: {event}")
    if event.startswith(BLOCKED):
        raise RuntimeError(f"refused by the sandbox: {event}")
code = compile(source, "<llm potential>", "exec")
namespace = {"__builtins__": SAFE, "__name__": "llm_potential"}
sys.addaudithook(hook)
try:
    exec(code, namespace)  # trusted: this is the sandbox process, under its limits and audit hook
    potential = namespace["potential"]
    ready = {"ready": True}
except BaseException as error:
    ready = {"error": f"{type(error).__name__}: {error}"}
sys.stdout.write(json.dumps(ready) + "\n")
sys.stdout.flush()
for line in sys.stdin:
    try:
        value = float(potential(json.loads(line)["observation"]))
        reply = {"phi": value}
    except BaseException as error:
        reply = {"error": f"{type(error).__name__}: {error}"[:300]}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""


@dataclass
class SandboxStats:
    calls: int = 0
    failures: int = 0  # crashes, refused actions, non-numbers
    timeouts: int = 0
    restarts: int = 0
    seconds: float = 0.0
    last_error: str = ""
    errors: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        per_call = self.seconds / self.calls if self.calls else 0.0
        return {
            "calls": self.calls,
            "failures": self.failures,
            "timeouts": self.timeouts,
            "restarts": self.restarts,
            "seconds_per_call": per_call,
        }


class SandboxedPotential:
    """``potential(observation) -> float`` from LLM-written ``source``, run in the sandbox process.

    Called as a potential (``obj(obs, info)``: the observation's text). ``check=False`` skips the static
    check, for tests that show the process layers stop what the check would have refused.
    """

    def __init__(
        self,
        source: str,
        *,
        timeout_s: float = 1.0,
        cpu_s: int = 60,
        memory_mb: int = 512,
        check: bool = True,
    ):
        if check:
            check_code(source)
        self.source, self.timeout_s, self.cpu_s, self.memory_mb = source, timeout_s, cpu_s, memory_mb
        self.stats = SandboxStats()
        self.ready_error = ""
        self._workdir = tempfile.TemporaryDirectory(prefix="bk-sandbox-")
        self._process: subprocess.Popen[str] | None = None
        self._start()

    def _start(self) -> None:
        allowed = json.dumps(sorted(ALLOWED_IMPORTS))
        command = [sys.executable, "-I", "-S", "-c", _RUNNER, str(self.cpu_s), str(self.memory_mb << 20), allowed]
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            cwd=self._workdir.name,
            text=True,
        )
        self._process.stdin.write(json.dumps({"code": self.source}) + "\n")
        self._process.stdin.flush()
        reply = self._read(max(self.timeout_s, 10.0))
        if reply is None or "error" in reply:
            self.ready_error = (reply or {}).get("error", "the sandbox did not start")
            self.close_process()

    def _read(self, timeout: float) -> dict[str, Any] | None:
        process = self._process
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                return None
        line = process.stdout.readline()
        try:
            return json.loads(line) if line else None
        except json.JSONDecodeError:
            return None

    def _restart(self) -> None:
        self.close_process()
        self.stats.restarts += 1
        self._start()

    def _fail(self, error: str) -> float:
        self.stats.failures += 1
        self.stats.last_error = error
        kind = error.split(":")[0]
        self.stats.errors[kind] = self.stats.errors.get(kind, 0) + 1
        return 0.0

    def __call__(self, obs: Any, info: dict[str, Any] | None = None) -> float:
        text = obs["text"] if isinstance(obs, dict) else str(obs)
        return self.phi(text)

    def phi(self, observation: str) -> float:
        """Φ of ``observation``, or 0 when the code fails, times out or returns no finite number."""
        self.stats.calls += 1
        start = time.perf_counter()
        try:
            if self.ready_error:
                return self._fail(self.ready_error)
            if self._process is None or self._process.poll() is not None:
                self._restart()
            try:
                self._process.stdin.write(json.dumps({"observation": observation}) + "\n")
                self._process.stdin.flush()
            except (BrokenPipeError, OSError):
                self._restart()
                return self._fail("the sandbox process died")
            reply = self._read(self.timeout_s)
            if reply is None:
                self.stats.timeouts += 1
                self._restart()
                return self._fail("timeout or crash")
            if "error" in reply:
                return self._fail(reply["error"])
            value = reply.get("phi")
            if not isinstance(value, int | float) or value != value or value in (float("inf"), float("-inf")):
                return self._fail(f"not a finite number: {value!r}")
            return float(value)
        finally:
            self.stats.seconds += time.perf_counter() - start

    def close_process(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
            self._process = None

    def close(self) -> None:
        self.close_process()
        self._workdir.cleanup()

    def __enter__(self) -> SandboxedPotential:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
