"""Evaluating the nodes of a plan's DAG on the rows of a pandas DataFrame.

A plan's expressions are compiled to a flat DAG of instructions
(:mod:`dpframe.plan.dag`, :class:`~dpframe.backends.program.Program`); this
module evaluates one instruction (:func:`apply`) given the values of its
arguments.  Every function here takes the rows to evaluate on as
:class:`Rows`: all the rows of the private frame, or a range of them whose
columns are sliced on use (views: no data is copied).  Every instruction is
evaluated row by row (the result of a row never depends on the other rows,
see :func:`_order`), so evaluating a range of rows gives exactly those rows
of evaluating the whole frame; the pandas backend relies on that to evaluate
plans in chunks of rows.  Values are never modified in place: one value may
be read by several instructions.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.combine import combine_values
from dpframe.plan.dag import Instruction
from dpframe.plan.elementwise import evaluate as elementwise
from dpframe.plan.recode import decode_label
from dpframe.plan.text import text_function

__all__ = [
    "Rows",
    "apply",
    "as_float",
    "bin_codes",
    "bucket_codes",
    "category_codes",
    "date_values",
    "edges_at_or_below",
    "factorized",
    "float_values",
    "mask_values",
    "present",
    "recode_values",
    "text_values",
]

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "&": operator.and_,
    "|": operator.or_,
}


class Rows:
    """The rows ``[start, stop)`` of a DataFrame, read column by column.

    A column is looked up in the frame once per ``columns`` dict (share one
    across the chunks of a release: ``frame[name]`` costs more than slicing
    the Series it returns) and sliced with ``iloc`` (a view) on each use.

    Args:
        frame: the private data.
        start: the first row.
        stop: one past the last row.
        columns: a cache of the frame's column Series (by name).
    """

    __slots__ = ("_columns", "_frame", "_start", "_stop", "_whole")

    def __init__(
        self,
        frame: pd.DataFrame,
        start: int = 0,
        stop: int | None = None,
        columns: dict[str, Any] | None = None,
    ) -> None:
        self._frame = frame
        self._start = start
        self._stop = len(frame) if stop is None else stop
        self._whole = start == 0 and self._stop == len(frame)
        self._columns: dict[str, Any] = {} if columns is None else columns

    def __getitem__(self, name: str) -> Any:
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = self._frame[name]
        return column if self._whole else column.iloc[self._start : self._stop]

    def __len__(self) -> int:
        return self._stop - self._start

    @property
    def index(self) -> pd.Index:
        """The frame's index labels of these rows."""
        index: pd.Index = self._frame.index
        return index if self._whole else index[self._start : self._stop]


