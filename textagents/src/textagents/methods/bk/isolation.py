"""The operating-system boundary around BK-Code's sandbox process: bubblewrap (``bwrap``).

The LLM's code runs in new PID, network, IPC, UTS and cgroup namespaces, in a new session, killed with its
parent, with a filesystem made of read-only binds of the system's libraries and Python's own prefix and an
empty tmpfs (no home, no ``/etc``, no working tree, nothing writable), as an unprivileged user: as root,
``setpriv`` drops to ``nobody`` (65534) with no supplementary groups, no capabilities and no new privileges
before Python starts; otherwise bwrap's user namespace maps the caller's own (unprivileged) uid and refuses
nested user namespaces. Resource limits are set by the runner before it reads the code, and hold for that
uid (``RLIMIT_NPROC`` does nothing for root).

``isolation="unsafe-local-exec"`` runs the same runner as a plain child process: the in-process filters
(allow-list, audit hook, reduced builtins) and resource limits only, which hostile code can escape. It is
used only when the user asks for it by name (``--unsafe-local-exec``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

BUBBLEWRAP = "bubblewrap"
UNSAFE_LOCAL_EXEC = "unsafe-local-exec"
ISOLATIONS = (BUBBLEWRAP, UNSAFE_LOCAL_EXEC)
#: The unprivileged user the code runs as when the parent is root.
NOBODY = 65534
RUNNER = Path(__file__).with_name("sandbox_runner.py")
#: Where the runner is found inside the sandbox.
RUNNER_INSIDE = "/sandbox/runner.py"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class SandboxUnavailableError(RuntimeError):
    """The OS boundary cannot be set up on this machine, and the user did not accept running without it."""


def _python() -> str:
    """The interpreter the sandbox runs: the real file behind this one (a venv's python is a link to it)."""
    return os.path.realpath(sys.executable)


def _filesystem() -> list[str]:
    """bwrap arguments for a read-only view of the system libraries and Python's prefix, and nothing else."""
    arguments: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    prefixes = {os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(_python()))}
    for prefix in sorted(prefixes):
        if not prefix.startswith(_SYSTEM_DIRS):
            arguments += ["--ro-bind", prefix, prefix]
    return arguments


def bubblewrap_command(python_arguments: list[str]) -> list[str]:
    """The command that runs the sandbox runner with ``python_arguments`` inside bubblewrap."""
    command = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--new-session",
        "--die-with-parent",
        "--clearenv",
        *_filesystem(),
        "--dir",  # made 0755 (a file bind alone would make its folder 0700, closed to the unprivileged user)
        os.path.dirname(RUNNER_INSIDE),
        "--ro-bind",
        str(RUNNER),
        RUNNER_INSIDE,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(1 << 20),
        "--tmpfs",
        "/tmp",
        "--chdir",
        "/tmp",
    ]
    if os.geteuid() == 0:
        # bwrap as root makes no user namespace; setpriv (util-linux) leaves root for good before Python starts
        drop = ["--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", "--no-new-privs"]
        drop += ["--inh-caps=-all", "--bounding-set=-all"]
        return [*command, "--", shutil.which("setpriv") or "setpriv", *drop, "--", _python(), *python_arguments]
    return [*command, "--unshare-user", "--disable-userns", "--", _python(), *python_arguments]


def runner_command(isolation: str, runner_arguments: list[str]) -> list[str]:
    """The command that starts the sandbox runner with ``runner_arguments`` under ``isolation``."""
    if isolation == BUBBLEWRAP:
        return bubblewrap_command(["-I", "-S", RUNNER_INSIDE, *runner_arguments])
    if isolation == UNSAFE_LOCAL_EXEC:
        return [_python(), "-I", "-S", str(RUNNER), *runner_arguments]
    raise ValueError(f"isolation must be one of {list(ISOLATIONS)}, got {isolation!r}")


@functools.cache
def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot isolate the sandbox here (None when it can): checked once, by running it."""
    missing = [tool for tool in ("bwrap", "setpriv" if os.geteuid() == 0 else "") if tool and not shutil.which(tool)]
    if missing:
        return f"{' and '.join(missing)} not found"
    try:
        probe = subprocess.run(
            bubblewrap_command(["-I", "-S", "-c", "pass"]), capture_output=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap did not run: {type(error).__name__}"
    if probe.returncode != 0:
        last_line = (probe.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return f"bwrap failed (exit {probe.returncode}): {last_line[:200]}"
    return None


def choose_isolation(unsafe_local_exec: bool) -> str:
    """``unsafe-local-exec`` when the user asked for it; else bubblewrap, refused when it does not work here."""
    if unsafe_local_exec:
        return UNSAFE_LOCAL_EXEC
    problem = bubblewrap_problem()
    if problem is not None:
        raise SandboxUnavailableError(
            f"BK-Code runs LLM-written code only inside bubblewrap, which cannot run here ({problem}): install it "
            "(Debian/Ubuntu: apt-get install bubblewrap), or pass --unsafe-local-exec to run that code with no OS "
            "boundary, where code that escapes Python's restrictions can read, change or delete your files"
        )
    return BUBBLEWRAP
