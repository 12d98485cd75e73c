"""One release computing in a thread of its own, so the curator can stop waiting for it.

Split from :mod:`dpframe.curator.service` (its size); the service starts a
:class:`ReleaseWork` per release and waits on it with its time limit.
"""

from __future__ import annotations

import threading
from typing import Any

from dpframe.backends.cluster import ClusterFailedError
from dpframe.curator.seats import Seat
from dpframe.curator.workers import WorkerStoppedError, heavy_lane
from dpframe.engine.reruns import fresh_release
from dpframe.engine.session import ReleaseEvent
from dpframe.mechanisms.runtime.row_ceiling import row_ceiling
from dpframe.mechanisms.runtime.stopping import stoppable

__all__ = ["ReleaseWork", "infrastructure_failure"]


def infrastructure_failure(error: BaseException) -> bool:
    """True for a failure of the machinery (a worker stopped, a Dask cluster lost), not the data."""
    causes = (error, error.__context__)
    return any(isinstance(c, (ClusterFailedError, WorkerStoppedError)) for c in causes)


class ReleaseWork:
    """One release computing in a thread of its own (so the curator can stop waiting for it).

    When the curator gives up waiting (:meth:`wait` is False), the thread
    gives the seat back and lets its ledger charge again once it ends.
    """

    def __init__(
        self,
        seat: Seat,
        node: Any,
        heavy: bool = False,
        fresh: bool = False,
        ceiling: int | None = None,
    ) -> None:
        self.seat = seat
        self.node = node
        self.heavy = heavy  # its row work in the heavy lane (a public estimate)
        self.fresh = fresh  # a new, charged release even if the ledger answered it
        self.ceiling = ceiling  # the public row ceiling: no copy draws more rows
        self.events: list[ReleaseEvent] = []
        self.result: Any = None
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._guard = threading.Lock()
        self._given_up = False
        self.stop = threading.Event()  # set when given up: the release ends at a stop point
        threading.Thread(target=self._run, name="dpframe-release", daemon=True).start()

    def _run(self) -> None:
        unsubscribe = self.seat.session.subscribe(self.events.append)
        try:
            with (
                stoppable(self.stop),
                heavy_lane(self.heavy),
                fresh_release(self.fresh),
                row_ceiling(self.ceiling),
            ):
                self.result = self.seat.session.run(self.node)
        except BaseException as exc:  # handed to the waiting thread
            self.error = exc
        finally:
            unsubscribe()
            with self._guard:
                self._done.set()
                given_up = self._given_up
            if given_up:
                self.seat.ledger.resume()
                self.seat.give()

    def wait(self, seconds: float) -> bool:
        """True when the release ended within ``seconds``; else it is told to stop.

        A release given up on ends at once when its rows are in a worker
        process (the caller kills it), else at its next stop point
        (:mod:`dpframe.mechanisms.runtime.stopping`); its thread then gives the seat back.
        """
        if self._done.wait(seconds):
            return True
        with self._guard:
            if self._done.is_set():  # ended just now
                return True
            self._given_up = True
        self.stop.set()
        return False
