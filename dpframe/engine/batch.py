"""Several releases admitted at once: all or none, in one durable ledger commit.

``with session.batch() as batch:`` collects releases (``batch.add(lambda:
pf.count(epsilon=0.1))``); nothing is read or charged inside the block.  When
the block ends, the accountant's filter admits the total of every release, or
refuses them all (``BudgetExceededError``, nothing charged), and the ledger
records every charge in one transaction with one synchronous commit; then
each release is computed in order.  A release that fails while computing
keeps its charge (as a single release would) and raises when its result is read.

Example:
    >>> with session.batch() as batch:  # doctest: +SKIP
    ...     count = batch.add(lambda: pf.count(epsilon=0.1))
    ...     mean = batch.add(lambda: pf["wage"].mean(epsilon=0.1))
    >>> count.result, mean.result  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpframe.errors import DPError

if TYPE_CHECKING:
    from dpframe.engine.release_path import Admission, Node, ReleasePath
    from dpframe.engine.session import Session

__all__ = ["Batch", "Pending", "prepaid_release"]

_UNSET = object()


class Pending:
    """One release of a batch; its result is available when the batch's block has ended."""

    def __init__(self, function: Callable[[], Any], node: Node) -> None:
        self._function = function
        self.node = node
        self._result: Any = _UNSET
        self._error: BaseException | None = None

    def settle(self) -> None:
        """Run the queued function (its release is prepaid); keep its result or its error."""
        try:
            self._result = self._function()
        except Exception as exc:  # kept for .result; the charge stands
            self._error = exc

    def fail(self, error: BaseException) -> None:
        """Record ``error`` unless the function already failed with its own."""
        if self._error is None:
            self._error = error

    @property
    def done(self) -> bool:
        """True once the release was computed (or failed)."""
        return self._result is not _UNSET or self._error is not None

    @property
    def result(self) -> Any:
        """The release (raises what the release raised, if it failed)."""
        if self._error is not None:
            raise self._error
        if self._result is _UNSET:
            raise DPError("A batch's results are available when its `with` block has ended.")
        return self._result

    def __repr__(self) -> str:
        state = "failed" if self._error else ("done" if self.done else "queued")
        return f"Pending({self.node.label}, {state})"


@dataclass
class _Prepaid:
    """The admitted releases a batch is computing now (read by ``Session.run``)."""

    session: Session
    path: ReleasePath
    admission: Admission
    used: bool = field(default=False)


_PREPAID: ContextVar[_Prepaid | None] = ContextVar("dpframe_prepaid", default=None)


def prepaid_release(session: Session, node: Node) -> Any:
    """Inside a batch's evaluation: release ``node`` on its admitted charge (else ``_UNSET``)."""
    prepaid = _PREPAID.get()
    if prepaid is None or prepaid.session is not session:
        return _UNSET
    if prepaid.used or prepaid.admission.admitted.node != node:
        raise DPError(
            "A function given to batch.add() made a different release when it was run: "
            "give it a function that makes the same single release every time."
        )
    prepaid.used = True
    return prepaid.path.finish(prepaid.admission)


def is_unset(value: Any) -> bool:
    """True for the marker :func:`prepaid_release` returns outside a batch."""
    return value is _UNSET


class Batch:
    """Releases queued by :meth:`add`, admitted together when the ``with`` block ends."""

    def __init__(self, session: Session, path: ReleasePath) -> None:
        self._session = session
        self._path = path
        self._items: list[Pending] = []

    def add(self, function: Callable[[], Any]) -> Pending:
        """Queue the release that ``function`` makes (it is captured, not run: free)."""
        node = self._session.capture_node(function)
        pending = Pending(function, node)
        self._items.append(pending)
        return pending

    def __len__(self) -> int:
        return len(self._items)

    def run(self) -> None:
        """Admit every queued release at once (or none), then compute each in order."""
        admissions = self._path.admit_batch([p.node for p in self._items])
        for pending, admission in zip(self._items, admissions, strict=True):
            prepaid = _Prepaid(self._session, self._path, admission)
            token = _PREPAID.set(prepaid)
            try:
                pending.settle()
            finally:
                _PREPAID.reset(token)
            if not prepaid.used:
                self._path.abandon(admission)
                pending.fail(DPError("The batch function made no release when run."))
