"""BK-Code's sandbox against hostile LLM code.

The OS boundary is tested on its own: the probes run with the static check and the in-process filter off
(``check=False, restrict=False``), i.e. as code that has already escaped Python's restrictions would, with
``os``, ``ctypes`` and ``socket`` in hand. Each probe returns a value that says what it managed, so a test
fails if an attack succeeds rather than merely erroring. Without bubblewrap these tests are skipped, except in
CI (``CI`` set), where the sandbox must be there.
"""

from __future__ import annotations

import os
import socket
import struct

import numpy as np
import pytest

from tests.textagents.methods.sandbox_support import needs_bubblewrap
from textagents.methods.bk import isolation, sandbox
from textagents.methods.bk.isolation import UNSAFE_LOCAL_EXEC, SandboxUnavailableError, choose_isolation
from textagents.methods.bk.sandbox import SandboxedPotential, UnsafeCodeError, check_code
from textagents.methods.bk.shaping import MAX_ABS_PHI, PotentialShaping

GOOD = """
import re
def potential(observation):
    return float(len(re.findall(r"ball", observation)))
"""
# How the first hostile tester got `sys` past the in-process filter with only allowed modules.
SYS_ESCAPE = "import collections\nsys = collections._sys\n"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("import os\ndef potential(o): return 1.0", "import of 'os' is not allowed"),
        ("import socket\ndef potential(o): return 1.0", "import of 'socket' is not allowed"),
        ("from subprocess import run\ndef potential(o): return 1.0", "import of 'subprocess' is not allowed"),
        ("def potential(o): return open('x', 'w').write('y')", "the name 'open' is not allowed"),
        ("def potential(o): return eval('1')", "the name 'eval' is not allowed"),
        ("def potential(o): return ().__class__", "the attribute '__class__' is not allowed"),
        ("def phi(o): return 1.0", "defines no function potential"),
        ("def potential(o) return 1", "not valid Python"),
    ],
)
def test_the_static_check_refuses_hostile_code(source, reason):
    with pytest.raises(UnsafeCodeError, match=reason):
        check_code(source)


def _escaped(body: str, **kwargs) -> SandboxedPotential:
    """A potential whose code starts with os, ctypes and socket in hand, past every in-process layer."""
    source = "import os, signal, socket, ctypes, sys\n" + body
    return SandboxedPotential(source, check=False, restrict=False, **kwargs)


@needs_bubblewrap
def test_a_checked_potential_runs_inside_bubblewrap():
    with SandboxedPotential(GOOD) as potential:
        assert potential.isolation == "bubblewrap"
        assert potential.phi("a ball and a ball") == 2.0
        assert potential({"text": "no"}, {}) == 0.0
        assert potential.stats.calls == 2 and potential.stats.failures == 0


@needs_bubblewrap
def test_the_code_runs_as_an_unprivileged_user_even_through_ctypes():
    body = "def potential(o):\n    return float(ctypes.CDLL(None).getuid()) + 0.5 * os.getgroups().__len__()"
    with _escaped(body) as potential:
        uid = potential.phi("x")
        assert potential.stats.failures == 0
        assert uid != 0 and uid == (isolation.NOBODY if os.geteuid() == 0 else os.geteuid())


@needs_bubblewrap
def test_files_outside_the_sandbox_cannot_be_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    body = (
        "def potential(path):\n    try:\n        return float(len(open(path).read()))\n"
        "    except OSError:\n        return -1.0"
    )
    with _escaped(body) as potential:
        for path in (secret, "/etc/passwd", "/etc/shadow", os.path.expanduser("~/.bashrc"), __file__):
            assert potential.phi(str(path)) == -1.0, path
        assert potential.stats.failures == 0


