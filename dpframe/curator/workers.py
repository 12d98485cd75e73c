"""Worker processes that read the rows for the curator, so a runaway release can be killed.

A release's work on the rows (the backend's ``compute``, ``key_counts``,
``row_reduce``, ...) runs in a worker process; validation, the charge, the
noise and the ledger stay in the curator's process.  When a release passes
the wall-clock limit, the curator kills the worker it is waiting on
(``SIGKILL``): the waiting call fails at once, the engine records the row
(``abandoned``, charge standing), the seat is free again, and the next
release gets a fresh worker.  Before, an abandoned release kept computing in
a thread that nothing could stop, holding its seat until it ended.

Workers are fresh Python processes (never ``fork``: the curator is
multi-threaded, and a forked child would share the noise source's state),
started on demand, up to the catalog's ``workers``; each keeps the data it was sent (a
dataset, or one seat's contribution-bounded view) for later releases.  The
worker draws its own randomness from the OS (a fresh
:class:`~dpframe.noise.SecureRandom`) for the one backend call that takes
any (choosing a unit's keys at random).

Heavy releases (a worst-case estimate of at least ``heavy_seconds``, public)
run in a second pool whose workers run at a lower CPU priority (nice +10):
one analyst's heavy requests then never hold the workers that everyone's
light releases wait for, and when both compete for the CPU the light ones
come first.  The curator marks a release heavy with :func:`heavy_lane`.

Example::

    pool = WorkerPool(2)
    backend = WorkerBackend(make_backend(frame), "cps", pool)
    backend.compute(plan, measures, keys)   # in a worker process
    backend.kill()                          # from another thread: stop it now
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.base import Backend
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.backends.reduce import RowReducer
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Expr
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey, Plan

__all__ = ["HEAVY_NICE", "WorkerBackend", "WorkerPool", "WorkerStoppedError", "heavy_lane"]

_RNG = "<worker rng>"  # stands for a SecureRandom argument (drawn in the worker)

#: The niceness added to a heavy-lane worker (a lower CPU priority).
HEAVY_NICE = 10

#: True while a heavy release runs in this thread (set by the curator).
_HEAVY: ContextVar[bool] = ContextVar("dpframe_heavy_release", default=False)


@contextmanager
def heavy_lane(heavy: bool) -> Iterator[None]:
    """Row work of the release run in this block goes to the heavy pool when ``heavy``."""
    token = _HEAVY.set(heavy)
    try:
        yield
    finally:
        _HEAVY.reset(token)


#: Pickling a plan recurses a few frames per plan step; the curator admits up to
#: ``max_plan_steps`` (1,000 by default), past Python's default limit of 1,000 frames.
RECURSION_LIMIT = 20_000


def _deep_enough() -> None:
    """Raise this process's recursion limit to :data:`RECURSION_LIMIT` (never lower it)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


class WorkerStoppedError(RuntimeError):
    """The worker computing a release was stopped (killed past the limit, or it died)."""


def _serve(conn: Connection) -> None:  # pragma: no cover - runs in the worker process
    """The worker's loop: keep the backends it is sent, answer method calls on them."""
    _deep_enough()
    backends: dict[str, PandasBackend] = {}
    rng = SecureRandom()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "load":
            backends[message[1]] = PandasBackend(message[2])
            continue
        if message[0] == "ping":
            conn.send((True, None))
            continue
        _, key, method, args = message
        args = tuple(rng if isinstance(a, str) and a == _RNG else a for a in args)
        try:
            reply: tuple[bool, Any] = (True, getattr(backends[key], method)(*args))
        except Exception as exc:
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception:  # an unpicklable result or error: a fixed one
            conn.send((False, RuntimeError("The worker could not send its answer.")))


