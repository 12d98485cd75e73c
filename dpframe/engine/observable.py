"""What local and remote sessions share: release events, listeners and ``explain``.

:class:`Observable` is the base of :class:`dpframe.engine.session.Session`
(embedded) and :class:`dpframe.remote.client.RemoteSession` (a curator's
client): both tell listeners (the meter) after every release and answer
``explain`` by capturing the release node a function makes, before anything is
spent (:func:`capture`, called by the session's ``run``).  Both also say how
each release was answered (charged, or from the ledger) to whoever collects
it in this context (:func:`answers_collected`: the facade, which tells the
analyst of an answer from the ledger in a stock kernel).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.plan.privacy import Budget

__all__ = [
    "Observable",
    "ReleaseEvent",
    "answers_collected",
    "capture",
    "is_capturing",
    "note_answer",
]


@dataclass(frozen=True)
class ReleaseEvent:
    """Sent to listeners after every release (one-way: listeners cannot change the budget).

    ``recorded`` is set when the request was answered from the ledger (its note,
    ``from the ledger, recorded 14:02``; ``cost`` is then zero).
    """

    query: str
    cost: Budget
    spent: Budget
    remaining: Budget
    total: Budget
    recorded: str | None = None


class _Captured(Exception):  # noqa: N818  (a signal, not an error)
    """Raised by :meth:`Session.run` inside :meth:`Observable.explain`: carries the node."""

    def __init__(self, session: Observable, node: Any) -> None:
        super().__init__("captured")
        self.session = session
        self.node = node


#: The session whose explain() is capturing the next release in this context.
_CAPTURING: ContextVar[Observable | None] = ContextVar("dpframe_capturing", default=None)


#: While :func:`answers_collected` runs: how each release was answered, in order (the
#: ledger's note of an answer from the ledger, None for a charged release).
_ANSWERS: ContextVar[list[str | None] | None] = ContextVar("dpframe_answers", default=None)


@contextmanager
def answers_collected() -> Iterator[list[str | None]]:
    """Collect how each release made inside the block is answered (see :func:`note_answer`).

    The list holds, per release, its ledger note (``from the ledger, recorded
    14:02``: answered from the ledger, charged nothing) or None (charged).  An
    inner block collects for itself; the outer one does not see its releases.
    """
    found: list[str | None] = []
    token = _ANSWERS.set(found)
    try:
        yield found
    finally:
        _ANSWERS.reset(token)


def note_answer(recorded: str | None) -> None:
    """Tell the collector in force, if any, how a release was answered (a session calls it)."""
    found = _ANSWERS.get()
    if found is not None:
        found.append(recorded)


def is_capturing(session: Observable) -> bool:
    """True inside ``session.explain(function)``."""
    return _CAPTURING.get() is session


def capture(session: Observable, node: Any) -> None:
    """Inside ``session.explain(function)``: stop the function and hand over ``node``."""
    if _CAPTURING.get() is session:
        raise _Captured(session, node)


class Observable:
    """What local and remote sessions share: listeners of releases, and explain()."""

    _listeners: list[Callable[[ReleaseEvent], None]]

    def subscribe(self, listener: Callable[[ReleaseEvent], None]) -> Callable[[], None]:
        """Call ``listener`` after every release; returns a function that unsubscribes.

        Example:
            >>> stop = session.subscribe(lambda e: print(e.query, e.cost))  # doctest: +SKIP
            >>> pf["education"].mean(epsilon=0.1)  # doctest: +SKIP
            >>> stop()  # doctest: +SKIP

        The listener gets a :class:`ReleaseEvent` (query, cost, spent,
        remaining, total); it cannot change the budget.  The Jupyter meter is
        one.  A listener that fails is reported as a warning; the release stands.
        """
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def explain(self, query: Any, detail: bool = False) -> Any:
        """What a release would cost and how accurate it would be; nothing is spent.

        Example:
            >>> session.explain(lambda: pf["wage"].mean(epsilon=0.1))  # doctest: +SKIP
            >>> session.explain(lambda: pf.describe(epsilon=1), detail=True)  # doctest: +SKIP

        It shows the answer's accuracy in plain words (a composite: one line per
        output), the cost and what would be left.

        Args:
            query: a release node, or a function that makes one release (e.g.
                ``lambda: pf["wage"].mean(epsilon=0.1)``): the release's node is
                captured when it reaches the engine, and the function is not run further.
            detail: also show every noisy measure behind it (sensitivity, noise
                scale, 95% half-width) and the accuracy floor.
        """
        if not isinstance(detail, bool):
            raise InvalidArgumentError("explain(detail=...) takes True or False.")
        found = self._explain_node(query if not callable(query) else self.capture_node(query))
        if detail and hasattr(found, "detailed"):
            return dataclasses.replace(found, detailed=True)
        return found

    def capture_node(self, function: Callable[[], Any]) -> Any:
        """The release node that ``function`` makes, captured before anything is spent."""
        if not callable(function):
            raise SchemaError("Give a function that makes one release, e.g. lambda: pf.count(...).")
        token = _CAPTURING.set(self)
        try:
            function()
        except _Captured as captured:
            if captured.session is not self:
                raise
            return captured.node
        finally:
            _CAPTURING.reset(token)
        raise SchemaError(
            "The function made no release: give a function that makes one release, "
            "e.g. lambda: pf.count(epsilon=0.1)."
        )

    def _explain_node(self, node: Any) -> Any:
        raise SchemaError("explain() takes a release node or a function that makes one release.")

    def _announce(self, event: ReleaseEvent) -> None:
        """Tell every listener of a release; a failing listener never loses the release."""
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as exc:  # a broken meter must not lose the release
                warnings.warn(
                    f"A release listener failed ({type(exc).__name__}); the release stands.",
                    RuntimeWarning,
                    stacklevel=4,
                )