@needs_bubblewrap
def test_files_cannot_be_written_truncated_or_deleted(tmp_path):
    planted = tmp_path / "planted.txt"
    planted.write_text("keep me")
    body = """
def potential(path):
    done = 0
    for attempt in (lambda: open(path, "w").write("x"), lambda: os.truncate(path, 0), lambda: os.remove(path),
                    lambda: open(path + ".new", "w").write("x"), lambda: open("/tmp/new", "w").write("x"),
                    lambda: open(sys.executable, "a").write("x")):
        try:
            attempt()
            done += 1
        except OSError:
            pass
    return float(done)
"""
    with _escaped(body) as potential:
        assert potential.phi(str(planted)) == 0.0 and potential.stats.failures == 0
    assert planted.read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["planted.txt"]


@needs_bubblewrap
def test_a_shell_cannot_touch_the_host(tmp_path):
    target = tmp_path / "pwned"
    body = "def potential(path):\n    return 1.0 if os.system('touch ' + path) == 0 else -1.0"
    with _escaped(body) as potential:
        assert potential.phi(str(target)) == -1.0
    assert not target.exists()


@needs_bubblewrap
def test_forks_are_refused():
    body = (
        "def potential(o):\n    for _ in range(50):\n        try:\n            os.fork()\n"
        "        except OSError:\n            return -1.0\n    return 1.0"
    )
    with _escaped(body) as potential:
        assert potential.phi("x") == -1.0


@needs_bubblewrap
def test_the_network_is_unreachable_even_on_loopback():
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    body = (
        "def potential(port):\n    try:\n        socket.create_connection(('127.0.0.1', int(port)), timeout=0.5)\n"
        "        return 1.0\n    except OSError:\n        return -1.0"
    )
    with listener, _escaped(body) as potential:
        assert potential.phi(str(port)) == -1.0
        with pytest.raises(TimeoutError):
            listener.accept()


@needs_bubblewrap
def test_signals_cannot_reach_the_parent():
    body = """
def potential(pid):
    reached = 0
    for target in (int(pid), os.getppid()):
        try:
            os.kill(target, 0)
            reached += 1
        except OSError:
            pass
    reached += ctypes.CDLL(None).kill(int(pid), 0) == 0
    return float(reached)
"""
    with _escaped(body) as potential:
        assert potential.phi(str(os.getpid())) == 0.0
    # kill(-1): every process the code may signal (never run without the boundary: as root it is all of them)
    body = "def potential(o):\n    try:\n        os.kill(-1, signal.SIGKILL)\n    except OSError:\n        return -1.0"
    with _escaped(body) as potential:
        assert potential.phi("x") == -1.0


@needs_bubblewrap
def test_the_parents_environment_is_not_visible(monkeypatch):
    monkeypatch.setenv("TEXTAGENTS_TEST_SECRET_API_KEY", "s3cret")
    # bwrap sets PWD, Python LC_CTYPE (PEP 538); nothing of the parent's environment is there
    body = "def potential(o):\n    return float(len(set(os.environ) - {'PWD', 'LC_CTYPE'}))"
    with _escaped(body) as potential:
        assert potential.phi("x") == 0.0 and potential.stats.failures == 0


def _forging(reply: str, then: str) -> str:
    """Code that, asked to forge, writes ``reply`` (a Python bytes expression) to the reply pipe and does
    ``then``; else answers 2.0."""
    return (
        f"import struct\ndef potential(o):\n    if o == 'forge':\n        os.write(int(sys.argv[1]), {reply})\n"
        f"        {then}\n    return 2.0"
    )


@needs_bubblewrap
@pytest.mark.parametrize(
    ("reply", "then", "counted"),
    [
        ("struct.pack('>I', 2 ** 31)", "return 1.0", "crashes"),  # a frame longer than any reply may be
        ("struct.pack('>I', 5) + b'nope!'", "return 1.0", "crashes"),  # not JSON
        ("struct.pack('>I', 2) + b'[]'", "return 1.0", "crashes"),  # not an object
        ("struct.pack('>I', 22) + b'{\"id\": 99, \"phi\": 5.0}'", "return 1.0", "crashes"),  # another request's
        ("b'\\x00\\x00'", "return 1.0", "crashes"),  # half a header, the real reply after it
        ("struct.pack('>I', 100) + b'{}'", "while True: pass", "timeouts"),  # a frame that never completes
        ("b'\\x00\\x00'", "while True: pass", "timeouts"),  # half a header, then nothing
    ],
)
def test_forged_or_broken_replies_are_counted_and_restart_the_process(reply, then, counted):
    with _escaped(_forging(reply, then), timeout_s=0.5) as potential:
        assert potential.phi("forge") == 0.0 and getattr(potential.stats, counted) == 1
        assert potential.stats.failures == 1
        assert potential.phi("y") == 2.0 and potential.stats.restarts == 1


