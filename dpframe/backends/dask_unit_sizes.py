"""Whether any unit of a Dask frame has more rows than a bound, counted on the workers.

Bounding contributions on Dask shuffles every row by its unit (a unit's rows
must meet in one partition to choose a subset of them).  When no unit is
over the bound there is nothing to choose: every row is kept, and the
shuffle of the whole table can be skipped.  Counting rows per unit needs
only the unit column: each partition counts its units (a ``bincount`` when
the IDs are integers in a range not much wider than the partition, else
``value_counts``) and the counts are added up in a tree on the workers; only
one boolean reaches the client.  Exact and non-private (the bound is then
applied, or found to keep everything, as the pandas backend does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["UnitCounts", "combine_counts", "partition_counts"]

# A partition's integer IDs are counted in an array when they span at most this many
# slots per row (plus a constant): 8 bytes per slot.
SLOTS_PER_ROW = 4
SLOT_SLACK = 1024


@dataclass(frozen=True, eq=False)
class UnitCounts:
    """Rows per unit of some partitions: an array from ``low``, or a Series by unit.

    ``over`` is set once some unit is known to have more than ``limit`` rows
    (the counts are then dropped: the answer cannot change).
    """

    limit: int
    low: int = 0
    dense: npt.NDArray[Any] | None = None  # capped at limit + 1 (:func:`_capped`)
    sparse: pd.Series | None = None
    over: bool = False

    def as_series(self) -> pd.Series:
        """The counts as a Series indexed by unit."""
        if self.dense is not None:
            present = np.flatnonzero(self.dense)
            counts: pd.Series = pd.Series(
                self.dense[present].astype(np.int64), index=present + self.low
            )
            return counts
        if self.sparse is not None:
            return self.sparse
        empty: pd.Series = pd.Series(dtype=np.int64)
        return empty

    def checked(self) -> UnitCounts:
        """These counts, or just ``over`` when a unit exceeds the limit."""
        counts = self.dense if self.dense is not None else self.sparse
        if counts is not None and len(counts) and int(counts.max()) > self.limit:
            return UnitCounts(self.limit, over=True)
        return self


def partition_counts(part: pd.DataFrame, unit: str, limit: int) -> UnitCounts:
    """One partition's rows per unit (rows with a missing unit are units of one row)."""
    ids = part[unit]
    if isinstance(ids.dtype, np.dtype) and ids.dtype.kind in "iu" and len(ids):
        values = ids.to_numpy()
        low, high = int(values.min()), int(values.max())
        if high - low <= SLOTS_PER_ROW * len(values) + SLOT_SLACK:
            wide = values.astype(np.int64, copy=False)
            counts = np.bincount(wide if low == 0 else wide - np.int64(low))
            return UnitCounts(limit, low=low, dense=_capped(counts, limit)).checked()
    sizes = ids.value_counts(sort=False, dropna=True).astype(np.int64)
    return UnitCounts(limit, sparse=sizes).checked()


def _capped(counts: npt.NDArray[Any], limit: int) -> npt.NDArray[Any]:
    """Counts above ``limit + 1`` as ``limit + 1``, in the smallest unsigned dtype that holds it.

    Only whether a unit is over the limit matters, so a capped count says
    as much; a partition's array of 10^6 IDs then travels to the reduction
    as 1 MB (uint8, limits below 255) instead of 8.  ``counts`` (int64, the
    caller's own) is capped in place.
    """
    cap = limit + 1
    dtype = np.uint8 if cap <= 0xFF else np.uint16 if cap <= 0xFFFF else np.int64
    # In place (the callers' counts are their own): no second array of 8 bytes per unit.
    np.minimum(counts, cap, out=counts)
    capped: npt.NDArray[Any] = counts.astype(dtype, copy=False)
    return capped


def _dense_sum(parts: list[UnitCounts]) -> UnitCounts:
    low = min(p.low for p in parts)
    span = max(p.low + len(p.dense) for p in parts if p.dense is not None) - low
    total = np.zeros(span, dtype=np.int64)
    for p in parts:
        assert p.dense is not None
        total[p.low - low : p.low - low + len(p.dense)] += p.dense
    limit = parts[0].limit
    return UnitCounts(limit, low=low, dense=_capped(total, limit))


def combine_counts(*parts: UnitCounts) -> UnitCounts:
    """The rows per unit of all of ``parts`` (``over`` as soon as one unit exceeds the limit)."""
    limit = parts[0].limit
    if any(p.over for p in parts):
        return UnitCounts(limit, over=True)
    dense = [p for p in parts if p.dense is not None]
    if len(dense) == len(parts):
        low = min(p.low for p in dense)
        high = max(p.low + len(p.dense) for p in dense if p.dense is not None)
        slots = sum(len(p.dense) for p in dense if p.dense is not None)
        if high - low <= SLOTS_PER_ROW * slots + SLOT_SLACK:
            return _dense_sum(dense).checked()
    series = [p.as_series() for p in parts]
    added: Any = pd.concat(series).groupby(level=0).sum()
    return UnitCounts(limit, sparse=added.astype(np.int64)).checked()
