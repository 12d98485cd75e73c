"""Declared column kinds: the data is read as the analyst (or data owner) declared it.

A column's kind must not be inferred from the private values: one missing age
would otherwise turn ``int64`` into ``float64``, one stray ``"unknown"`` would
turn a numeric column into text, and the public schema would reveal it.  With
``private_frame(df, dtypes={...})`` (and for every column with declared
``bounds=``, which is numeric by declaration) the values are converted to
the declared kind instead: a value that does not convert becomes missing
(handled like NaN: it adds nothing and is not counted), exactly as if the
data had been clean.  Conversion is row by row, so it depends on no other row.

Kinds: ``"numeric"`` (float64), ``"integer"`` (read as ``"numeric"``; the
schema shows ``Int64`` and quantiles answer with whole numbers: their public
candidates are integers), ``"boolean"`` (True/False/1/0, else missing;
pandas' nullable ``boolean``), ``"text"`` (pandas' ``string``; numbers become
their text, whole floats without ``.0``: a numeric column with a missing value
is float, and its 1000 must still read "1000").  Columns neither declared nor
bounded keep their dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.schema import Schema

__all__ = [
    "INTEGER_DTYPE",
    "DeclaredKind",
    "apply_declared_kinds",
    "declared_kinds",
    "declared_schema",
]

DeclaredKind = Literal["numeric", "integer", "boolean", "text"]

_ALIASES: Mapping[str, DeclaredKind] = {
    "numeric": "numeric",
    "number": "numeric",
    "float": "numeric",
    "float64": "numeric",
    "int": "integer",
    "int64": "integer",
    "Int64": "integer",
    "integer": "integer",
    "boolean": "boolean",
    "bool": "boolean",
    "text": "text",
    "string": "text",
    "str": "text",
    "category": "text",
    "categorical": "text",
    "object": "text",
}


def declared_kinds(
    columns: Mapping[str, Any],
    dtypes: Mapping[str, object] | None,
    bounds: Mapping[str, object] | None,
) -> dict[str, DeclaredKind]:
    """The declared kind of each column: from ``dtypes``, or numeric for bounded columns.

    ``columns`` maps each column to its pandas dtype.  A bounded column of
    text (object or string dtype: how a reader stores a numeric column with a
    stray word) is read as numbers; bounds on dates, durations, complex
    numbers or pandas categoricals stay an error (their dtype was declared by
    whoever built the frame, not inferred from a stray value).

    Raises:
        SchemaError: for an unknown column or kind, or bounds on a column
            declared as text.
    """
    if dtypes is not None and not isinstance(dtypes, Mapping):
        raise SchemaError(f"dtypes= takes a dict {{column: kind}}, not a {type(dtypes).__name__}.")
    kinds: dict[str, DeclaredKind] = {}
    for name, kind in (dtypes or {}).items():
        if name not in columns:
            raise SchemaError(f"Unknown column {name!r} in dtypes=.")
        declared = _ALIASES.get(kind) if isinstance(kind, str) else None
        if declared is None:
            raise SchemaError(
                f"dtypes[{name!r}] must be 'numeric', 'boolean' or 'text' (or 'integer', or "
                "a pandas name of one of them, e.g. 'float64', 'int64', 'bool', 'string')."
            )
        kinds[name] = declared
    for name in bounds or {}:
        if name not in columns:
            continue  # the schema check names it
        if name in kinds and kinds[name] == "text":
            raise SchemaError(f"bounds given for {name!r}, declared as text in dtypes=.")
        dtype = columns[name]
        textual = pd.api.types.is_object_dtype(dtype) or (
            pd.api.types.is_string_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
        )
        numeric = pd.api.types.is_bool_dtype(dtype) or (
            pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
        )
        if textual or numeric:  # numeric ones keep their data; their shown dtype is float64
            kinds.setdefault(name, "numeric")
    return kinds


def _convert(series: pd.Series, kind: DeclaredKind) -> pd.Series:
    dtype = series.dtype
    if kind in ("numeric", "integer"):
        if pd.api.types.is_bool_dtype(dtype):
            return series.astype("float64")
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
            return series
        numbers = pd.to_numeric(series.astype("object"), errors="coerce")
        converted: pd.Series = pd.Series(
            numbers, index=series.index, name=series.name, dtype="float64"
        )
        return converted
    if kind == "boolean":
        if pd.api.types.is_bool_dtype(dtype):
            return series
        values = series.astype("object")
        truth = values.map(lambda v: True if _is(v, 1) else (False if _is(v, 0) else None))
        flags: pd.Series = pd.Series(truth, index=series.index, name=series.name, dtype="boolean")
        return flags
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        return series
    text = series.astype("object").map(_as_text)
    strings: pd.Series = pd.Series(text, index=series.index, name=series.name, dtype="string")
    return strings


def _is(value: Any, number: int) -> bool:
    if isinstance(value, bool):
        return value is bool(number)
    try:
        return isinstance(value, (int, float)) and float(value) == number
    except (TypeError, ValueError):
        return False


def _as_text(value: Any) -> str | None:
    """A value's text; a whole float reads as an integer (1000.0 -> "1000")."""
    if _missing(value):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def apply_declared_kinds(data: Any, kinds: Mapping[str, DeclaredKind]) -> Any:
    """``data`` (pandas or dask) with the declared columns converted; others untouched.

    The original frame is not modified; unconverted columns are shared, not copied.
    """
    from dpframe.backends.base import is_dask_frame

    if not kinds:
        return data
    if is_dask_frame(data):
        converted = {
            name: data[name].map_partitions(_convert, kind, meta=_meta(data[name], kind))
            for name, kind in kinds.items()
            if not _already(data[name].dtype, kind)
        }
        return data.assign(**converted) if converted else data
    if not isinstance(data, pd.DataFrame):
        return data  # make_backend refuses it with a clear message
    changed: dict[str, pd.Series] = {}
    for name, kind in kinds.items():
        original = data[name]
        column = _convert(original, kind)
        if column is not original:  # already of the declared kind: shared, not copied
            changed[name] = column
    if not changed:
        return data
    columns = {name: changed.get(name, data[name]) for name in data.columns}
    return pd.DataFrame(columns, index=data.index, copy=False)


