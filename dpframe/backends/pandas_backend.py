"""The embedded pandas backend.

Evaluates plans on a DataFrame it holds by reference (no copy at load).
One cache: the integer codes of a *source* column against its declared
categories (a deterministic function of data the backend already holds,
never returned to the caller), so repeated group-bys over a string column
do not re-hash it.  Nothing that depends on a filter or a release is cached.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.base import MAX_ROWS, Measure
from dpframe.errors import DPError, SchemaError
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import (
    Abs,
    Arith,
    Bucket,
    Clip,
    Col,
    Compare,
    Expr,
    IsIn,
    IsNull,
    Lit,
    Logical,
    Neg,
    Not,
)
from dpframe.plan.inline import SourceCol, inline
from dpframe.plan.nodes import Assign, Filter, GroupKey, Plan, lineage

__all__ = ["PandasBackend"]

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
_CHUNK_ROWS = 1 << 16

#: Cell of each row: slot codes (0 = no cell), a boolean mask (one cell), or None (one cell).
Cells = npt.NDArray[np.intp] | npt.NDArray[np.bool_] | None


class PandasBackend:
    """Evaluate plans on an in-memory pandas DataFrame.

    Args:
        frame: the private data; held by reference, never copied or returned.
    """

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._codes: dict[tuple[str, tuple[Hashable, ...]], npt.NDArray[np.intp]] = {}  # slots
        self._fingerprint: str | None = None

    def __repr__(self) -> str:
        return "PandasBackend(<private data>)"

    def __reduce__(self) -> Any:
        raise DPError("A backend holding private data cannot be pickled.")

    def fingerprint(self) -> str:
        """BLAKE2b over column names, dtypes and row hashes, in 2**16-row chunks."""
        if self._fingerprint is None:
            digest = hashlib.blake2b(digest_size=20)
            for name, dtype in self._frame.dtypes.items():
                digest.update(f"{name}\x00{dtype}\x00".encode())
            for start in range(0, len(self._frame), _CHUNK_ROWS):
                chunk = self._frame.iloc[start : start + _CHUNK_ROWS]
                digest.update(_hash_rows(chunk).tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def schema_frame(self) -> pd.DataFrame:
        """An empty frame with the data's columns and dtypes (no rows)."""
        empty: pd.DataFrame = self._frame.iloc[:0]
        return empty

    def bound_contributions(self, unit: str, max_rows: int, rng: SecureRandom) -> PandasBackend:
        """A backend over a bounded copy: at most ``max_rows`` rows per unit (see below)."""
        return PandasBackend(bound_contributions(self._frame, unit, max_rows, rng))

    # -- expressions ---------------------------------------------------------

    def _eval(self, expr: Expr, defs: dict[str, Expr]) -> Any:
        if isinstance(expr, SourceCol):
            return self._frame[expr.name]
        if isinstance(expr, Col):
            return self._eval(inline(expr, defs), defs)
        if isinstance(expr, Lit):
            return expr.value
        if isinstance(expr, (Arith, Compare, Logical)):
            left = self._eval(expr.left, defs)
            right = self._eval(expr.right, defs)
            if isinstance(expr, Logical):
                left, right = _as_mask(left), _as_mask(right)
            elif isinstance(expr, Arith):
                left, right = _as_number(left), _as_number(right)
            elif expr.op in ("<", "<=", ">", ">="):
                return _order(expr.op, left, right)
            return _BINARY[expr.op](left, right)
        if isinstance(expr, Neg):
            return -_as_number(self._eval(expr.operand, defs))
        if isinstance(expr, Abs):
            return abs(_as_number(self._eval(expr.operand, defs)))
        if isinstance(expr, Not):
            return ~_as_mask(self._eval(expr.operand, defs))
        if isinstance(expr, IsNull):
            value = self._eval(expr.operand, defs)
            return value.isna() if isinstance(value, pd.Series) else pd.isna(value)
        if isinstance(expr, IsIn):
            value = self._eval(expr.operand, defs)
            if isinstance(value, pd.Series):
                return value.isin(list(expr.values))
            return value in expr.values
        if isinstance(expr, Bucket):
            value = self._eval(expr.operand, defs)
            codes = _bucket_codes(_as_float(value, len(self._frame)), expr)
            return pd.Series(np.where(codes >= 0, codes, np.nan), index=self._frame.index)
        if isinstance(expr, Clip):
            value = self._eval(expr.operand, defs)
            return np.clip(value, expr.lower, expr.upper)
        raise SchemaError(f"Unsupported expression {type(expr).__name__}.")

    def _prepare(self, plan: Plan) -> tuple[dict[str, Expr], Any]:
        """Definitions of derived columns and the combined row mask (or None)."""
        _, steps = lineage(plan)
        defs: dict[str, Expr] = {}
        mask: Any = None
        for step in steps:
            if isinstance(step, Assign):
                defs[step.name] = inline(step.expr, defs)
            elif isinstance(step, Filter):
                keep = _as_mask(self._eval(inline(step.predicate, defs), defs))
                keep_np = _full_mask(keep, len(self._frame))
                mask = keep_np if mask is None else (mask & keep_np)
        return defs, mask

    def _values(self, expr: Expr, defs: dict[str, Expr]) -> Any:
        value = self._eval(expr, defs)
        if isinstance(value, pd.Series):
            if pd.api.types.is_bool_dtype(value.dtype) and value.hasnans:
                return value.astype("float64").to_numpy()
            return value.to_numpy(dtype=np.float64, na_value=np.nan)
        return np.full(len(self._frame), float(value))

    def _group_slots(
        self, by: tuple[GroupKey, ...], defs: dict[str, Expr]
    ) -> npt.NDArray[np.intp] | None:
        """Cell slot per row: 1 + the cell's index, or 0 for rows in no cell."""
        slots: npt.NDArray[np.intp] | None = None
        for key in by:
            key_slots = self._key_slots(key, defs)
            if slots is None:
                slots = key_slots  # read-only from here on: never modified in place
            else:
                invalid = (slots == 0) | (key_slots == 0)
                slots = (slots - 1) * len(key.categories) + key_slots
                slots[invalid] = 0
        return slots

    def _key_slots(self, key: GroupKey, defs: dict[str, Expr]) -> npt.NDArray[np.intp]:
        if isinstance(key.expr, Bucket):
            inner = self._eval(inline(key.expr.operand, defs), defs)
            return _bucket_codes(_as_float(inner, len(self._frame)), key.expr) + 1
        is_source = isinstance(key.expr, Col) and key.expr.name not in defs
        cache_key = (key.expr.name, key.categories) if isinstance(key.expr, Col) else None
        if is_source and cache_key is not None and cache_key in self._codes:
            return self._codes[cache_key]
        values = self._eval(key.expr, defs)
        if not isinstance(values, pd.Series):
            values = pd.Series(np.full(len(self._frame), values, dtype=object))
        slots = _category_codes(values, key.categories) + 1
        if is_source and cache_key is not None:
            slots.flags.writeable = False
            self._codes[cache_key] = slots
        return slots

    def key_counts(
        self,
        plan: Plan,
        expr: Expr,
        unit: str = "",
        max_keys: int = 0,
        rng: SecureRandom | None = None,
    ) -> tuple[list[Hashable], npt.NDArray[np.int64]]:
        """Exact row count per distinct non-missing value of ``expr`` (for key discovery only).

        With ``unit`` and ``max_keys``, each unit keeps its rows of at most
        ``max_keys`` distinct keys (a uniformly random choice from ``rng``).
        The keys never leave the session unless partition selection releases them.
        """
        defs, mask = self._prepare(plan)
        values = self._eval(inline(expr, defs), defs)
        if not isinstance(values, pd.Series):
            values = pd.Series(np.full(len(self._frame), values, dtype=object))
        row_codes, uniques = pd.factorize(values, use_na_sentinel=True)
        keep = row_codes >= 0 if mask is None else (row_codes >= 0) & mask
        if unit and max_keys:
            assert rng is not None
            keep &= _limit_keys_per_unit(self._frame[unit], row_codes, max_keys, rng)
        counts = np.bincount(row_codes[keep], minlength=len(uniques)).astype(np.int64)
        present = np.flatnonzero(counts > 0)  # keys whose rows were all filtered out are absent
        return [uniques[i] for i in present], counts[present]

    # -- measures ------------------------------------------------------------

    def compute(
        self, plan: Plan, measures: tuple[Measure, ...], by: tuple[GroupKey, ...]
    ) -> list[npt.NDArray[np.float64]]:
        """Exact per-group values of ``measures`` (see :class:`Measure`)."""
        n = len(self._frame)
        if n > MAX_ROWS:
            raise DPError(f"dpframe aggregates at most {MAX_ROWS} rows per release.")
        defs, mask = self._prepare(plan)
        slots = self._group_slots(by, defs)
        size = 1
        for key in by:
            size *= len(key.categories)
        if slots is not None and mask is not None:
            slots = np.where(mask, slots, 0)
        cells: Cells = slots
        if slots is None and mask is not None:
            cells = mask  # no group-by: one cell, the rows the filters keep (no slot array)
        # One release's measures share their work: a column read (and its
        # missing-value mask) and its clamped, centred values are computed once
        # per call (a mean's count and sum; a variance's three measures).  The
        # cache lives only for this call, so nothing outlives the release.
        sums = [m for m in measures if m.kind == "sum" and m.expr is not None]
        summed = {m.expr.key() for m in sums if m.expr is not None}
        clamps = [_clamp_key(m) for m in sums]
        reused = {k for k in clamps if clamps.count(k) > 1}
        shared = _SharedWork({}, {}, summed, reused)
        return [self._measure(m, defs, cells, size, n, shared) for m in measures]

    def _measure(
        self,
        measure: Measure,
        defs: dict[str, Expr],
        slots: Cells,
        size: int,
        n: int,
        shared: _SharedWork,
    ) -> npt.NDArray[np.float64]:
        if measure.kind == "rows":
            if slots is None:
                return np.array([float(n)])
            return _bincount(slots, None, size)
        assert measure.expr is not None
        if measure.kind == "nonnull":
            if measure.expr.key() in shared.summed:  # numeric: the same mask as its sum's
                present = self._shared_values(measure.expr, defs, shared)[1]
            else:
                present = self._present(measure.expr, defs)
            return _bincount(slots, present.astype(np.float64), size)
        values, present = self._shared_values(measure.expr, defs, shared)
        clamp_key = _clamp_key(measure)
        centred = shared.centred.get(clamp_key)
        if centred is None:
            centred = np.clip(values, measure.lower, measure.upper)
            if measure.center != 0.0:
                centred -= measure.center
            if clamp_key not in shared.reused:  # its only user may work in place
                if measure.power == 2:
                    np.multiply(centred, centred, out=centred)
                centred *= 1.0 / measure.quantum
                np.rint(centred, out=centred)
                if not present.all():
                    centred[~present] = 0.0
                return _bincount(slots, centred, size)
            shared.centred[clamp_key] = centred
        terms = centred * centred if measure.power == 2 else centred.copy()
        terms *= 1.0 / measure.quantum
        np.rint(terms, out=terms)
        if not present.all():
            terms[~present] = 0.0
        return _bincount(slots, terms, size)

    def _shared_values(
        self, expr: Expr, defs: dict[str, Expr], shared: _SharedWork
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
        found = shared.values.get(expr.key())
        if found is None:
            values = np.asarray(self._values(expr, defs), dtype=np.float64)
            found = (values, ~np.isnan(values))
            shared.values[expr.key()] = found
        return found

    def _present(self, expr: Expr, defs: dict[str, Expr]) -> npt.NDArray[np.bool_]:
        """True where ``expr`` has a value (any dtype: text, dates, numbers)."""
        value = self._eval(expr, defs)
        if isinstance(value, pd.Series):
            return np.asarray(value.notna().to_numpy(dtype=bool))
        return np.full(len(self._frame), not pd.isna(value))


@dataclass
class _SharedWork:
    """Work shared by the measures of one release (see :meth:`PandasBackend.compute`)."""

    values: dict[Any, tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]]
    centred: dict[Any, npt.NDArray[np.float64]]
    summed: set[Any]
    reused: set[Any]


