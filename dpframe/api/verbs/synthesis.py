"""``pf.synthesize()``: the node of a public synthetic copy of whole rows.

Check the arguments against the public schema, take each column's kind from
it (:func:`column_kind`), choose each binned column's bins from its declared
bounds and build the :class:`~dpframe.plan.releases.Synthesize` node.
Nothing here reads data; every bad argument raises before anything is charged.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpframe.api.handle import FrameHandle, handle_of
from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import Synthesize
from dpframe.plan.releases.synthesis import MAX_COLUMN_CELLS, MAX_SYNTH_ROWS, date_code
from dpframe.plan.temporal import as_date

__all__ = [
    "DEFAULT_BINS",
    "INTEGER_CELLS",
    "bin_edges",
    "column_kind",
    "date_edges",
    "may_be_missing",
    "synthesis_node",
]

#: Bins of a numeric column when ``bins=`` does not say.
DEFAULT_BINS = 16
#: An integer column with at most this many values in its bounds gets one cell per value.
INTEGER_CELLS = 32
_METHODS = ("mst", "aim")
_BITS = (8, 16, 32, 64)
#: numpy's integer dtypes: they cannot hold a missing value.
_NUMPY_INTEGERS = frozenset(f"{sign}int{bits}" for sign in ("", "u") for bits in _BITS)
#: Integer dtypes by name: numpy's, and pandas' nullable ones.
_INTEGERS = _NUMPY_INTEGERS | {f"{sign}Int{bits}" for sign in ("", "U") for bits in _BITS}
#: Shown dtypes that cannot hold a missing value (numpy's booleans and integers).
_NEVER_MISSING = _NUMPY_INTEGERS | {"bool"}


def column_kind(info: ColumnInfo) -> str:
    """A column's kind in a copy, from its public schema only (its declaration or dtype).

    ``date`` for dates, ``boolean`` for booleans, ``category`` for a pandas
    categorical and ``text`` for other text, ``integer`` for an integer dtype
    (declared ``"integer"``, or an integer column of the analyst's frame),
    else ``float``.
    """
    if info.kind == "datetime":
        return "date"
    if info.kind == "boolean":
        return "boolean"
    if info.kind in ("categorical", "text"):
        return "category" if info.dtype == "category" else "text"
    return "integer" if info.dtype in _INTEGERS else "float"


def may_be_missing(info: ColumnInfo) -> bool:
    """True unless the column's public dtype cannot hold a missing value (numpy bool or int)."""
    return info.dtype not in _NEVER_MISSING


def _finite(value: Any) -> bool:
    return math.isfinite(float(value))


def _bin_count(name: str, given: object) -> int:
    if isinstance(given, bool) or not isinstance(given, numbers.Integral):
        raise InvalidArgumentError(
            f"bins for {name!r} must be a number of bins (an integer >= 1) or a list of edges."
        )
    count = int(given)
    if not 1 <= count <= MAX_COLUMN_CELLS:
        raise InvalidArgumentError(
            f"bins for {name!r} must be between 1 and {MAX_COLUMN_CELLS:,}, got {count}."
        )
    return count


def _given_edges(name: str, given: Any) -> tuple[float, ...]:
    values = list(given)
    finite = all(
        not isinstance(v, (bool, np.bool_)) and isinstance(v, numbers.Real) and _finite(v)
        for v in values
    )
    if len(values) < 2 or not finite:
        raise InvalidArgumentError(
            f"The bin edges of {name!r} must be at least two finite numbers."
        )
    edges = tuple(float(v) for v in values)
    if any(b <= a for a, b in itertools.pairwise(edges)):
        raise InvalidArgumentError(f"The bin edges of {name!r} must increase.")
    return edges


#: Integer columns are drawn exactly within ±2**53 (integers a float64 holds exactly).
LARGEST_INTEGER = 2**53


def _integer_edges(name: str, edges: tuple[float, ...]) -> tuple[float, ...]:
    """Given edges of an integer column: within ±2**53, a whole number in every bin."""
    if max(abs(edges[0]), abs(edges[-1])) > LARGEST_INTEGER:
        raise SchemaError(
            f"synthesize() draws integer columns within ±2**53; the bins of {name!r} reach "
            f"{max(abs(edges[0]), abs(edges[-1])):g}: declare narrower bounds (or give edges)."
        )
    top = len(edges) - 2
    for i, (a, b) in enumerate(itertools.pairwise(edges)):
        last = math.floor(b) if i == top else math.ceil(b) - 1  # the last bin is closed
        if last < math.ceil(a):
            raise InvalidArgumentError(
                f"The bin [{a:g}, {b:g}{']' if i == top else ')'} of the integer column "
                f"{name!r} holds no whole number: give edges with one in every bin (e.g. at "
                "half-integers)."
            )
    return edges


def bin_edges(info: ColumnInfo, given: object, integer: bool) -> tuple[float, ...]:
    """A numeric column's bin edges: given, or cut from its declared bounds (never the data).

    An integer column with at most :data:`INTEGER_CELLS` values in its bounds
    gets one bin per value (edges at half-integers); otherwise its bins hold
    whole runs of integers.  A float column gets :data:`DEFAULT_BINS` equal
    bins over its bounds (or ``given`` bins, or the ``given`` edges).
    """
    assert info.bounds is not None
    low, high = info.bounds
    if given is not None and not isinstance(given, numbers.Integral):
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(
            given, (Sequence, np.ndarray, pd.Index)
        ):
            raise InvalidArgumentError(
                f"bins for {info.name!r} must be a number of bins or a list of edges."
            )
        edges = _given_edges(info.name, given)
        return _integer_edges(info.name, edges) if integer else edges
    if integer:
        first, last = math.ceil(low), math.floor(high)
        if last < first:
            raise SchemaError(f"The bounds of {info.name!r} hold no integer.")
        if max(abs(first), abs(last)) > LARGEST_INTEGER:
            raise SchemaError(
                f"synthesize() draws integer columns within ±2**53; the bounds of "
                f"{info.name!r} reach {max(abs(first), abs(last)):g}: declare narrower bounds."
            )
        values = last - first + 1
        if given is None:
            width = 1 if values <= INTEGER_CELLS else math.ceil(values / DEFAULT_BINS)
        else:
            width = math.ceil(values / _bin_count(info.name, given))
        count = math.ceil(values / width)
        inner = tuple(first - 0.5 + width * i for i in range(count))
        return (*inner, last + 0.5)
    if not high > low:
        raise SchemaError(f"synthesize() needs bounds with low < high for {info.name!r}.")
    count = DEFAULT_BINS if given is None else _bin_count(info.name, given)
    step = (high - low) / count
    edges = (*(low + step * i for i in range(count)), float(high))
    if any(b <= a for a, b in itertools.pairwise(edges)):
        raise SchemaError(
            f"The bounds of {info.name!r} ({low:g}, {high:g}) are too close for {count} bins "
            "at float precision: use fewer bins (bins=) or wider bounds."
        )
    return edges


def date_edges(info: ColumnInfo, given: object) -> tuple[float, ...]:
    """A date column's bin edges (day codes − 0.5), cut from its declared date bounds.

    One bin per day while the bounds span at most :data:`INTEGER_CELLS` days,
    else about :data:`DEFAULT_BINS` bins of whole days (or ``given`` bins, or
    the ``given`` dates as edges).
    """
    assert info.date_bounds is not None
    if given is not None and not isinstance(given, numbers.Integral):
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(
            given, (Sequence, np.ndarray, pd.Index)
        ):
            raise InvalidArgumentError(
                f"bins for {info.name!r} must be a number of bins or a list of dates."
            )
        stamps = [as_date(v, f"A bin edge of {info.name!r}").normalize() for v in given]
        if len(stamps) < 2 or any(b <= a for a, b in itertools.pairwise(stamps)):
            raise InvalidArgumentError(f"The bin edges of {info.name!r} must be increasing dates.")
        return tuple(date_code(s) - 0.5 for s in stamps)
    first, last = (stamp.normalize() for stamp in info.date_bounds)
    days = (last - first).days + 1
    if given is None:
        width = 1 if days <= INTEGER_CELLS else math.ceil(days / DEFAULT_BINS)
    else:
        width = math.ceil(days / _bin_count(info.name, given))
    count = math.ceil(days / width)
    inner = [first + pd.Timedelta(days=width * i) for i in range(count)]
    return tuple(date_code(s) - 0.5 for s in [*inner, last + pd.Timedelta(days=1)])


def _rows(rows: object) -> int:
    if rows is None:
        return 0
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral):
        raise InvalidArgumentError("rows must be a positive integer (or None: a private count).")
    value = int(rows)
    if not 1 <= value <= MAX_SYNTH_ROWS:
        raise InvalidArgumentError(
            f"rows must be a positive integer at most {MAX_SYNTH_ROWS:,} (or None for a "
            f"private, noisy row count); got {value}."
        )
    return value


