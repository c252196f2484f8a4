"""Tiny random models built once per session (nothing is downloaded) and the corridor fixture env."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from http.server import HTTPServer

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Tiny models on a shared CI machine: one thread is ~8x faster than several contending for two cores.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    from tests.textenvs import corridor_env
    from textagents.testing import build_tiny_models

    texts = ["You are in cell 0 of 5. The door is 4 steps right.", "reach the door", "go left, go right, wait"]
    assert corridor_env.CORRIDOR_ID
    return build_tiny_models(tmp_path_factory.mktemp("tiny_models"), texts=texts)


@pytest.fixture(scope="session")
def causal_backend(tiny_models):
    from textagents.llm.transformers_backend import TransformersBackend

    return TransformersBackend(tiny_models.causal, batch_size=4)


@pytest.fixture(scope="session")
def seq2seq_backend(tiny_models):
    from textagents.llm.transformers_backend import TransformersBackend

    return TransformersBackend(tiny_models.seq2seq, batch_size=4)


@pytest.fixture
def loopback_servers() -> Iterator[Callable[..., HTTPServer]]:
    """``start(server_class, *args, **kwargs)``: the server built and serving on a daemon thread; every one
    shut down and closed after the test."""
    servers: list[HTTPServer] = []

    def start(server_class: Callable[..., HTTPServer], *args, **kwargs) -> HTTPServer:
        server = server_class(*args, **kwargs)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