def _clamp_key(measure: Measure) -> tuple[Any, ...]:
    assert measure.expr is not None
    return (measure.expr.key(), measure.lower, measure.upper, measure.center)


def _hash_rows(chunk: pd.DataFrame) -> npt.NDArray[np.uint64]:
    """Row hashes of ``chunk``; unhashable cells (lists, dicts) are a :class:`SchemaError`."""
    try:
        return np.asarray(pd.util.hash_pandas_object(chunk, index=False).to_numpy())
    except TypeError:
        for name in chunk.columns:  # name the column (public), never the value
            try:
                pd.util.hash_pandas_object(chunk[name], index=False)
            except TypeError:
                raise SchemaError(
                    f"Column {name!r} holds values that cannot be hashed (lists, dicts, "
                    "sets, ...); convert them to strings or numbers, or drop the column, "
                    "before loading."
                ) from None
        raise


def _limit_keys_per_unit(
    units: pd.Series, keys: npt.NDArray[np.intp], max_keys: int, rng: SecureRandom
) -> npt.NDArray[np.bool_]:
    """Rows to keep so that every unit keeps the rows of at most ``max_keys`` distinct keys."""
    unit_codes = np.asarray(pd.factorize(units, use_na_sentinel=True)[0], dtype=np.int64)
    missing = unit_codes < 0
    unit_codes[missing] = unit_codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))
    pairs = pd.DataFrame({"unit": unit_codes, "key": keys})
    distinct = pairs.drop_duplicates().to_numpy()
    order = np.lexsort((rng.uniform_below(2**62, len(distinct)), distinct[:, 0]))
    ordered = distinct[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:, 0] != ordered[:-1, 0]])
    rank = np.arange(len(ordered)) - np.repeat(starts, np.diff(np.r_[starts, len(ordered)]))
    chosen = pd.MultiIndex.from_arrays([ordered[rank < max_keys, 0], ordered[rank < max_keys, 1]])
    return np.asarray(pd.MultiIndex.from_arrays([unit_codes, keys]).isin(chosen), dtype=bool)


