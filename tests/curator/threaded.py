"""A curator app served by uvicorn in a thread of the test process (so tests can reach into it)."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from tests.curator.support import free_port


@contextmanager
def served(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a daemon thread; yields its URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/v1/health", timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("the threaded curator did not start") from None
            time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=15)
