"""The unkeyed per-column digests of ledgers up to schema 5 (read only, to find them again).

Up to schema 5 the ledger recorded, for each column of a loaded frame, BLAKE2b
over the column's kind, its row count n and two sums (mod 2**64) of its
values' 64-bit hashes; values normalized first (numbers and booleans as
float64, dates as nanoseconds, everything else, categoricals included, as
text).  Nothing in it is secret, so whoever holds the ledger file can try
every (n, count of yes) of a yes/no column until the digest matches
(``tests/test_ledger_privacy.py``).  Schema 6 records keyed digests and
sketches in a separate file instead (:mod:`dpframe.backends.data_sketch`);
these functions remain so that an older ledger's digests can be recognized
when the same data is loaded again (the guard rails then warn, and the
ledger's unkeyed entries for that data are rekeyed and deleted: see
:mod:`dpframe.accounting.ledger_legacy`).

Computed block by block (no whole column is normalized at once), and a
categorical column is normalized and hashed once per category, then gathered
by its codes: the digests are the same as before, bit for bit.

Example::

    column_digests(df)   # {"wage": "3f1c...", "education": "a90b...", ...}
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["column_digest", "column_digests"]

#: pandas' hash key (16 characters) of the digests.
_KEY = "dpframe-digest-1"
_MULTIPLIER = np.uint64(0xBF58476D1CE4E5B9)
_MOD = 1 << 64

#: Rows hashed at a time (bounds the memory of the normalized values and hashes).
_CHUNK = 1 << 16


def _kind(values: pd.Series) -> str:
    """``number``, ``date`` or ``text``, from the dtype (a categorical is text)."""
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(values):
        return "date"
    return "text"


def _normalized(values: pd.Series, kind: str) -> pd.Series:
    """The values as ``kind`` stores them (numbers as float64, dates as ns, else text)."""
    if kind == "number":
        numbers = pd.to_numeric(values, errors="coerce").astype("float64")
        return numbers + 0.0  # -0.0 becomes 0.0
    if kind == "date":
        stamps = values.dt.tz_convert(None) if getattr(values.dt, "tz", None) else values
        return stamps.astype("datetime64[ns]").astype("int64")
    return values.astype("string")


def _hashes(normal: pd.Series) -> npt.NDArray[np.uint64]:
    return np.asarray(pd.util.hash_pandas_object(normal, index=False, hash_key=_KEY).to_numpy())


def column_digest(values: pd.Series) -> str:
    """The unkeyed digest of one column's values, whatever their order (32 hex digits).

    Raises:
        TypeError: the column holds values that cannot be hashed (lists, dicts).
    """
    kind = _kind(values)
    table = None
    if isinstance(values.dtype, pd.CategoricalDtype):  # hashed once per category
        categories = pd.Series(values.cat.categories.array)
        table = _hashes(_normalized(categories.reindex(range(len(categories) + 1)), kind))
    plain, mixed = 0, 0
    for start in range(0, len(values), _CHUNK):
        chunk = values.iloc[start : start + _CHUNK]
        if table is not None:  # code -1 (missing) picks the last entry
            hashes = table[chunk.cat.codes.to_numpy()]
        else:
            hashes = _hashes(_normalized(chunk, kind))
        mix = (hashes ^ (hashes >> np.uint64(31))) * _MULTIPLIER  # uint64 arrays wrap
        plain = (plain + int(hashes.sum(dtype=np.uint64))) % _MOD
        mixed = (mixed + int(mix.sum(dtype=np.uint64))) % _MOD
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{kind}\x00{len(values)}\x00".encode())
    digest.update(plain.to_bytes(8, "little") + mixed.to_bytes(8, "little"))
    return digest.hexdigest()


def column_digests(frame: pd.DataFrame) -> dict[str, str]:
    """The unkeyed digest of each column of ``frame`` that can be hashed, by column name."""
    out: dict[str, str] = {}
    for name, values in frame.items():
        try:
            out[str(name)] = column_digest(values)
        except TypeError:
            continue
    return out
