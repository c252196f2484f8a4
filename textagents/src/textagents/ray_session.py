"""Ray for ``bench run --backend ray`` and ``method compare --backend ray``: the Ray already initialised in this
process, the cluster at an address (``--address``, else ``RAY_ADDRESS``; ``auto``: the one ``ray start`` began on
this machine), or a new local one; shut down afterwards only when started here."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

#: The object store of a local Ray: the tasks return small records, and a small store fits machines with a small
#: /dev/shm.
LOCAL_RAY_OBJECT_STORE = 256 * 1024**2


def import_ray() -> Any:
    """The ``ray`` module, or an ``ImportError`` saying how to install it."""
    try:
        import ray
    except ImportError as error:
        raise ImportError('the Ray backend needs ray: pip install "textagents[ray]"') from error
    return ray


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """Within the block, Ray is initialised: joined at ``address`` (or ``RAY_ADDRESS``), else started here with
    ``num_cpus`` CPUs (None: this machine's CPUs and GPUs, as Ray detects them). Yields the ``ray`` module."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(
                num_cpus=num_cpus,
                object_store_memory=LOCAL_RAY_OBJECT_STORE,
                include_dashboard=False,
                log_to_driver=False,
            )
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()
