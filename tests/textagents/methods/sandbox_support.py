"""Whether BK-Code's OS boundary (bubblewrap) can run here: tests that need it are skipped where it cannot,
except in CI (``CI`` set), where .ci/run installs it and a missing boundary must fail."""

from __future__ import annotations

import os

import pytest

from textagents.methods.bk.isolation import bubblewrap_problem

_problem = bubblewrap_problem()
needs_bubblewrap = pytest.mark.skipif(
    _problem is not None and not os.environ.get("CI"), reason=f"bubblewrap cannot run here: {_problem}"
)
#: For tests of BK-Code's method logic with trusted code: the OS boundary where it runs (always in CI).
UNSAFE_LOCAL_EXEC_HERE = _problem is not None and not os.environ.get("CI")
