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
from typing import ParamSpec, TypeVar

from dpframe.engine.reruns import fresh_release

__all__ = ["fresh_aware"]

P = ParamSpec("P")
R = TypeVar("R")


def fresh_aware(method: Callable[P, R]) -> Callable[P, R]:
    """Run ``method`` with its ``fresh=`` keyword in force for the releases it makes.

    ``fresh=False`` (the default): a request the ledger already answered is
    answered from it, charged nothing and marked ``from the ledger``;
    ``fresh=True``: a new release, charged.
    """

    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with fresh_release(kwargs.get("fresh", False)):  # type: ignore[arg-type]
            return method(*args, **kwargs)

    return run
