"""Stopping a release that computes in this process: stop points in its long loops.

A curator gives each release a wall-clock limit, far above the release's
worst case, so that it fires only on a server fault.  Work on the rows runs
in worker processes the curator can kill (:mod:`dpframe.curator.workers`),
but a few mechanisms loop over rows in the curator's own process after
reading them (regressions with ``analysis="iteration"``: one noisy step per
row; synthetic copies: their fitting rounds), and a thread cannot be killed.
These loops call :func:`check_stop` at *stop points*: every progress report
(:class:`~dpframe.mechanisms.runtime.progress.ProgressBar`) and every
:data:`STOP_EVERY` rows of a per-row loop.  When the curator gives up on a
release it sets the release's stop event, the next stop point raises
:class:`ReleaseStoppedError`, the release's charge stands (its ledger row
says ``abandoned``) and the seat is free again.

Outside a curator there is no stop event and a stop point costs one
context-variable read.

Example::

    stop = threading.Event()
    with stoppable(stop):
        session.run(node)   # stop.set() from another thread ends it at the next stop point
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from dpframe.errors import DPError

__all__ = ["STOP_EVERY", "ReleaseStoppedError", "check_stop", "stoppable"]

#: Rows between two stop points in a per-row loop (about 10 ms of work).
STOP_EVERY = 1 << 12

_STOP: ContextVar[threading.Event | None] = ContextVar("dpframe_stop", default=None)


class ReleaseStoppedError(DPError):
    """The release was stopped from outside (a curator's wall-clock limit); its charge stands."""


@contextmanager
def stoppable(event: threading.Event) -> Iterator[None]:
    """Releases run in this block stop at their next stop point once ``event`` is set."""
    token = _STOP.set(event)
    try:
        yield
    finally:
        _STOP.reset(token)


def check_stop() -> None:
    """A stop point: raise :class:`ReleaseStoppedError` if this release was told to stop."""
    event = _STOP.get()
    if event is not None and event.is_set():
        raise ReleaseStoppedError(
            "This release was stopped (the curator's wall-clock limit); its charge stands."
        )