def bound_contributions(
    frame: pd.DataFrame, unit: str, max_rows: int, rng: SecureRandom
) -> pd.DataFrame:
    """Keep at most ``max_rows`` rows per value of ``unit``, a uniformly random subset.

    Each row gets an independent 62-bit key from the secure source; within a
    unit the rows with the smallest keys are kept.  Rows with a missing unit
    id are units of their own.  Returns a new (smaller) DataFrame.
    """
    codes, _ = pd.factorize(frame[unit], use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    missing = codes < 0
    codes[missing] = codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))
    n = len(codes)
    keys = rng.uniform_below(2**62, n)
    order = np.lexsort((keys, codes))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    rank = np.arange(n) - group_start
    keep = np.sort(order[rank < max_rows])
    bounded: pd.DataFrame = frame.iloc[keep]
    return bounded


def _category_codes(values: pd.Series, categories: tuple[Hashable, ...]) -> npt.NDArray[np.intp]:
    """Position of each value among ``categories`` (-1: missing or not declared).

    Factorizes the column once (fast for strings) and maps only the distinct
    values to the declared keys.
    """
    row_codes, uniques = pd.factorize(values, use_na_sentinel=True)
    declared = pd.Index(list(categories), dtype=object)
    mapping = np.asarray(declared.get_indexer(pd.Index(uniques).astype(object)), dtype=np.intp)
    mapping = np.append(mapping, -1)  # row code -1 (missing) maps to the last slot
    return np.asarray(mapping[row_codes], dtype=np.intp)


