"""BK-Code's sandbox against hostile LLM code: the static check refuses it, and with the check skipped the
process layers (empty environment, limits, audit hook, reduced builtins, timeout) still stop each attack."""

from __future__ import annotations

from pathlib import Path

import pytest

from textagents.methods.bk.sandbox import SandboxedPotential, UnsafeCodeError, check_code

GOOD = """
import re
def potential(observation):
    return float(len(re.findall(r"ball", observation)))
"""
# The classic escape from a restricted namespace: reach os through object's subclasses.
ESCAPE = """
def _os_function(name):
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "_wrap_close":
            return cls.__init__.__globals__[name]
    raise LookupError(name)
"""


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


def test_a_checked_potential_runs_with_its_allowed_imports():
    with SandboxedPotential(GOOD) as potential:
        assert potential.phi("a ball and a ball") == 2.0
        assert potential({"text": "no"}, {}) == 0.0
        assert potential.stats.calls == 2 and potential.stats.failures == 0


def _unchecked(source, **kwargs):
    return SandboxedPotential(source, check=False, **kwargs)


def test_writing_a_file_is_stopped(tmp_path):
    sources = [
        "def potential(o):\n    open('pwned', 'w').write('x')\n    return 1.0",
        ESCAPE + "def potential(o):\n    _os_function('system')('touch pwned')\n    return 1.0",
    ]
    for source in sources:
        with _unchecked(source) as potential:
            assert potential.phi("x") == 0.0 and potential.stats.failures == 1
            assert not Path(potential._workdir.name, "pwned").exists()


def test_the_network_is_stopped():
    real_import = ESCAPE + "def _import(name):\n    return _os_function('__builtins__')['__import__'](name)\n"
    sources = [
        real_import + "def potential(o):\n    _import('socket').create_connection(('127.0.0.1', 9))\n    return 1.0",
        real_import + "def potential(o):\n    _import('urllib.request').urlopen('http://127.0.0.1:9')\n    return 1.0",
    ]
    for source in sources:
        with _unchecked(source) as potential:
            assert potential.phi("x") == 0.0
            assert "refused by the sandbox: import" in potential.stats.last_error


def test_the_parents_environment_is_not_visible(monkeypatch):
    monkeypatch.setenv("TEXTAGENTS_TEST_SECRET", "s3cret")
    # Python itself may set LC_CTYPE (PEP 538); nothing of the parent's environment is there
    source = ESCAPE + "def potential(o):\n    return float(len(set(_os_function('environ')) - {'LC_CTYPE'}))"
    with _unchecked(source) as potential:
        assert potential.phi("x") == 0.0 and potential.stats.failures == 0


def test_a_fork_bomb_is_stopped():
    source = ESCAPE + "def potential(o):\n    while True:\n        _os_function('fork')()"
    with _unchecked(source, timeout_s=2.0) as potential:
        assert potential.phi("x") == 0.0
        assert "refused by the sandbox: os.fork" in potential.stats.last_error


def test_an_endless_loop_times_out_and_the_sandbox_restarts():
    source = "def potential(o):\n    while o == 'loop':\n        pass\n    return 3.0"
    with SandboxedPotential(source, timeout_s=0.5) as potential:
        assert potential.phi("loop") == 0.0 and potential.stats.timeouts == 1
        assert potential.phi("fine") == 3.0 and potential.stats.restarts == 1


def test_a_huge_allocation_is_stopped():
    source = "def potential(o):\n    return float(len([0] * 10 ** 10))"
    with SandboxedPotential(source, memory_mb=256) as potential:
        assert potential.phi("x") == 0.0 and potential.stats.last_error.startswith("MemoryError")
        assert potential.phi("y") == 0.0  # still answering


def test_bad_return_values_and_broken_definitions_give_zero():
    with SandboxedPotential("def potential(o):\n    return 'high'") as potential:
        assert potential.phi("x") == 0.0 and "ValueError" in potential.stats.last_error
    with SandboxedPotential("def potential(o):\n    return float('nan')") as potential:
        assert potential.phi("x") == 0.0 and "not a finite number" in potential.stats.last_error
    with SandboxedPotential("x = 1 / 0\ndef potential(o):\n    return 1.0") as potential:
        assert potential.phi("x") == 0.0 and "ZeroDivisionError" in potential.stats.last_error