def apply(instruction: Instruction, args: Sequence[Any], rows: Rows) -> Any:
    """The value of one DAG node on ``rows`` (a Series aligned with ``rows``, or a scalar).

    Args:
        instruction: ``(tag, params, argument positions)`` (see :mod:`dpframe.plan.dag`).
        args: the values of the arguments, in order.
        rows: the rows evaluated on.
    """
    tag, params, _ = instruction
    if tag == "source":
        return rows[params[0]]
    if tag in ("lit", "date"):
        return params[0]
    if tag in ("arith", "compare", "logical"):
        op = params[0]
        left, right = args
        if tag == "logical":
            left, right = _as_mask(left), _as_mask(right)
        elif tag == "arith":
            left, right = _as_number(left), _as_number(right)
        elif op in ("<", "<=", ">", ">="):
            return _order(op, left, right)
        else:
            left, right = _comparable(left, right)
        return _BINARY[op](left, right)
    if tag in ("ufunc", "where"):
        return elementwise(tag, params, list(args), rows.index)
    if tag == "combine":
        return combine_values(list(args), rows.index)
    (value,) = args
    if tag == "neg":
        return -_as_number(value)
    if tag == "abs":
        return abs(_as_number(value))
    if tag == "not":
        return ~_as_mask(value)
    if tag == "isnull":
        return value.isna() if isinstance(value, pd.Series) else pd.isna(value)
    if tag == "isin":
        if isinstance(value, pd.Series):
            return value.isin(list(params[0]))
        return value in params[0]
    if tag == "bucket":
        codes = bucket_codes(as_float(value, len(rows)), params[0], params[1])
        return pd.Series(np.where(codes >= 0, codes, np.nan), index=rows.index)
    if tag == "bin":
        codes = bin_codes(as_float(value, len(rows)), params[0], params[1], params[2])
        return pd.Series(np.where(codes >= 0, codes, np.nan), index=rows.index)
    if tag == "recode":
        if not isinstance(value, pd.Series):  # a constant: its own dtype, repeated
            dtype = object if isinstance(value, str) else None
            value = pd.Series(np.full(len(rows), value, dtype=dtype), index=rows.index)
        return recode_values(value, *params)
    if tag == "clip":
        return np.clip(value, params[0], params[1])
    if tag == "dt":
        field = getattr(date_values(value, rows).dt, params[0])
        return pd.Series(field.to_numpy(dtype=np.float64, na_value=np.nan), index=rows.index)
    if tag == "period":
        return date_values(value, rows).dt.to_period(params[0])
    if tag.startswith("str_"):
        return text_values(tag, params, value, rows)
    raise SchemaError(f"Unsupported expression {tag!r}.")


def date_values(value: Any, rows: Rows) -> pd.Series:
    """A date column (or a date constant, repeated) as ``datetime64`` values of ``rows``.

    Validation lets only dates reach a ``.dt`` node; anything else would be
    all missing here, never an error.
    """
    if isinstance(value, pd.Series) and pd.api.types.is_datetime64_dtype(value.dtype):
        return value
    stamp = (
        np.datetime64("NaT", "ns") if isinstance(value, pd.Series) else np.datetime64(value, "ns")
    )
    dates: pd.Series = pd.Series(np.full(len(rows), stamp), index=rows.index)
    return dates


def text_values(tag: str, params: tuple[Any, ...], value: Any, rows: Rows) -> pd.Series:
    """A ``.str`` node (:mod:`dpframe.plan.text`) on the values of ``rows``.

    The node's function is applied once per distinct value of the chunk
    (``pd.factorize``), and each row takes its value's result: text nodes
    give ``object`` text (NaN where missing), ``len`` float64 (NaN where
    missing), matches pandas' nullable ``boolean`` (``na`` where missing).
    Missing values, values that are not text, and text the regular
    expression engine cannot read (lone surrogates) give missing results.
    """
    function = text_function(tag, params)

    def one(item: Any) -> Any:
        if not isinstance(item, str):
            return None
        try:
            return function(item)
        except UnicodeError:
            return None

    if not isinstance(value, pd.Series):
        value = pd.Series(np.full(len(rows), value, dtype=object), index=rows.index)
    codes, uniques = pd.factorize(value, use_na_sentinel=True)
    distinct = np.asarray(uniques, dtype=object)  # plain objects: fast to iterate
    results = np.empty(len(distinct) + 1, dtype=object)
    if len(distinct):
        results[:-1] = np.frompyfunc(one, 1, 1)(distinct)
    results[-1] = None  # row code -1 (missing) takes the last slot
    missing = np.asarray(pd.isna(results), dtype=bool)  # only None is missing here
    index = value.index
    if tag == "str_len":
        lengths = np.where(missing, 0, results).astype(np.float64)
        lengths[missing] = np.nan
        numbers: pd.Series = pd.Series(lengths[codes], index=index)
        return numbers
    if tag == "str_match":
        na = params[-1]
        flags = np.where(missing, bool(na), results).astype(bool)
        unknown = missing & (na is None)
        array = pd.arrays.BooleanArray(flags[codes], unknown[codes])
        matches: pd.Series = pd.Series(array, index=index)
        return matches
    table = np.where(missing, np.nan, results)
    text: pd.Series = pd.Series(table[codes], index=index, dtype=object)
    return text


