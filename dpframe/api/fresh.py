"""``fresh=True`` on a release method: a new, charged release instead of the ledger's answer.

A request the ledger already answered (the same node by value, privacy
parameters and data) is answered from it, free (:mod:`dpframe.engine.reruns`).
Every release method takes ``fresh=``; :func:`fresh_aware` reads it and
holds it for the session while the method runs (both the embedded session
and a curator's client read it there).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from dpframe.api.thin import warn_if_thin
from dpframe.engine.reruns import fresh_release

__all__ = ["fresh_aware"]

P = ParamSpec("P")
R = TypeVar("R")

#: True while a release method runs (a method it calls does not check its own result).
_INSIDE: ContextVar[bool] = ContextVar("dpframe_release_method", default=False)


def fresh_aware(method: Callable[P, R]) -> Callable[P, R]:
    """Run ``method`` with its ``fresh=`` keyword in force for the releases it makes.

    ``fresh=False`` (the default): a request the ledger already answered is
    answered from it, charged nothing and marked ``from the ledger``;
    ``fresh=True``: a new release, charged.  A result with cells too thin to
    read warns once (:func:`dpframe.api.thin.warn_if_thin`).
    """

    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        outermost = not _INSIDE.get()
        token = _INSIDE.set(True)
        try:
            with fresh_release(kwargs.get("fresh", False)):  # type: ignore[arg-type]
                result = method(*args, **kwargs)
        finally:
            _INSIDE.reset(token)
        return warn_if_thin(result) if outermost else result

    return run
