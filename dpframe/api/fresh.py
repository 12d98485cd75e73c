"""``fresh=True`` on a release method: a new, charged release instead of the ledger's answer.

A request the ledger already answered (the same node by value, privacy
parameters and data) is answered from it, free (:mod:`dpframe.engine.reruns`).
Every release method takes ``fresh=``; :func:`fresh_aware` reads it and
holds it for the session while the method runs (both the embedded session
and a curator's client read it there).  It first checks the keywords given
against the method's own (:mod:`dpframe.api.keywords`): a pandas keyword the
method does not take is refused before anything is charged.  The outermost
method also collects how each of its releases was answered and, when it
returns, says what a table's repr cannot (:mod:`dpframe.api.notices`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from dpframe.api.keywords import check_keywords, keyword_names
from dpframe.api.notices import told
from dpframe.engine.observable import answers_collected
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
    ``fresh=True``: a new release, charged.  A keyword the method does not take
    is refused first, naming what to write instead, unless it asks for what the
    method always does (``skipna=True``): then it is dropped
    (:func:`dpframe.api.keywords.check_keywords`).  When it returns, what a
    table's repr cannot show is said once (:func:`dpframe.api.notices.told`):
    cells too thin to read, keys found privately, an answer from the ledger
    (marked too).
    """
    takes = keyword_names(inspect.signature(method))
    name = method.__name__

    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        for dropped in check_keywords(name, takes, args[0] if args else None, kwargs):
            del kwargs[dropped]
        fresh = kwargs.get("fresh", False)
        if _INSIDE.get():  # a method called by another: the outermost one tells
            with fresh_release(fresh):  # type: ignore[arg-type]
                return method(*args, **kwargs)
        token = _INSIDE.set(True)
        try:
            with fresh_release(fresh), answers_collected() as answers:  # type: ignore[arg-type]
                result = method(*args, **kwargs)
        finally:
            _INSIDE.reset(token)
        return told(result, answers)

    return run