def mask_values(value: Any, n: int) -> npt.NDArray[np.bool_]:
    """A predicate's value as a boolean array of ``n`` rows (missing counts as false)."""
    return _full_mask(_as_mask(value), n)


def float_values(value: Any, n: int) -> Any:
    """A value as a float64 array of ``n`` rows (NaN where missing)."""
    if isinstance(value, pd.Series):
        if pd.api.types.is_bool_dtype(value.dtype) and value.hasnans:
            return value.astype("float64").to_numpy()
        return value.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.full(n, float(value))


def present(value: Any, n: int) -> npt.NDArray[np.bool_]:
    """True where a value of ``n`` rows is present (any dtype: text, dates, numbers)."""
    if isinstance(value, pd.Series):
        return np.asarray(value.notna().to_numpy(dtype=bool))
    return np.full(n, not pd.isna(value))


def factorized(values: pd.Series) -> tuple[npt.NDArray[np.signedinteger[Any]], Any]:
    """Each row's code (−1: missing) and the distinct values the codes index.

    A categorical column's own codes and categories (no factorization: a
    category not present in the rows is a distinct value no row points to);
    any other column is factorized.  Only a row's value matters to callers,
    never the codes' order.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        return np.asarray(values.cat.codes.to_numpy()), values.cat.categories
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes), uniques


def category_codes(values: pd.Series, categories: tuple[Hashable, ...]) -> npt.NDArray[np.intp]:
    """Position of each value among ``categories`` (-1: missing or not declared).

    Factorizes the column once (fast for strings) and maps only the distinct
    values to the declared keys.
    """
    row_codes, uniques = factorized(values)
    declared = pd.Index(list(categories), dtype=object)
    mapping = np.asarray(declared.get_indexer(pd.Index(uniques).astype(object)), dtype=np.intp)
    mapping = np.append(mapping, -1)  # row code -1 (missing) maps to the last slot
    return np.asarray(mapping[row_codes], dtype=np.intp)


def as_float(value: Any, n: int) -> npt.NDArray[np.float64]:
    """A Series (or a scalar, repeated ``n`` times) as float64, NaN where missing."""
    if isinstance(value, pd.Series):
        return np.asarray(value.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.full(n, float(value))


def bucket_codes(
    values: npt.NDArray[np.float64], bin_edges: Sequence[float], clamp: bool
) -> npt.NDArray[np.intp]:
    """Bin index per value (-1: missing, or outside the edges without ``clamp``)."""
    edges = np.asarray(bin_edges, dtype=np.float64)
    last = len(edges) - 2
    codes = edges_at_or_below(values, edges) - 1
    codes[values == edges[-1]] = last
    if clamp:
        np.clip(codes, 0, last, out=codes)
    else:
        codes[(values < edges[0]) | (values > edges[-1])] = -1
    codes[np.isnan(values)] = -1
    return codes


def bin_codes(
    values: npt.NDArray[np.float64],
    bin_edges: Sequence[float],
    right: bool,
    include_lowest: bool,
) -> npt.NDArray[np.intp]:
    """``pandas.cut(values, bin_edges, right, include_lowest, labels=False)``; -1 for no bin.

    Bins are ``(e[i], e[i+1]]`` (``right``) or ``[e[i], e[i+1])``; with
    ``include_lowest`` a value equal to the first edge is in the first bin.
    Values outside the edges, ±inf and NaN are in no bin.
    """
    edges = np.asarray(bin_edges, dtype=np.float64)
    m = len(edges)
    if right:  # edges strictly below each value: m minus the (negated) edges at or above it
        ids = m - edges_at_or_below(-values, -edges[::-1])
        if include_lowest:
            ids[values == edges[0]] = 1
    else:
        ids = edges_at_or_below(values, edges)
    codes = ids - 1
    codes[(ids == 0) | (ids == m) | np.isnan(values)] = -1
    return codes


def recode_values(
    values: pd.Series,
    source: tuple[Any, ...],
    target: tuple[Hashable, ...],
    keep: bool,
    ordered: bool,
) -> pd.Series:
    """``values`` with each of ``source`` replaced by the ``target`` at its position.

    Values not among ``source`` (and missing values) become missing, or with
    ``keep`` stay as they are.  Numeric targets give float64 values; other
    targets a categorical of the distinct targets (``ordered`` as given),
    or with ``keep`` an object column.  ``target`` holds labels as
    :func:`~dpframe.plan.recode.encode_label` writes them.
    """
    labels = [decode_label(t) for t in target]
    positions = _positions(values, source)
    found = positions >= 0
    numeric = all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in labels)
    index = values.index
    result: pd.Series
    if numeric and (not keep or pd.api.types.is_numeric_dtype(values.dtype)):
        numbers = np.array([float(t) for t in labels if isinstance(t, (int, float))])
        rest = as_float(values, len(values)) if keep else np.nan
        result = pd.Series(np.where(found, numbers[positions], rest), index=index)
        return result
    table = np.empty(len(labels), dtype=object)
    table[:] = labels
    if keep:
        kept = np.where(found, table[positions], values.to_numpy(dtype=object))
        result = pd.Series(kept, index=index, dtype=object)
        return result
    slots = {label: i for i, label in enumerate(dict.fromkeys(labels))}
    slot_of = np.array([slots[label] for label in labels], dtype=np.intp)
    codes = np.where(found, slot_of[positions], -1)
    categories = pd.Index(list(slots))
    recoded = pd.Categorical.from_codes(codes, categories=categories, ordered=ordered)
    result = pd.Series(recoded, index=index)
    return result


def _is_number(values: pd.Series) -> bool:
    dtype = values.dtype
    return bool(pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype))


#: Integers up to this size are exact as float64 (a faster lookup of numeric sources).
_EXACT_INT = 2**53


def _positions(values: pd.Series, source: tuple[Any, ...]) -> npt.NDArray[np.intp]:
    """The position of each value among ``source`` (-1: none, or missing).

    A categorical is looked up by its categories; numbers among numeric
    sources by float value; anything else by Python equality (as a dict).
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        categories = pd.Series(values.cat.categories)
        known = np.append(_positions(categories, source), -1)  # code -1 (missing) -> -1
        return np.asarray(known[values.cat.codes.to_numpy()], dtype=np.intp)
    numeric_source = all(
        isinstance(s, (int, float)) and not isinstance(s, bool) and abs(s) < _EXACT_INT
        for s in source
    )
    if numeric_source and _is_number(values):
        lookup = pd.Index(np.asarray(source, dtype=np.float64))
        wanted = pd.Index(as_float(values, len(values)))
        return np.asarray(lookup.get_indexer(wanted), dtype=np.intp)
    lookup = pd.Index(list(source), dtype=object)
    wanted = pd.Index(values.to_numpy(dtype=object), dtype=object)
    return np.asarray(lookup.get_indexer(wanted), dtype=np.intp)


