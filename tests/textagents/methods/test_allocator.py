"""``keep_freed_memory``: with it, memory freed and allocated again is not faulted in again (glibc only)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from textagents.methods.core.allocator import ENVIRONMENT, keep_freed_memory

# Three 5 MB arrays allocated and freed, ten times: by glibc's defaults the heap's top is given back each time
# (15 MB free at the top, beyond twice the 5 MB mmap threshold it has adapted to), so each round faults its pages
# in again (~1,000 faults a round here).
ROUNDS = """
import resource, sys
import numpy as np
from textagents.methods.core.allocator import keep_freed_memory

if sys.argv[1] == "keep":
    assert keep_freed_memory()
for _ in range(3):
    arrays = [np.ones(5 * 2**20 // 8) for _ in range(3)]
    del arrays
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    arrays = [np.ones(5 * 2**20 // 8) for _ in range(3)]
    del arrays
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _page_faults(setting: str) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT}
    done = subprocess.run([sys.executable, "-c", ROUNDS, setting], capture_output=True, text=True, check=True, env=env)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's settings are glibc's")
def test_memory_freed_and_allocated_again_is_not_faulted_in_again():
    default, kept = _page_faults("default"), _page_faults("keep")
    assert default > 1000 and kept < default / 20


@pytest.mark.parametrize("variable", ENVIRONMENT)
def test_the_environments_setting_stands(monkeypatch, variable):
    monkeypatch.setenv(variable, "131072")
    assert not keep_freed_memory()
