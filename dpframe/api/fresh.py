"""``fresh=True`` on a release method: a new, charged release instead of the ledger's answer.

A request the ledger already answered (the same node by value, privacy
parameters and data) is answered from it, free (:mod:`dpframe.engine.reruns`).
Every release method takes ``fresh=``; :func:`fresh_aware` reads it and
holds it for the session while the method runs (both the embedded session
and a curator's client read it there).  It first checks the keywords given
against the method's own (:mod:`dpframe.api.keywords`): a pandas keyword the
method does not take is refused before anything is charged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from dpframe.api.keywords import check_keywords, keyword_names
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
    read warns once (:func:`dpframe.api.thin.warn_if_thin`).  A keyword the
    method does not take is refused first, naming what to write instead, unless
    it asks for what the method always does (``skipna=True``): then it is
    dropped (:func:`dpframe.api.keywords.check_keywords`).
    """
    takes = keyword_names(inspect.signature(method))
    name = method.__name__

    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        for dropped in check_keywords(name, takes, args[0] if args else None, kwargs):
            del kwargs[dropped]
        outermost = not _INSIDE.get()
        token = _INSIDE.set(True)
        try:
            with fresh_release(kwargs.get("fresh", False)):  # type: ignore[arg-type]
                result = method(*args, **kwargs)
        finally:
            _INSIDE.reset(token)
        return warn_if_thin(result) if outermost else result

    return run