def edges_at_or_below(
    values: npt.NDArray[np.float64], edges: npt.NDArray[np.float64]
) -> npt.NDArray[np.intp]:
    """``np.searchsorted(edges, values, side="right")``, faster for equally spaced edges.

    For the edges of ``np.linspace`` (quantile candidates, ``hist`` bins) the
    count is guessed arithmetically, then corrected against the edges
    themselves until ``edges[k - 1] <= v < edges[k]`` holds for every value,
    so the result is identical to ``searchsorted`` (NaN counts every edge, as
    there).  Other edges use ``searchsorted``.
    """
    m = len(edges)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        uniform = m >= 3 and np.array_equal(edges, np.linspace(edges[0], edges[-1], m))
        scale = (m - 1) / (edges[-1] - edges[0])
        if not (uniform and np.isfinite(scale) and scale > 0):
            return np.asarray(np.searchsorted(edges, values, side="right"), dtype=np.intp)
        guess = (values - edges[0]) * scale + 1.0
    np.nan_to_num(guess, copy=False, nan=float(m), posinf=float(m), neginf=0.0)
    np.clip(guess, 0.0, float(m), out=guess)
    counts = guess.astype(np.intp)  # truncation is floor here: guess >= 0
    below = np.concatenate(([-np.inf], edges))  # below[k] = edges[k - 1]
    above = np.concatenate((edges, [np.nan]))  # above[k] = edges[k]; none above the last
    wrong = np.flatnonzero((above[counts] <= values) | (below[counts] > values))
    while wrong.size:  # rounding puts a guess at most an edge or two off
        v, c = values[wrong], counts[wrong]
        up, down = above[c] <= v, below[c] > v
        counts[wrong] = c + up - down
        wrong = wrong[up | down]
    return np.asarray(counts, dtype=np.intp)


