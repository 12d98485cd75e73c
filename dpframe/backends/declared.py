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
candidates are integers; a bounded column of an integer dtype is one without
declaration), ``"boolean"`` (True/False/1/0, else missing;
pandas' nullable ``boolean``), ``"text"`` (pandas' ``string``; numbers become
their text, whole floats without ``.0``: a numeric column with a missing value
is float, and its 1000 must still read "1000"), ``"text(40)"`` (text of at
most 40 characters: longer values are truncated, and the column's ``.str``
expressions know the bound, see :mod:`dpframe.plan.text`) and ``"datetime"``
(``datetime64[ns]``; a column with date bounds ``(pd.Timestamp(...),
pd.Timestamp(...))`` is one by declaration).  Dates are read as ISO 8601 text
(``2020-01-31``, ``2020-01-31T08:00:00``; with a UTC offset converted to UTC)
or date objects, each on its own: no format is guessed from the first value,
and anything else (another format, a number, a date outside 1677-2262) is
missing.  A date column with a time zone is read in UTC, without the zone.
Columns neither declared nor bounded keep their dtype.

Any kind may end in ``" not null"`` (``"integer not null"``, as SQL writes it):
the column holds a value in every row, by declaration.  A missing value there
(or one that does not convert) is read as a public fill instead (the midpoint
of the column's bounds, rounded down for an integer column; 0 without bounds;
False; the empty text; the first date of its date bounds), row by row, so no
release can tell a missing value from the fill.  What the declaration buys:
``describe()`` shows one row count in every such column (see
:mod:`dpframe.mechanisms.moments.describe_family`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.schema import Schema
from dpframe.plan.temporal import check_date_bounds, is_date
from dpframe.plan.text import check_max_length

__all__ = [
    "INTEGER_DTYPE",
    "DeclaredKind",
    "apply_declared_kinds",
    "declared_kinds",
    "declared_schema",
    "parse_kind",
    "with_fills",
]

BaseKind = Literal["numeric", "integer", "boolean", "text", "datetime"]


@dataclass(frozen=True)
class DeclaredKind:
    """A declared column kind, and a text column's maximum length (characters).

    ``not_null``: declared to hold a value in every row (``"... not null"``);
    ``fill`` is the public value a missing one is read as (:func:`with_fills`).
    """

    base: BaseKind
    max_length: int | None = None
    not_null: bool = False
    fill: Any = None


_ALIASES: Mapping[str, BaseKind] = {
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
    "datetime": "datetime",
    "datetime64": "datetime",
    "datetime64[ns]": "datetime",
    "date": "datetime",
    "timestamp": "datetime",
}
_LIMITED_TEXT = re.compile(r"(?:text|string|str)\((\d{1,7})\)")
_NOT_NULL = re.compile(r"\s+not\s+null\s*$", re.IGNORECASE)
_FIRST, _LAST = pd.Timestamp.min.ceil("s"), pd.Timestamp.max.floor("s")
#: A date and a time without a UTC offset (``2020-01-31T08:00``, ``20200131 0800:00.5``):
#: after the time's first digit only digits, ``:``, ``.`` and ``,`` (an offset has Z, + or -).
_NAIVE_TIME = re.compile(r"[\d-]+[T ]\d[\d:.,]*")


def parse_kind(name: str, kind: object) -> DeclaredKind:
    """The declared kind ``kind`` of column ``name`` (a :class:`SchemaError` if unknown)."""
    return _parse_kind(name, kind)


def _parse_kind(name: str, kind: object) -> DeclaredKind:
    if isinstance(kind, str) and _NOT_NULL.search(kind):
        return replace(_parse_kind(name, _NOT_NULL.sub("", kind).strip()), not_null=True)
    if isinstance(kind, str):
        limited = _LIMITED_TEXT.fullmatch(kind)
        if limited is not None:
            length = check_max_length(int(limited[1]), f"The maximum length of {name!r}")
            return DeclaredKind("text", length)
        base = _ALIASES.get(kind)
        if base is not None:
            return DeclaredKind(base)
    raise SchemaError(
        f"dtypes[{name!r}] must be 'numeric', 'integer', 'boolean' or 'text' ('text(40)': text "
        "of at most 40 characters), or 'datetime' (or a pandas name of one of them, e.g. "
        "'float64', 'int64', 'bool', 'string'), optionally followed by ' not null' "
        "('integer not null')."
    )


def _date_pair(pair: object) -> bool:
    """True when a bounds pair holds a date (the column is declared as dates)."""
    if isinstance(pair, (str, bytes)) or not isinstance(pair, (tuple, list)):
        return False
    return any(is_date(value) for value in pair)


def declared_kinds(
    columns: Mapping[str, Any],
    dtypes: Mapping[str, object] | None,
    bounds: Mapping[str, object] | None,
) -> dict[str, DeclaredKind]:
    """The declared kind of each column: from ``dtypes``, or from the bounds.

    ``columns`` maps each column to its pandas dtype.  A column with date
    bounds (two dates) is a date column, whatever its dtype (text is parsed
    as ISO 8601 dates).  A column with numeric bounds and an integer dtype
    (numpy's ``int64`` and the like, or pandas' ``Int64``) is an integer
    column without ``dtypes=``: its kind comes from the dtype of the frame
    the analyst passed (never from its values; a curator declares every
    column's kind, so this never applies there).  A column with numeric bounds of text (object or
    string dtype: how a reader stores a numeric column with a stray word) is
    read as numbers; numeric bounds on dates, durations, complex numbers or
    pandas categoricals stay an error (their dtype was declared by whoever
    built the frame, not inferred from a stray value).

    Raises:
        SchemaError: for an unknown column or kind, bounds on a column
            declared as text, date bounds on a column declared otherwise, or
            date bounds that are not two dates with low <= high.
    """
    if dtypes is not None and not isinstance(dtypes, Mapping):
        raise SchemaError(f"dtypes= takes a dict {{column: kind}}, not a {type(dtypes).__name__}.")
    kinds: dict[str, DeclaredKind] = {}
    for name, kind in (dtypes or {}).items():
        if name not in columns:
            raise SchemaError(f"Unknown column {name!r} in dtypes=.")
        kinds[name] = _parse_kind(name, kind)
    declared_bounds = bounds if isinstance(bounds, Mapping) else {}  # else the schema refuses
    for name, pair in declared_bounds.items():
        if name not in columns:
            continue  # the schema check names it
        declared = kinds[name].base if name in kinds else None
        if declared == "text":
            raise SchemaError(f"bounds given for {name!r}, declared as text in dtypes=.")
        if _date_pair(pair) or declared == "datetime":
            if declared not in (None, "datetime"):
                raise SchemaError(
                    f"bounds for {name!r} are dates, but dtypes= declares it {declared}."
                )
            check_date_bounds(name, pair)  # two dates, low <= high: before reading any value
            kinds[name] = DeclaredKind("datetime")
            continue
        dtype = columns[name]
        textual = pd.api.types.is_object_dtype(dtype) or (
            pd.api.types.is_string_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
        )
        numeric = pd.api.types.is_bool_dtype(dtype) or (
            pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
        )
        if textual or numeric:  # numeric ones keep their data; their shown dtype is float64
            integer = pd.api.types.is_integer_dtype(dtype)  # the frame's own kind (int64, Int64)
            kinds.setdefault(name, DeclaredKind("integer" if integer else "numeric"))
    return with_fills(kinds, declared_bounds)


def with_fills(
    kinds: Mapping[str, DeclaredKind], bounds: Mapping[str, object]
) -> dict[str, DeclaredKind]:
    """``kinds`` with each not-null column's public fill (see the module), from its bounds.

    Raises:
        SchemaError: a date column declared not null without date bounds
            (its fill is their first date).
    """
    filled: dict[str, DeclaredKind] = {}
    for name, kind in kinds.items():
        if kind.not_null and kind.fill is None:
            kind = replace(kind, fill=_fill(name, kind, bounds.get(name)))
        filled[name] = kind
    return filled


def _fill(name: str, kind: DeclaredKind, pair: object) -> Any:
    """The public value a missing one of a not-null column is read as."""
    if kind.base == "datetime":
        if not _date_pair(pair):
            raise SchemaError(
                f"dtypes[{name!r}] declares dates not null: give the column date bounds "
                "(its missing values are read as their first date)."
            )
        return pd.Timestamp(check_date_bounds(name, pair)[0])
    if kind.base == "boolean":
        return False
    if kind.base == "text":
        return ""
    if isinstance(pair, (tuple, list)) and len(pair) == 2 and not _date_pair(pair):
        middle = (float(pair[0]) + float(pair[1])) / 2
        return float(math.floor(middle)) if kind.base == "integer" else middle
    return 0.0


def _convert(series: pd.Series, declared: DeclaredKind) -> pd.Series:
    converted = _convert_kind(series, declared)
    if declared.not_null and declared.fill is not None:
        missing = converted.isna()
        if missing.any():  # the fill, row by row (a copy only when one is missing)
            converted = converted.where(~missing, declared.fill)
    return converted


def _convert_kind(series: pd.Series, declared: DeclaredKind) -> pd.Series:
    dtype, kind = series.dtype, declared.base
    if kind == "datetime":
        return _dates(series)
    if kind == "text" and declared.max_length is not None:
        text = _convert(series, DeclaredKind("text"))
        return text.str.slice(0, declared.max_length)
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


def _dates(series: pd.Series) -> pd.Series:
    """``series`` as naive ``datetime64[ns]``, each value on its own (see the module)."""
    dtype = series.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        series = series.dt.tz_convert(None)  # the UTC time, without the zone
    elif not pd.api.types.is_datetime64_dtype(dtype):
        values = series.astype("object")
        text = values.map(_zoned_text)
        stamps = values.map(lambda v: v if is_date(v) and not isinstance(v, str) else None)
        parsed = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True)
        given = pd.to_datetime(stamps, errors="coerce", utc=True)
        series = parsed.where(parsed.notna(), given).dt.tz_convert(None)
    inside = series.notna() & (series >= _FIRST) & (series <= _LAST)
    values = series.where(inside)
    dates: pd.Series = pd.Series(
        values.to_numpy(dtype="datetime64[ns]"), index=series.index, name=series.name
    )
    return dates