BATCH = """
def potential(o):
    if o == "raise":
        raise ValueError("no")
    if o == "nan":
        return float("nan")
    if o == "inf":
        return float("inf")
    if o == "huge":
        return 1e7
    while o == "loop":
        pass
    return float(len(o))
"""


@needs_bubblewrap
def test_a_batch_is_one_round_trip_and_each_failure_is_counted_for_its_own_item():
    batch = ["a", "raise", "bb", "nan", "inf", "huge", "ccc", "loop", "dddd"]
    with SandboxedPotential(BATCH, timeout_s=0.5) as potential:
        results = potential.evaluate(batch)
        assert [r.value for r in results] == [1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 4.0]
        failures = [None, "errors", None, "invalid", "invalid", "invalid", None, "timeouts", None]
        assert [r.failure for r in results] == failures
        stats = potential.stats
        counts = (stats.calls, stats.failures, stats.errors, stats.invalid, stats.timeouts, stats.crashes)
        assert counts == (9, 5, 1, 3, 1, 0)
        # the loop ended the process: the item after it went to a new one, in a second request
        assert stats.restarts == 1 and stats.batches == 2
        assert [r.value for r in potential.evaluate(["ee", "f"])] == [2.0, 1.0] and stats.batches == 3


@needs_bubblewrap
def test_a_long_list_is_sent_as_several_requests(monkeypatch):
    monkeypatch.setattr(sandbox, "MAX_BATCH", 3)
    with SandboxedPotential(BATCH) as potential:
        assert potential.phi("xy") == 2.0
        assert [r.value for r in potential.evaluate(["a" * n for n in range(1, 8)])] == [1, 2, 3, 4, 5, 6, 7]
        assert potential.stats.batches == 1 + 3 and potential.stats.calls == 8


def _frame(body: bytes) -> str:
    """A Python expression for ``body`` framed as a reply."""
    return f"struct.pack('>I', {len(body)}) + {body!r}"


@needs_bubblewrap
@pytest.mark.parametrize(
    ("reply", "then", "counted"),
    [
        ("struct.pack('>I', 2 ** 31)", "return 1.0", "crashes"),  # a frame longer than any reply may be
        # a well-formed reply for this item, but over the cap on one reply
        (_frame(b'{"id": 1, "index": 1, "phi": 1.0, "pad": "' + b"y" * 5000 + b'"}'), "return 1.0", "crashes"),
        (_frame(b"nope!"), "return 1.0", "crashes"),  # not JSON
        (_frame(b'{"id": 1, "phi": 9.0}'), "return 1.0", "crashes"),  # no item
        (_frame(b'{"id": 1, "index": 3, "phi": 9.0}'), "return 1.0", "crashes"),  # a later item's, before its own
        ("struct.pack('>I', 100) + b'{}'", "while True: pass", "timeouts"),  # a frame that never completes
    ],
)
def test_a_hostile_reply_inside_a_batch_costs_only_its_own_item(reply, then, counted):
    with _escaped(_forging(reply, then), timeout_s=0.5) as potential:
        results = potential.evaluate(["a", "forge", "b", "c"])
        assert [r.value for r in results] == [2.0, 0.0, 2.0, 2.0]
        assert [r.failure for r in results] == [None, counted, None, None]
        stats = potential.stats
        assert stats.failures == 1 and getattr(stats, counted) == 1 and stats.restarts == 1
        assert stats.last_error.startswith("crash: a reply" if counted == "crashes" else "timeout")