def _as_number(value: Any) -> Any:
    """Integer and boolean columns as float64 before arithmetic.

    Integer dtypes wrap around silently (int8: 100 * 100 == 16) and numpy
    adds booleans as logical or; float64 gives the arithmetic that the
    declared bounds were derived for.
    """
    if isinstance(value, pd.Series) and (
        pd.api.types.is_integer_dtype(value.dtype) or pd.api.types.is_bool_dtype(value.dtype)
    ):
        return pd.Series(value.to_numpy(dtype=np.float64, na_value=np.nan), index=value.index)
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    return value


def _order(op: str, left: Any, right: Any) -> Any:
    """An ordering comparison; values that cannot be ordered (mixed types) compare false.

    An object column may mix numbers, text and missing values.  pandas raises
    for the whole column then; here each row is compared on its own and a
    pair that cannot be ordered counts as false, like a missing value, so the
    result of a row never depends on the other rows.
    """
    compare = _BINARY[op]
    try:
        return compare(left, right)
    except TypeError:
        pass
    series = left if isinstance(left, pd.Series) else right
    n = len(series)
    lefts = left.to_numpy(dtype=object) if isinstance(left, pd.Series) else [left] * n
    rights = right.to_numpy(dtype=object) if isinstance(right, pd.Series) else [right] * n

    def one(a: Any, b: Any) -> bool:
        try:
            return bool(compare(a, b))
        except TypeError:  # unorderable pair, or pd.NA (ambiguous truth value)
            return False

    flags = [one(a, b) for a, b in zip(lefts, rights, strict=True)]
    return pd.Series(flags, index=series.index, dtype=bool)


def _comparable(left: Any, right: Any) -> tuple[Any, Any]:
    """Categorical columns as plain values when compared with another column.

    pandas refuses ``==`` between categoricals of other categories (or a
    categorical and a plain array); compared as values, each row stands alone.
    """
    if isinstance(left, pd.Series) and isinstance(right, pd.Series):
        if isinstance(left.dtype, pd.CategoricalDtype):
            left = left.astype(object)
        if isinstance(right.dtype, pd.CategoricalDtype):
            right = right.astype(object)
    return left, right


def _as_mask(value: Any) -> Any:
    if isinstance(value, pd.Series):
        if value.dtype == bool:
            return value
        if isinstance(value.dtype, pd.CategoricalDtype):
            value = value.astype(object)
        return value.fillna(False).astype(bool)
    return bool(value) if value is not pd.NA else False


def _full_mask(value: Any, n: int) -> npt.NDArray[np.bool_]:
    if isinstance(value, pd.Series):
        return np.asarray(value.to_numpy(dtype=bool))
    return np.full(n, bool(value))
