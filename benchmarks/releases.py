"""Benchmarks time and sample *new* releases, never re-runs answered from the ledger.

Since issue 31 a request equal to one already recorded is answered from the
ledger, free and in about a millisecond.  A benchmark that repeats a query to
time it, or to sample its noise, would then measure that lookup (or sample one
answer many times).  Every benchmark's command line runs inside
:func:`new_releases`, as ``fresh=True`` would on each call: each call is a new,
charged release, with its answer kept as a user's would be.

The ledger lookup itself is measured where it is the point (the re-run
tests and ``docs/rerun-cache.md``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

__all__ = ["new_releases"]


def new_releases() -> AbstractContextManager[None]:
    """Inside the block every release is new and charged (``fresh=True``)."""
    from dpframe.engine.reruns import fresh_release

    return fresh_release(True)
