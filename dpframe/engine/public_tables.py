"""A public table whose key repeats, held by a session as one side of a join.

``pf.merge(table, on="region")`` with a public pandas table in which a key
occurs several times cannot be a recoding of the key (each private row would
become several rows): the table becomes the public side of a
:class:`~dpframe.plan.nodes.Join` (:func:`dpframe.plan.joins.public_join`).
:func:`public_table` checks it and derives its public facts, all from the
public table itself: its digest, the most rows one key has (``d``, the
factor by which the join multiplies each unit's rows) and its schema (bounds
and keys from its own values: the table is public).

Privacy:
    Nothing here reads private data.  The dataset name carries the digest and
    ``d`` (:func:`~dpframe.plan.joins.public_name`), and the session registers
    the table only under that name, so a source claiming a smaller ``d``
    names no table and is refused.

Accuracy:
    Not a release.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.joins import public_name
from dpframe.plan.schema import Schema, schema_from_frame

__all__ = ["public_table"]


def public_table(
    table: pd.DataFrame, key: str, max_rows: int
) -> tuple[str, pd.DataFrame, Schema, int]:
    """The dataset name, rows, public schema and most rows per key of a public table.

    Args:
        table: the public table (pandas).
        key: its key column.
        max_rows: the most rows it may have.

    Raises:
        SchemaError: more than ``max_rows`` rows, no key column, or a missing
            key (in a table whose keys repeat a missing key never matches:
            drop those rows).
    """
    if len(table) > max_rows:
        raise SchemaError(f"A public lookup table has at most {max_rows:,} rows.")
    if key not in table.columns:
        raise SchemaError(f"The public table has no column {key!r} to match on.")
    rows = table.reset_index(drop=True)
    if bool(rows[key].isna().any()):
        raise SchemaError(
            f"The public table's key {key!r} repeats and has missing values: a missing key "
            "never matches in such a merge. Drop those rows from the table first."
        )
    most = int(rows[key].value_counts().max()) if len(rows) else 1
    digest = hashlib.sha256()
    digest.update(repr(list(map(str, rows.columns))).encode())
    digest.update(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes())
    bounds: dict[str, tuple[float, float]] = {}
    categories: dict[str, list[object]] = {}
    for name in rows.columns:
        column = rows[name]
        if pd.api.types.is_bool_dtype(column.dtype):
            continue
        if pd.api.types.is_numeric_dtype(column.dtype):
            values = column.to_numpy(dtype=float, na_value=np.nan)
            finite = values[np.isfinite(values)]
            if len(finite) and name != key:
                bounds[str(name)] = (float(finite.min()), float(finite.max()))
        elif name != key:
            present = [v for v in column.tolist() if not _missing(v)]
            if present:
                categories[str(name)] = sorted(set(present), key=str)
    schema = schema_from_frame(rows, bounds, categories)
    return public_name(digest.hexdigest()[:32], most), rows, schema, most


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
