"""Hashes of a column's cells, block by block: pandas' (for the fingerprint) and normalized ones.

:mod:`dpframe.backends.data_sketch` hashes every cell of a frame once per
block of rows and uses the hashes twice:

* pandas' hash of each value (``pd.util.hash_pandas_object`` of the column),
  which the pandas backend's fingerprint combines into row hashes;
* the *cell hash*, the same value normalized so that the storage of a value
  does not change it (see :data:`KINDS`):

  - ``number`` (booleans, integers, floats, nullable and categorical ones): an
    integral value below 2**63 in magnitude is hashed as that integer (so
    ``3``, ``3.0``, ``True`` = 1 and ``np.int8(3)`` agree); any other value,
    as a float64 (``-0.0`` is ``0.0``, every NaN one value), kept apart from
    the integers' hashes;
  - ``date``: UTC nanoseconds (time zone and unit dropped); ``duration``:
    nanoseconds;
  - ``text``: everything else, as pandas hashes it (``object``, ``str``,
    ``string`` and categorical storage agree; every missing text is one
    value).

Where the cell hash is pandas' hash (text, int64, bool, nanosecond dates) the
column is hashed once.  A categorical column is hashed once per category and
gathered by its codes (a missing value's code, -1, picks the last entry of
the gathered table).  No whole column is ever converted at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import SchemaError

__all__ = ["KINDS", "KIND_OFFSETS", "ColumnHasher", "number_hashes", "value_kind"]

U64 = npt.NDArray[np.uint64]

#: The kinds of values a cell hash tells apart.
KINDS = ("number", "date", "duration", "text")

#: Added to every cell hash of each kind (never 0: pandas hashes 0, 0.0 and False to 0,
#: which would add nothing; and dates and durations are hashed like their integers).
#: They are added where it costs nothing: ``n`` times to a column's sum, and once per
#: column to the salt of a row's hash (see :mod:`dpframe.backends.data_sketch`).
KIND_OFFSETS = {
    "number": 0x9E3779B97F4A7C15,
    "date": 0xBB67AE8584CAA73B,
    "duration": 0x3C6EF372FE94F82B,
    "text": 0xA54FF53A5F1D36F1,
}

#: Xored into the hash of a number that is not an integer (kept apart from the integers').
_FLOAT_SALT = np.uint64(0x6A09E667F3BCC909)
_U8MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
#: Integer dtypes whose pandas hash is already their value's (as int64).
_SHARED_INTEGERS = frozenset("?BHILQlq")  # bool, unsigned ints, int64 (numpy type chars)


def value_kind(dtype: Any) -> str:
    """The kind (:data:`KINDS`) of a column's values, from its dtype only."""
    if isinstance(dtype, pd.CategoricalDtype):
        return value_kind(dtype.categories.dtype)
    if pd.api.types.is_bool_dtype(dtype) or (
        pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
    ):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "date"
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "duration"
    return "text"


def _hash(values: Any) -> U64:
    """Pandas' hash of each value (default key), as in its row hash of a frame.

    ``values`` is an ndarray or an extension array (what a column holds).
    """
    return np.asarray(pd.util.hash_array(values), dtype=np.uint64)


def number_hashes(floats: npt.NDArray[np.float64], hashed: U64 | None = None) -> U64:
    """Cell hashes of numbers given as float64 (NaN for missing); see the module.

    Args:
        floats: the values.
        hashed: pandas' hash of ``floats``, if already computed (changed in place
            into the result).
    """
    out = _hash(floats) if hashed is None else hashed
    np.bitwise_xor(out, _FLOAT_SALT, out=out)
    integral = np.trunc(floats) == floats  # NaN and ±inf are not
    if integral.any():
        integral &= np.abs(floats) < 2.0**63
        out[integral] = _hash(floats[integral].astype(np.int64))
    return out


def _normal(values: pd.Series, kind: str) -> Any:
    """The values as the cell hash reads them (numbers as float64, dates as ns)."""
    if kind == "number":
        return values.to_numpy(dtype="float64", na_value=np.nan)
    if kind == "date":
        if getattr(values.dtype, "tz", None) is not None:
            values = values.dt.tz_convert(None)
        return values.to_numpy().astype("datetime64[ns]")
    if kind == "duration":
        return values.to_numpy().astype("timedelta64[ns]")
    return values.array  # pragma: no cover - text is hashed by pandas directly


def _unit(dtype: Any) -> str:
    """The time unit of a date or duration dtype ("" if none)."""
    if isinstance(dtype, np.dtype):
        return str(np.datetime_data(dtype)[0])
    return str(getattr(dtype, "unit", ""))


def _cells(normal: Any, kind: str) -> U64:
    return number_hashes(normal) if kind == "number" else _hash(normal)


class ColumnHasher:
    """The hashes of one column, a block of rows at a time.

    Args:
        name: the column's name (public; for the error message).
        values: the column.
    """

    def __init__(self, name: str, values: pd.Series) -> None:
        self.name = name
        self.values = values
        self.kind = value_kind(values.dtype)
        dtype = values.dtype
        self._tables: tuple[U64, U64] | None = None
        # What is sliced per block: the codes, the numpy array, or the extension array.
        self._raw: Any = values.to_numpy() if isinstance(dtype, np.dtype) else values.array
        if isinstance(dtype, pd.CategoricalDtype):
            categorical: pd.Categorical = values.array
            self._raw = categorical.codes  # a view of the codes, not a copy
            categories = values.cat.categories
            exact = np.append(_hash(np.asarray(categories.array)), _U8MAX)
            cells = exact
            if self.kind != "text":  # the last entry: a missing value (code -1)
                extended = pd.Series(categories.array).reindex(range(len(categories) + 1))
                cells = _cells(_normal(extended, self.kind), self.kind)
            self._tables = (exact, cells)
        numpy_dtype = dtype if isinstance(dtype, np.dtype) else None
        self._mode = "normal"
        if self.kind == "text" or (
            numpy_dtype is not None and numpy_dtype.char in _SHARED_INTEGERS
        ):
            self._mode = "shared"  # pandas' hash is the cell hash
        elif numpy_dtype is not None and numpy_dtype == np.dtype("float64"):
            self._mode = "float"
        elif self.kind in ("date", "duration") and _unit(dtype) == "ns":
            self._mode = "shared"  # pandas hashes the UTC nanoseconds

    def block(self, start: int, stop: int, fold: Callable[[U64], None] | None = None) -> U64:
        """The cell hashes of rows ``start:stop`` (before :data:`KIND_OFFSETS`).

        Args:
            start: the first row.
            stop: the row after the last.
            fold: called first with pandas' hashes of the rows (the
                fingerprint's), before the cell hashes are made from them in place.

        Raises:
            SchemaError: the column holds values that cannot be hashed (lists, dicts).
        """
        raw = self._raw[start:stop]
        if self._tables is not None:
            codes = raw
            exact_table, cell_table = self._tables
            cells: U64 = cell_table[codes]
            if fold is not None:
                fold(cells if exact_table is cell_table else exact_table[codes])
            return cells
        try:
            if self._mode == "normal":
                if fold is not None:
                    fold(_hash(raw))
                part = self.values.iloc[start:stop]
                return _cells(_normal(part, self.kind), self.kind)
            hashed = _hash(raw)
        except TypeError:
            raise SchemaError(
                f"Column {self.name!r} holds values that cannot be hashed (lists, dicts, "
                "sets, ...); convert them to strings or numbers, or drop the column, "
                "before loading."
            ) from None
        if fold is not None:
            fold(hashed)
        if self._mode == "float":
            return number_hashes(raw, hashed)
        return hashed