class _Worker:
    """One worker process (``python -m dpframe.curator.workers``) and the keys it holds.

    A plain subprocess, not :mod:`multiprocessing`: its ``spawn`` re-imports
    the parent's main script in the child, which would start a second curator
    from a script without a ``__main__`` guard.
    """

    def __init__(self, nice: int = 0) -> None:
        ours, theirs = socket.socketpair()
        path = os.pathsep.join(p for p in sys.path if p)  # the curator's own dpframe
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dpframe.curator.workers", str(theirs.fileno()), str(nice)],
            pass_fds=[theirs.fileno()],
            env={**os.environ, "PYTHONPATH": path},
            stdin=subprocess.DEVNULL,
        )
        theirs.close()  # so our end reads EOF as soon as the worker dies
        self.conn = Connection(ours.detach())
        self.held: set[str] = set()
        self.dead = False

    @property
    def alive(self) -> bool:
        return not self.dead and self.process.poll() is None

    def call(self, key: str, rows: pd.DataFrame, method: str, args: tuple[Any, ...]) -> Any:
        try:
            if key not in self.held:
                self.conn.send(("load", key, rows))
                self.held.add(key)
            self.conn.send(("call", key, method, args))
            ok, value = self.conn.recv()
        except (EOFError, OSError) as exc:
            self.dead = True
            raise WorkerStoppedError("The worker computing this release was stopped.") from exc
        if not ok:
            raise value
        return value

    def ping(self) -> None:
        """Wait until the worker answers (it has imported dpframe)."""
        self.conn.send(("ping",))
        self.conn.recv()

    def kill(self) -> None:
        self.dead = True
        self.process.kill()

    def close(self) -> None:
        self.kill()
        self.process.wait(timeout=5)
        self.conn.close()


class WorkerPool:
    """Up to ``size`` worker processes, started on demand and shared by every seat.

    Args:
        size: the most worker processes alive at once; a call waits for a
            free one when all are busy.
        nice: added to each worker's niceness (a lower CPU priority; 0: none).
    """

    def __init__(self, size: int, nice: int = 0) -> None:
        _deep_enough()  # plans of up to 1,000 steps are pickled to the workers
        self.size = size
        self.nice = nice
        self._idle: list[_Worker] = []
        self._alive = 0
        self._closed = False
        self._ready = threading.Condition()
        self.started = 0  # workers started so far (a killed one is replaced)

    def acquire(self) -> _Worker:
        """An idle worker, a new one (up to ``size``), or the next one freed."""
        with self._ready:
            while not self._idle and self._alive >= self.size:
                self._ready.wait()
            if self._closed:
                raise WorkerStoppedError("The curator is shutting down.")
            if self._idle:
                return self._idle.pop()
            self._alive += 1
            self.started += 1
        try:
            return _Worker(self.nice)
        except BaseException:
            with self._ready:
                self._alive -= 1
                self._ready.notify()
            raise

    def warm(self) -> None:
        """Start every worker now and wait until each answers (before serving)."""
        with self._ready:
            missing = self.size - self._alive
            self._alive += missing
            self.started += missing
        fresh = [_Worker(self.nice) for _ in range(missing)]
        for worker in fresh:
            worker.ping()
        with self._ready:
            self._idle.extend(fresh)
            self._ready.notify_all()

    def release(self, worker: _Worker) -> None:
        """Take a worker back; a killed or dead one is replaced by a new one at once."""
        if not worker.alive:
            worker.close()
            with self._ready:
                if self._closed:
                    self._alive -= 1
                    self._ready.notify()
                    return
                self.started += 1
            try:
                replacement = _Worker(self.nice)  # starts while the next request comes
            except BaseException:
                with self._ready:
                    self._alive -= 1
                    self._ready.notify()
                raise
            with self._ready:
                self._idle.append(replacement)
                self._ready.notify()
            return
        with self._ready:
            if self._closed:
                worker.close()
                self._alive -= 1
            else:
                self._idle.append(worker)
            self._ready.notify()

    def close(self) -> None:
        """Stop every idle worker now, and each busy one when it is given back."""
        with self._ready:
            self._closed = True
            idle, self._idle = self._idle, []
            self._alive -= len(idle)
            self._ready.notify_all()
        for worker in idle:
            worker.close()