def _zoned_text(value: Any) -> str | None:
    """ISO text whose time carries its own offset: a time without one is UTC (``+00:00``).

    pandas 2.2 and 2.3 read a time without an offset with the offset of an earlier
    value of the column (``["...T10:30+02:00", "...T10:30"]`` -> 08:30 twice), so a
    value would depend on the rows before it; with every offset written out, none does.
    Text that is not a date with a time (a date alone, a word) is left as it is.
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text + "+00:00" if _NAIVE_TIME.fullmatch(text) else value


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
_DTYPES: Mapping[BaseKind, str] = {
    "numeric": "float64",
    "integer": "float64",
    "boolean": "boolean",
    "text": "string",
    "datetime": "datetime64[ns]",
}
#: The dtype the public schema shows: the declared kind, never the data's dtype.
INTEGER_DTYPE = "Int64"
_SHOWN: Mapping[BaseKind, str] = {**_DTYPES, "integer": INTEGER_DTYPE}


def _already(dtype: Any, declared: DeclaredKind) -> bool:
    """True when a column of ``dtype`` needs no conversion to ``declared``."""
    kind = declared.base
    if declared.not_null:
        return False  # a missing value may need its fill
    if kind == "datetime":
        return bool(dtype == np.dtype("datetime64[ns]"))
    if declared.max_length is not None:
        return False  # values may need truncating
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
    return (column.name, _DTYPES[kind.base])


def declared_schema(schema: Schema, kinds: Mapping[str, DeclaredKind]) -> Schema:
    """``schema`` with each declared column showing its declared dtype, whatever the data's.

    A text column's declared maximum length is kept in its facts.

    A numeric column is evaluated as float64 anyway; showing ``int64`` for a
    clean column and ``float64`` for one with a missing value would reveal that
    a value is missing.  A column declared ``"integer"`` shows ``Int64``
    (whole numbers, missing allowed): that is how quantiles know to choose
    among integers (:data:`INTEGER_DTYPE`).
    """
    for name, kind in kinds.items():
        if name not in schema:
            continue
        info = replace(
            schema.get(name),
            dtype=_SHOWN[kind.base],
            max_length=kind.max_length,
            not_null=kind.not_null,
        )
        length = kind.max_length
        if length is not None and any(
            isinstance(k, str) and len(k) > length for k in info.categories or ()
        ):
            raise SchemaError(
                f"categories for {name!r} include a key longer than its maximum length "
                f"({length}); values are truncated to it, so that key would never match."
            )
        schema = schema.with_column(info)
    return schema
