"""``jit``: numba's ``njit`` when numba is installed, else the function itself (the same code, interpreted)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import numba
except ImportError:
    HAVE_NUMBA = False

    def jit(function: Callable[..., Any]) -> Callable[..., Any]:
        return function
else:
    HAVE_NUMBA = True
    jit = numba.njit(cache=True, nogil=True)
