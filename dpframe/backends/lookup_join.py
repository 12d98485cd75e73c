"""A many-to-one join on a dense integer key by direct lookup, as ``pandas.merge`` gives it.

A people table joined to its visits on ``person_id``: the right side's IDs
are unique integers in a range not much larger than its rows.  Then each
left row's match is one array lookup (``position[id - smallest]``) instead
of pandas' hash factorization of both key columns, and a left row's
columns are not copied when every left row matches.  The result is the
frame ``left.merge(right, how=how, on=key, sort=False)`` returns, row for
row and dtype for dtype (pinned against pandas in
``tests/test_lookup_join.py``); any other join returns None and is left to
pandas.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["lookup_merge"]

# The lookup table may be this many times the right side's rows (plus a constant):
# a table of 8 bytes per slot, so at most 32 bytes per right row.
SPAN_PER_ROW = 4
SPAN_SLACK = 1024


def _integer_key(frame: pd.DataFrame, key: str) -> npt.NDArray[Any] | None:
    dtype = frame[key].dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "iu":
        return None
    return frame[key].to_numpy()


def _offsets(keys: npt.NDArray[Any], low: int) -> npt.NDArray[np.intp]:
    """``keys − low`` as positions (keys known to lie in the table's range)."""
    wide = keys.astype(np.int64, copy=False)  # narrow ints: no wrap-around when shifted
    if low == 0:
        return wide.astype(np.intp, copy=False)
    shifted: npt.NDArray[np.intp] = (wide - np.int64(low)).astype(np.intp, copy=False)
    return shifted


def _positions(right_keys: npt.NDArray[Any]) -> tuple[int, npt.NDArray[np.intp]] | None:
    """(smallest key, position of each key value in the right side), or None.

    None when the keys span too wide a range or a key value repeats.
    """
    low, high = int(right_keys.min()), int(right_keys.max())
    span = high - low + 1
    if high >= 2**63 or span > SPAN_PER_ROW * len(right_keys) + SPAN_SLACK:
        return None
    where = np.full(span, -1, dtype=np.intp)
    where[_offsets(right_keys, low)] = np.arange(len(right_keys), dtype=np.intp)
    if int(np.count_nonzero(where >= 0)) != len(right_keys):
        return None  # a key value repeats: pandas' many-to-many order applies
    return low, where


def _matches(
    left_keys: npt.NDArray[Any], low: int, where: npt.NDArray[np.intp]
) -> npt.NDArray[np.intp]:
    """Each left row's right position (−1: no match)."""
    high = low + len(where) - 1
    if len(left_keys) == 0:
        return np.zeros(0, dtype=np.intp)
    if int(left_keys.min()) >= low and int(left_keys.max()) <= high:
        return where[_offsets(left_keys, low)]  # int64 IDs from 0: no shifted copy
    found = np.full(len(left_keys), -1, dtype=np.intp)
    inside = np.flatnonzero((left_keys >= low) & (left_keys <= high))
    found[inside] = where[_offsets(left_keys[inside], low)]
    return found


def _taken(column: pd.Series, positions: npt.NDArray[np.intp], fill: bool) -> Any:
    values = column.array if isinstance(column.dtype, pd.api.extensions.ExtensionDtype) else None
    if values is not None:
        return values.take(positions, allow_fill=fill)
    return pd.api.extensions.take(column.to_numpy(), positions, allow_fill=fill)


def lookup_merge(
    left: pd.DataFrame, right: pd.DataFrame, key: str, how: str
) -> pd.DataFrame | None:
    """``left.merge(right, how=how, on=key, sort=False)`` by lookup, or None when it does not apply.

    Applies to an inner or left join on one column of the same numpy integer
    dtype on both sides, whose right values are unique and span at most
    ``SPAN_PER_ROW`` times the right rows (plus ``SPAN_SLACK``).  The two
    frames' other column names must differ (the caller has applied suffixes).

    Args:
        left: the left rows (any number of rows per key).
        right: the right rows (one per key, or None is returned).
        key: the join column, in both frames.
        how: ``"inner"`` or ``"left"`` (anything else: None).
    """
    if how not in ("inner", "left") or len(right) == 0:
        return None
    right_keys = _integer_key(right, key)
    left_keys = _integer_key(left, key)
    if right_keys is None or left_keys is None or right_keys.dtype != left_keys.dtype:
        return None
    if set(left.columns) & set(right.columns) != {key}:
        return None
    table = _positions(right_keys)
    if table is None:
        return None
    found = _matches(left_keys, *table)
    matched = found >= 0
    every = bool(matched.all())
    data: dict[str, Any] = {}
    if every or how == "left":
        data.update({name: left[name] for name in left.columns})
        picks, fill = found, not every
    else:
        rows = np.flatnonzero(matched)
        data.update({name: _taken(left[name], rows, False) for name in left.columns})
        picks, fill = found[rows], False
    for name in right.columns:
        if name != key:
            data[name] = _taken(right[name], picks, fill)
    n = len(picks)
    columns = {
        name: (value.reset_index(drop=True) if isinstance(value, pd.Series) else value)
        for name, value in data.items()
    }
    out: pd.DataFrame = pd.DataFrame(columns, index=pd.RangeIndex(n), copy=False)
    return out