class WorkerBackend:
    """A backend whose row work runs in the pool's workers (the :class:`Backend` protocol).

    Schema, fingerprint and preflight are answered here from ``inner`` (they
    read no row); every call that reads rows is sent to a worker, with
    ``inner``'s rows the first time that worker sees ``key`` (the worker
    builds its own :class:`PandasBackend` over them; a backend itself refuses
    to be pickled).

    Args:
        inner: the in-memory backend over the rows.
        key: names ``inner`` in the workers (one per dataset, or per seat view).
        pool: the curator's workers.
        heavy: the workers of heavy releases (:func:`heavy_lane`; None: ``pool``).
    """

    def __init__(
        self, inner: PandasBackend, key: str, pool: WorkerPool, heavy: WorkerPool | None = None
    ) -> None:
        self.inner = inner
        self._rows: pd.DataFrame = inner.rows  # sent to the workers, never elsewhere
        self.key = key
        self.pool = pool
        self.heavy = heavy
        self._guard = threading.Lock()
        self._current: _Worker | None = None
        self._stopped = False

    def _call(self, method: str, *args: Any) -> Any:
        self._check()
        pool = self.heavy if self.heavy is not None and _HEAVY.get() else self.pool
        worker = pool.acquire()
        with self._guard:
            stopped = self._stopped
            self._current = None if stopped else worker
        if stopped:  # killed while waiting for a worker
            pool.release(worker)
            self._check()
        try:
            return worker.call(self.key, self._rows, method, args)
        finally:
            with self._guard:
                self._current = None
            pool.release(worker)

    def _check(self) -> None:
        with self._guard:
            if self._stopped:
                raise WorkerStoppedError("This release was stopped.")

    def kill(self) -> bool:
        """Stop this backend's release now (True if a worker was killed); from any thread.

        The worker computing for it is killed; a call still waiting for a
        worker, or made later, fails at once, until :meth:`resume`.
        """
        with self._guard:
            self._stopped = True
            worker = self._current
        if worker is None:
            return False
        worker.kill()
        return True

    def resume(self) -> None:
        """Accept calls again (the stopped release has ended; a new one begins)."""
        with self._guard:
            self._stopped = False

    def compute(
        self,
        plan: Plan,
        measures: tuple[Measure, ...],
        by: tuple[GroupKey, ...],
        undeclared: bool = False,
    ) -> list[npt.NDArray[np.float64]]:
        """:meth:`Backend.compute`, in a worker."""
        result: list[npt.NDArray[np.float64]] = self._call(
            "compute", plan, measures, by, undeclared
        )
        return result

    def key_counts(
        self,
        plan: Plan,
        expr: Expr,
        unit: str = "",
        max_keys: int = 0,
        rng: SecureRandom | None = None,
    ) -> tuple[list[Hashable], npt.NDArray[np.int64]]:
        """:meth:`Backend.key_counts`, in a worker (with the worker's own randomness)."""
        drawn = None if rng is None else _RNG
        result: tuple[list[Hashable], npt.NDArray[np.int64]] = self._call(
            "key_counts", plan, expr, unit, max_keys, drawn
        )
        return result

    def fingerprint(self) -> str:
        """:meth:`Backend.fingerprint` of the rows (here; the curator names data otherwise)."""
        return self.inner.fingerprint()

    def schema_frame(self) -> pd.DataFrame:
        """:meth:`Backend.schema_frame` (public facts only, answered here)."""
        return self.inner.schema_frame()

    def row_reduce(self, plan: Plan, exprs: Sequence[Expr], reducer: RowReducer) -> tuple[Any, ...]:
        """:meth:`Backend.row_reduce`, in a worker."""
        result: tuple[Any, ...] = self._call("row_reduce", plan, exprs, reducer)
        return result

    @property
    def holds_rows(self) -> bool:
        """As ``inner``: row-level mechanisms get the rows they ask for from a worker."""
        return self.inner.holds_rows

    def preflight(self) -> None:
        """:meth:`Backend.preflight` (reads no data)."""
        self.inner.preflight()

    def numeric_rows(self, plan: Plan, exprs: Sequence[Expr]) -> list[npt.NDArray[np.float64]]:
        """:meth:`Backend.numeric_rows`, in a worker."""
        result: list[npt.NDArray[np.float64]] = self._call("numeric_rows", plan, exprs)
        return result

    def category_codes(
        self, plan: Plan, expr: Expr, categories: Sequence[Hashable]
    ) -> npt.NDArray[np.int64]:
        """:meth:`Backend.category_codes`, in a worker."""
        result: npt.NDArray[np.int64] = self._call("category_codes", plan, expr, categories)
        return result

    def bound_contributions(self, unit: str, max_rows: int, rng: SecureRandom) -> Backend:
        """:meth:`Backend.bound_contributions` here (with the session's randomness), kept apart."""
        bounded = self.inner.bound_contributions(unit, max_rows, rng)  # a PandasBackend
        key = f"{self.key}|unit:{unit}:{max_rows}:{id(bounded)}"
        return WorkerBackend(bounded, key, self.pool, self.heavy)


if __name__ == "__main__":  # pragma: no cover - the worker process
    if len(sys.argv) > 2 and int(sys.argv[2]) > 0:
        os.nice(int(sys.argv[2]))  # a heavy-lane worker: a lower CPU priority
    _serve(Connection(int(sys.argv[1])))