def _as_float(value: Any, n: int) -> npt.NDArray[np.float64]:
    if isinstance(value, pd.Series):
        return np.asarray(value.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.full(n, float(value))


def _bucket_codes(values: npt.NDArray[np.float64], bucket: Bucket) -> npt.NDArray[np.intp]:
    """Bin index per value (-1: missing, or outside the edges without ``clamp``)."""
    edges = np.asarray(bucket.edges, dtype=np.float64)
    last = len(edges) - 2
    codes = _edges_at_or_below(values, edges) - 1
    codes[values == edges[-1]] = last
    if bucket.clamp:
        np.clip(codes, 0, last, out=codes)
    else:
        codes[(values < edges[0]) | (values > edges[-1])] = -1
    codes[np.isnan(values)] = -1
    return codes


def _edges_at_or_below(
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


def _bincount(
    slots: Cells, weights: npt.NDArray[np.float64] | None, size: int
) -> npt.NDArray[np.float64]:
    """Per-cell totals; slot 0 (rows in no cell) is dropped.

    ``slots`` may also be a boolean row mask (a single cell: the rows kept by
    the filters), or None (a single cell: every row).  The weights are
    integer-valued (grid units), so every summation order gives the same total.
    """
    if slots is None:
        assert weights is not None
        return np.array([float(weights.sum()) + 0.0])  # + 0.0: never -0.0, as below
    if slots.dtype == np.bool_:
        mask = np.asarray(slots, dtype=np.bool_)
        if weights is None:
            return np.array([float(np.count_nonzero(mask))])
        return np.array([float(np.sum(weights, where=mask))])
    counts = np.bincount(slots, weights=weights, minlength=size + 1)
    return np.asarray(counts[1:], dtype=np.float64)


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


def _as_mask(value: Any) -> Any:
    if isinstance(value, pd.Series):
        if value.dtype == bool:
            return value
        return value.fillna(False).astype(bool)
    return bool(value) if value is not pd.NA else False


def _full_mask(value: Any, n: int) -> npt.NDArray[np.bool_]:
    if isinstance(value, pd.Series):
        return value.to_numpy(dtype=bool)
    return np.full(n, bool(value))
