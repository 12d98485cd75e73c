"""Per-column digests of private data that ignore row order, dtype and column name.

A session's budget is keyed by its name, so loading the same people under a
new session name starts a fresh budget: the one way a budget gets reset by
accident.  To warn about it, each column of a loaded frame gets a digest of
the *multiset* of its values, and the ledger remembers them
(:mod:`dpframe.engine.guard_rails`).  The same column then matches when the
data comes back shuffled, as a column subset, under another column name, or
with another dtype (one missing value turns ``int64`` into ``float64``).

The digest of a column of n values is BLAKE2b over its kind, n, and two sums
(mod 2**64): of the values' 64-bit hashes, and of a mix of each hash (a
multiply-xorshift step).  A sum does not depend on the order of its terms,
and the second sum makes an accidental match of different columns far less
likely than one 64-bit sum would.  Values
are normalized first: numbers and booleans as float64 (so ``3`` and ``3.0``
agree, and every missing value is NaN), dates as nanoseconds, everything else
as text.

The digests stay on this machine, in the ledger file (mode 0600), next to the
releases of the same data; they are never shown in a release.  A curator
names its data by catalog name and version and computes none.

Example::

    column_digests(df)   # {"wage": "3f1c...", "education": "a90b...", ...}
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

__all__ = ["column_digest", "column_digests"]

#: pandas' hash key (16 characters) for the digests.
_KEY = "dpframe-digest-1"
_MULTIPLIER = np.uint64(0xBF58476D1CE4E5B9)
_MOD = 1 << 64

#: Rows hashed at a time (bounds the memory of the hash arrays).
_CHUNK = 1 << 20


def _normalized(values: pd.Series) -> tuple[str, pd.Series]:
    """The values as one of three kinds: ``number``, ``date`` or ``text``."""
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values):
        numbers = pd.to_numeric(values, errors="coerce").astype("float64")
        return "number", numbers + 0.0  # -0.0 becomes 0.0
    if pd.api.types.is_datetime64_any_dtype(values):
        stamps = values.dt.tz_convert(None) if getattr(values.dt, "tz", None) else values
        return "date", stamps.astype("datetime64[ns]").astype("int64")
    return "text", values.astype("string")


def column_digest(values: pd.Series) -> str:
    """The digest of one column's values, whatever their order (32 hex digits).

    Raises:
        TypeError: the column holds values that cannot be hashed (lists, dicts).
    """
    kind, normal = _normalized(values)
    plain, mixed = 0, 0
    for start in range(0, len(normal), _CHUNK):
        chunk = normal.iloc[start : start + _CHUNK]
        hashes = pd.util.hash_pandas_object(chunk, index=False, hash_key=_KEY).to_numpy()
        with np.errstate(over="ignore"):  # uint64 arithmetic wraps mod 2**64 on purpose
            mix = (hashes ^ (hashes >> np.uint64(31))) * _MULTIPLIER
            plain = (plain + int(hashes.sum(dtype=np.uint64))) % _MOD
            mixed = (mixed + int(mix.sum(dtype=np.uint64))) % _MOD
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{kind}\x00{len(normal)}\x00".encode())
    digest.update(plain.to_bytes(8, "little") + mixed.to_bytes(8, "little"))
    return digest.hexdigest()


def column_digests(frame: pd.DataFrame) -> dict[str, str]:
    """The digest of each column of ``frame`` that can be hashed, by column name.

    A column of unhashable values (lists, dicts) has no digest; loading such
    a column is refused elsewhere, with the column's name.
    """
    out: dict[str, str] = {}
    for name, values in frame.items():
        try:
            out[str(name)] = column_digest(values)
        except TypeError:
            continue
    return out
