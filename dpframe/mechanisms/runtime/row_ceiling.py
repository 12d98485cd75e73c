"""A public ceiling on the rows a release may draw: a curator's declared row count.

A synthetic copy whose length is a noisy row count (``rows=None``) draws as
many rows as that count says, capped at
:data:`~dpframe.plan.releases.MAX_SYNTH_ROWS`.  At a small ε the count is
often millions above the data's true length; a curator knows a public
ceiling on that length (the dataset's declared ``max_rows``, or a join's),
prices the drawing with it, and runs each release inside
:func:`row_ceiling` so that the copy never draws more.  Capping a noisy
count at a public number is post-processing: no privacy cost.

Outside a curator there is no ceiling (:func:`public_row_ceiling` is None).

Example::

    with row_ceiling(100_000):
        session.run(node)   # a noisy-length copy has at most 100,000 rows
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from dpframe.errors import InvalidArgumentError

__all__ = ["public_row_ceiling", "row_ceiling"]

_CEILING: ContextVar[int | None] = ContextVar("dpframe_row_ceiling", default=None)


@contextmanager
def row_ceiling(rows: int | None) -> Iterator[None]:
    """Releases run in this block draw at most ``rows`` rows (None: no ceiling)."""
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise InvalidArgumentError(f"A row ceiling is a count of rows (>= 0); got {rows!r}.")
    token = _CEILING.set(rows)
    try:
        yield
    finally:
        _CEILING.reset(token)


def public_row_ceiling() -> int | None:
    """The public ceiling on the rows a release may draw here, if any (a curator's)."""
    return _CEILING.get()