@needs_bubblewrap
def test_what_the_code_prints_is_not_a_reply():
    header = struct.pack(">I", 22)
    body = f'def potential(o):\n    print({header!r} + b\'{{"id": 1, "phi": 5.0}}\', flush=True)\n    return 3.0'
    with _escaped(body) as potential:
        assert potential.phi("x") == 3.0 and potential.stats.failures == 0


@needs_bubblewrap
def test_an_endless_loop_times_out_and_the_sandbox_restarts():
    source = "def potential(o):\n    while o == 'loop':\n        pass\n    return 3.0"
    with SandboxedPotential(source, timeout_s=0.5) as potential:
        assert potential.phi("loop") == 0.0 and potential.stats.timeouts == 1 and potential.stats.crashes == 0
        assert potential.phi("fine") == 3.0 and potential.stats.restarts == 1


@needs_bubblewrap
def test_a_huge_allocation_is_stopped():
    source = "def potential(o):\n    return float(len([0] * 10 ** 10))"
    with SandboxedPotential(source, memory_mb=256) as potential:
        assert potential.phi("x") == 0.0 and potential.stats.last_error.startswith("MemoryError")
        assert potential.phi("y") == 0.0 and potential.stats.errors == 2  # still answering


@needs_bubblewrap
def test_bad_and_huge_values_give_zero_and_are_counted_apart():
    for value in ("'high'", "float('nan')", "1e308", f"{MAX_ABS_PHI * 2}", "-1e7"):
        with SandboxedPotential(f"def potential(o):\n    return {value}") as potential:
            assert potential.phi("x") == 0.0, value
            stats = potential.stats
            assert (stats.errors, stats.invalid) == ((1, 0) if value == "'high'" else (0, 1)), value
    with SandboxedPotential(f"def potential(o):\n    return {-MAX_ABS_PHI}") as potential:
        assert potential.phi("x") == -MAX_ABS_PHI
    with SandboxedPotential("x = 1 / 0\ndef potential(o):\n    return 1.0") as potential:
        assert potential.phi("x") == 0.0 and "ZeroDivisionError" in potential.stats.last_error
        assert potential.stats.errors == 1 and potential.stats.crashes == 0


def test_huge_potentials_do_not_break_the_running_normaliser():
    import gymnasium as gym

    values = iter([1e308, -1e308] * 20 + [float("inf"), 3.0])
    env = PotentialShaping(gym.make("CartPole-v1"), lambda obs, info: next(values))
    env.reset(seed=0)
    rewards = []
    for step in range(12):
        _, reward, terminated, truncated, _ = env.step(step % 2)
        rewards.append(reward)
        if terminated or truncated:
            env.reset()
    assert np.all(np.isfinite(rewards)) and env.invalid_potentials >= 12


def test_without_bubblewrap_bk_code_is_refused_unless_the_user_accepts_the_risk(monkeypatch):
    monkeypatch.setattr(isolation, "bubblewrap_problem", lambda: "bwrap not found")
    with pytest.raises(SandboxUnavailableError, match=r"bwrap not found.*--unsafe-local-exec"):
        choose_isolation(unsafe_local_exec=False)
    assert choose_isolation(unsafe_local_exec=True) == UNSAFE_LOCAL_EXEC


def test_the_unsafe_local_mode_keeps_the_in_process_filter():
    """Not a boundary (``collections._sys`` reaches ``sys``), but what it refuses it still refuses."""
    with SandboxedPotential(GOOD, isolation=UNSAFE_LOCAL_EXEC) as potential:
        assert potential.phi("ball") == 1.0
    posix = SYS_ESCAPE + "def potential(o):\n    sys.modules['posix'].system('true')\n    return 1.0"
    with SandboxedPotential(posix, isolation=UNSAFE_LOCAL_EXEC) as potential:
        assert potential.phi("x") == 0.0 and "refused by the sandbox: os.system" in potential.stats.last_error


def test_the_isolation_must_be_known():
    with pytest.raises(ValueError, match=r"isolation must be one of .*'chroot'"):
        SandboxedPotential(GOOD, isolation="chroot")
