"""The program BK-Code's sandbox process runs: ``python -I -S sandbox_runner.py REPLY_FD CPU_S MEMORY_BYTES
RESTRICT`` (``RESTRICT`` 0 leaves out the in-process filter, for tests of the OS boundary alone).

It runs standalone, inside the OS boundary (``isolation.py``), with nothing but the standard library: it
must not import this package. It sets its resource limits, reads the code from the first request, then
answers requests until its input closes. Requests come on stdin, replies go to the dedicated pipe
``REPLY_FD``; both are frames, a 4-byte big-endian length and that many bytes of JSON. A request holds a
batch of observations (``{"id", "observations"}``) and is answered item by item, one frame per observation
as soon as its Φ is known (``{"id", "index", "phi"}`` or ``{"id", "index", "error"}``), so that the parent
can hold each item to its own deadline and reply cap. Its stdout and stderr are discarded by the parent, so
nothing the code prints can be taken for a reply.

The allow-list, the audit hook and the reduced builtins are a first filter only (code that reaches ``sys``
can turn them off); the boundary is the OS's.
"""

import json
import resource
import struct
import sys

HEADER = struct.Struct(">I")
MAX_REQUEST_BYTES = 1 << 22
SAFE_BUILTINS = [
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "range",
    "reversed",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ValueError",
    "KeyError",
    "IndexError",
    "TypeError",
    "ZeroDivisionError",
    "Exception",
    "True",
    "False",
    "None",
]
BLOCKED_EVENTS = (
    "open",
    "socket",
    "subprocess",
    "os.",
    "ctypes",
    "import",
    "compile",
    "shutil",
    "pty",
    "sys._getframe",
    "object.__getattr__",
    "code.",
    "marshal",
    "pickle",
    "fcntl",
    "mmap",
    "urllib",
    "http",
)


def limit_resources(cpu_s: int, memory_bytes: int) -> None:
    for limit, value in (
        (resource.RLIMIT_CPU, cpu_s),
        (resource.RLIMIT_AS, memory_bytes),
        (resource.RLIMIT_NPROC, 0),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 8),
    ):
        resource.setrlimit(limit, (value, value))


def read_request(stream):
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    if length > MAX_REQUEST_BYTES:
        return None
    return json.loads(stream.read(length))


def restricted_namespace(allowed):
    """Globals for the code: the allowed modules through a guarded ``__import__`` and a reduced builtins."""
    import builtins

    modules = {name: __import__(name) for name in allowed}

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name.split(".")[0] not in modules:
            raise ImportError(f"import of {name!r} is not allowed")
        return modules[name.split(".")[0]]

    safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
    safe["__import__"] = guarded_import
    return {"__builtins__": safe, "__name__": "llm_potential"}


def install_audit_hook():
    execs_left = [1]  # the one exec of the checked code

    def hook(event, args):
        if event == "exec":
            if execs_left[0]:
                execs_left[0] -= 1
                return
            raise RuntimeError(f"refused by the sandbox: {event}")
        if event.startswith(BLOCKED_EVENTS):
            raise RuntimeError(f"refused by the sandbox: {event}")

    sys.addaudithook(hook)


def main():
    reply_fd, cpu_s, memory_bytes, restrict = (int(argument) for argument in sys.argv[1:5])
    limit_resources(cpu_s, memory_bytes)
    requests = sys.stdin.buffer
    replies = open(reply_fd, "wb", buffering=0, closefd=False)  # noqa: SIM115 (lives as long as the process)

    def reply(message):
        data = json.dumps(message).encode()
        replies.write(HEADER.pack(len(data)) + data)

    first = read_request(requests)
    namespace = restricted_namespace(first["allowed"]) if restrict else {"__name__": "llm_potential"}
    code = compile(first["code"], "<llm potential>", "exec")
    if restrict:
        install_audit_hook()
    try:
        exec(code, namespace)  # trusted: this process runs inside the OS boundary (isolation.py), never elsewhere
        potential = namespace["potential"]
        reply({"ready": True})
    except BaseException as error:
        reply({"error": f"{type(error).__name__}: {error}"[:300]})
        return
    while (request := read_request(requests)) is not None:
        for index, observation in enumerate(request["observations"]):
            message = {"id": request["id"], "index": index}
            try:
                message["phi"] = float(potential(observation))
            except BaseException as error:
                message["error"] = f"{type(error).__name__}: {error}"[:300]
            reply(message)


if __name__ == "__main__":
    main()