def _method(method: object) -> str:
    if not isinstance(method, str) or method not in _METHODS:
        raise InvalidArgumentError(f"method must be 'mst' or 'aim'; got {method!r}.")
    return str(method)


def synthesis_node(
    frame: FrameHandle | object,
    request: PrivacyRequest,
    method: object = "mst",
    bins: object = None,
    rows: object = None,
    progress: bool = True,
) -> Synthesize:
    """The :class:`Synthesize` node of ``frame.synthesize(...)`` (validated; nothing charged).

    ``frame`` is a frame's handle, or a :class:`~dpframe.PrivateFrame`.
    """
    found = frame if isinstance(frame, FrameHandle) else handle_of(frame)
    if not isinstance(found, FrameHandle):
        raise SchemaError("synthesize() takes a private frame.")
    chosen = _method(method)
    length = _rows(rows)
    if isinstance(bins, bool) or not (
        bins is None or isinstance(bins, (numbers.Integral, Mapping))
    ):
        raise InvalidArgumentError(
            "bins= takes a number of bins for every numeric column, or a dict "
            "{column: number of bins or list of edges}."
        )
    names = list(found.schema.names)
    per_column: Mapping[Any, Any] = bins if isinstance(bins, Mapping) else {}
    unknown = [str(c) for c in per_column if c not in names]
    if unknown:
        raise SchemaError(f"bins= names columns that are not in the frame: {', '.join(unknown)}.")
    lacking = []
    edges: list[tuple[float, ...]] = []
    categories: list[tuple[Any, ...]] = []
    kinds: list[str] = []
    for name in names:
        info = found.schema.get(name)
        kind = column_kind(info)
        given = per_column.get(name, None if isinstance(bins, Mapping) else bins)
        if info.categories is not None and name not in per_column:
            edges.append(())
            categories.append(tuple(info.categories))
        elif kind == "date" and info.date_bounds is not None:
            edges.append(date_edges(info, given))
            categories.append(())
        elif info.summable and info.bounds is not None and kind != "boolean":
            edges.append(bin_edges(info, given, kind == "integer"))
            categories.append(())
        elif info.categories is not None:  # keyed, and named in bins= (no bounds to cut)
            raise SchemaError(
                f"bins= is for numeric and date columns; {name!r} is keyed by its declared "
                "categories: leave it out of bins=."
            )
        else:
            lacking.append(name)
        kinds.append(kind)
    if lacking:
        raise SchemaError(
            "synthesize() models every column of the frame from its public bounds (numeric "
            f"or dates) or categories; {', '.join(map(repr, lacking))} "
            f"{'has' if len(lacking) == 1 else 'have'} neither: declare them "
            "(bounds=/categories=, with_bounds), or select the other columns first (pf[[...]])."
        )
    return Synthesize(
        plan=found.plan,
        privacy=request,
        columns=tuple(str(n) for n in names),
        edges=tuple(edges),
        categories=tuple(categories),
        kinds=tuple(kinds),
        missing=tuple(may_be_missing(found.schema.get(n)) for n in names),
        method="aim" if chosen == "aim" else "mst",
        rows=length,
        progress=bool(progress),
    )
