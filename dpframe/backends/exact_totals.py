"""Exact totals over many partitions: integer partials added without rounding, no row ceiling.

The pandas backend's totals are integer-valued float64 arrays (counts, and
sums of terms of magnitude at most 2**22 quanta: see
:class:`~dpframe.plan.measures.Measure`).  A frame of at most
:data:`~dpframe.backends.base.MAX_ROWS` = 2**31 rows gives totals of
magnitude at most 2**53, every one an exact float64.  A distributed engine
adds many such frames (partitions), and the grand total of more than 2**31
rows can pass 2**53, where float64 would round.  So partitions are combined
as integers here:

1. :func:`exact_partial` turns one partition's totals into int64 arrays
   (exact: each is an integer of magnitude at most 2**53).
2. :func:`add_exact` adds partials cell by cell: in int64 while no
   overflow is possible (every addend below 2**59 in magnitude and at most
   16 of them), else in Python integers (a numpy ``object`` array, only for
   that combine step).  No partial is ever rounded or saturated.
3. :func:`final_totals` hands the grand totals to the session on the grid
   they were computed on (quanta): a float64 array when every cell is at
   most 2**53 in magnitude (then the values are exactly the float64 the
   pandas backend computes on the same rows, whatever the partitioning, so
   the results are bit-identical), else an int64 array (exact, which
   :func:`~dpframe.mechanisms.calibration.additive.release_integer_sums` accepts).
   Beyond ±2**62 quanta (more than 2**40 rows at the widest term, or
   4.6·10^18 rows for a count) a cell saturates at ±2**62: clamping a total
   changes it by no more than the data did (it is 1-Lipschitz), so the
   sensitivity, hence the privacy guarantee, is unchanged, and the release
   never fails on a size it learns only after the charge.

No count of the rows is checked after the scan: the size of the data is
never a reason for a release to fail.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["EXACT_FLOAT", "SATURATE", "add_exact", "exact_partial", "final_totals"]

#: Every integer of magnitude at most this is a float64.
EXACT_FLOAT = 2**53
#: Totals saturate here (so a release's integer arithmetic on them never wraps in int64).
SATURATE = 2**62
#: Addends below this add in int64 without overflow, 16 at a time (16 · 2**59 = 2**63).
_SAFE_ADDEND = 2**59
_SAFE_COUNT = 16

#: A partition's (or a subtree's) totals: one int64 array per measure, or object (Python int).
Exact = list[npt.NDArray[Any]]


def exact_partial(values: list[npt.NDArray[np.float64]]) -> Exact:
    """One partition's integer-valued float64 totals as int64 arrays (exactly)."""
    return [np.asarray(v, dtype=np.float64).astype(np.int64) for v in values]


def _fits(array: npt.NDArray[Any]) -> bool:
    if array.size == 0:
        return True
    if array.dtype == object:
        return False
    return bool(np.max(np.abs(array)) < _SAFE_ADDEND)


def add_exact(*partials: Exact) -> Exact:
    """The cell-by-cell sum of ``partials`` (each a list of one array per measure), exactly.

    Raises:
        ValueError: no partials, or partials of different shapes (a bug).
    """
    if not partials:
        raise ValueError("Nothing to add.")
    width = len(partials[0])
    if any(len(p) != width for p in partials):
        raise ValueError("Partials of different numbers of measures.")
    out: Exact = []
    for i in range(width):
        arrays = [p[i] for p in partials]
        if len(arrays) <= _SAFE_COUNT and all(_fits(a) for a in arrays):
            total = np.zeros_like(arrays[0], dtype=np.int64)
            for array in arrays:
                total += array
            out.append(total)
            continue
        wide = np.zeros(arrays[0].shape, dtype=object)
        for array in arrays:
            wide = wide + array.astype(object)  # Python ints: no overflow, no rounding
        out.append(_narrow(wide))
    return out


def _narrow(wide: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """int64 when every cell fits int64 with room to add (else Python ints, kept)."""
    if all(-_SAFE_ADDEND < int(x) < _SAFE_ADDEND for x in wide.flat):
        return wide.astype(np.int64)
    return wide


def final_totals(totals: Exact) -> list[npt.NDArray[Any]]:
    """The grand totals for the session: float64 when exact as float64, else int64 (saturated).

    Each measure's array is float64 when every cell's magnitude is at most
    2**53 (the values the pandas backend computes, bit for bit), else int64
    with every cell clamped to ±2**62 (see the module docstring).
    """
    out: list[npt.NDArray[Any]] = []
    for total in totals:
        if total.dtype == object:
            clamped = [max(-SATURATE, min(SATURATE, int(x))) for x in total.flat]
            total = np.array(clamped, dtype=np.int64).reshape(total.shape)
        if total.size == 0 or int(np.max(np.abs(total))) <= EXACT_FLOAT:
            out.append(total.astype(np.float64) + 0.0)  # + 0.0: never -0.0
        else:
            out.append(np.clip(total, -SATURATE, SATURATE).astype(np.int64))
    return out
