"""A curator that dies while answering: the client says so with a DPError, never a raw traceback.

A curator killed mid-answer leaves the client with a response whose body is
shorter than its ``Content-Length`` (``http.client.IncompleteRead``) or with no
status line at all; both must reach the analyst as
:class:`~dpframe.remote.http.CuratorUnavailableError` (a :class:`dpframe.DPError`), like a
refused connection, so a loop over releases stops cleanly.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from dpframe.remote.http import CuratorUnavailableError, Http


@pytest.fixture(params=[b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"answer":', b""])
def cut_off_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A server that reads one request, writes ``request.param`` and closes the connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(request.param)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    thread.join(5)
    listener.close()


def test_an_answer_cut_off_is_a_dp_error(cut_off_server: str) -> None:
    client = Http(cut_off_server, "token", timeout=5)
    with pytest.raises(CuratorUnavailableError, match="Cannot reach the curator at http://127"):
        client.request("GET", "/v1/health")