#: The dtype a declared column is evaluated as (an integer column too is read as numbers).
_DTYPES: Mapping[DeclaredKind, str] = {
    "numeric": "float64",
    "integer": "float64",
    "boolean": "boolean",
    "text": "string",
}
#: The dtype the public schema shows: the declared kind, never the data's dtype.
INTEGER_DTYPE = "Int64"
_SHOWN: Mapping[DeclaredKind, str] = {**_DTYPES, "integer": INTEGER_DTYPE}


def _already(dtype: Any, kind: DeclaredKind) -> bool:
    """True when a column of ``dtype`` needs no conversion to ``kind``."""
    if kind in ("numeric", "integer"):
        return bool(
            pd.api.types.is_numeric_dtype(dtype)
            and not pd.api.types.is_bool_dtype(dtype)
            and not pd.api.types.is_complex_dtype(dtype)
        )
    if kind == "boolean":
        return bool(pd.api.types.is_bool_dtype(dtype))
    return bool(pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype))


def _meta(column: Any, kind: DeclaredKind) -> tuple[Any, str]:
    return (column.name, _DTYPES[kind])


def declared_schema(schema: Schema, kinds: Mapping[str, DeclaredKind]) -> Schema:
    """``schema`` with each declared column showing its declared dtype, whatever the data's.

    A numeric column is evaluated as float64 anyway; showing ``int64`` for a
    clean column and ``float64`` for one with a missing value would reveal that
    a value is missing.  A column declared ``"integer"`` shows ``Int64``
    (whole numbers, missing allowed): that is how quantiles know to choose
    among integers (:data:`INTEGER_DTYPE`).
    """
    for name, kind in kinds.items():
        if name in schema:
            schema = schema.with_column(replace(schema.get(name), dtype=_SHOWN[kind]))
    return schema
