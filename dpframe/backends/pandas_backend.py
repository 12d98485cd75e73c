"""The embedded pandas backend.

Evaluates plans on a DataFrame it holds by reference (no copy at load), in
row chunks of :data:`~dpframe.backends.chunks.CHUNK_ROWS` rows (2**20): each
chunk is a view of the frame, its filters, derived columns, group slots and
measures are evaluated on it, and the per-cell totals of the chunks are
added (exactly: see :mod:`dpframe.backends.chunks`).  The plan is compiled
once per release to a DAG (:mod:`dpframe.backends.program`): every derived
column and every shared sub-expression is evaluated once per chunk and
reused wherever it is read.  Temporaries are thus
chunk-sized (about 8 MiB for a float64 column) whatever the frame's size; a
frame of at most one chunk is evaluated in one piece, as a whole.

One cache: the slot codes (1 + the position among the declared categories,
0 for missing values, k + 1 for present values outside the k declared
categories) of a *source* column used as a group key, per declared category
list.  They are a deterministic function of data
the backend already holds, never returned to the caller, so repeated
group-bys over a string column do not re-hash it.  The codes are stored in
the smallest unsigned integer dtype that holds them (uint8 up to 254
categories, uint16 up to 65,534: 1 or 2 bytes per row) and converted to
``intp`` one chunk at a time; a frame of one chunk keeps ``intp`` codes (see
:func:`~dpframe.backends.chunks.code_dtype`).  Nothing that depends on a
filter or a release is cached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.base import MAX_ROWS
from dpframe.backends.chunks import (
    CHUNK_ROWS,
    Cells,
    MeasurePlan,
    add_totals,
    chunk_bounds,
    code_dtype,
    combine_slots,
    measure_totals,
    outside_bins,
    slot_codes,
    undeclared_rows,
)
from dpframe.backends.evaluate import (
    Rows,
    as_float,
    bucket_codes,
    category_codes,
    float_values,
)
from dpframe.backends.program import KeySpec, Program, Query, Run, compile_query
from dpframe.backends.reduce import RowReducer, add_partials
from dpframe.errors import DPError, SchemaError
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Expr
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey, Plan

__all__ = ["PandasBackend", "source_slot_codes"]

#: Compiled queries kept per backend (a repeated release skips compilation; public inputs only).
_QUERIES_KEPT = 256

#: Rows per hashed block of the fingerprint (part of the digest: never change it).
_HASH_ROWS = 1 << 16


#: Cached slot codes of a source key column (dtype from :func:`code_dtype`).
_Codes = npt.NDArray[np.integer[Any]]


class PandasBackend:
    """Evaluate plans on an in-memory pandas DataFrame.

    Args:
        frame: the private data; held by reference, never copied or returned.
        chunk_rows: rows per evaluation chunk (tests pass small values to
            check that chunked and whole-frame evaluation agree bit for bit).
        codes: slot codes already computed for this frame (see
            :func:`source_slot_codes`), by (source column, declared
            categories): the Dask backend keeps them on the workers across
            releases and hands each partition's to its backend.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        *,
        chunk_rows: int = CHUNK_ROWS,
        codes: dict[tuple[str, tuple[Hashable, ...]], _Codes] | None = None,
    ) -> None:
        if chunk_rows < 1:
            raise ValueError("chunk_rows must be at least 1.")
        self._frame = frame
        self._chunk_rows = chunk_rows
        self._codes: dict[tuple[str, tuple[Hashable, ...]], _Codes] = dict(codes or {})
        self._queries: dict[tuple[Any, ...], Query] = {}  # compiled queries, by value
        self._fingerprint: str | None = None

    def __repr__(self) -> str:
        return "PandasBackend(<private data>)"

    @property
    def rows(self) -> pd.DataFrame:
        """The private rows themselves: only for a curator's worker processes to compute on."""
        return self._frame

    def __reduce__(self) -> Any:
        raise DPError("A backend holding private data cannot be pickled.")

    def fingerprint(self) -> str:
        """BLAKE2b over column names, dtypes and row hashes, in 2**16-row chunks."""
        if self._fingerprint is None:
            digest = hashlib.blake2b(digest_size=20)
            for name, dtype in self._frame.dtypes.items():
                digest.update(f"{name}\x00{dtype}\x00".encode())
            for start in range(0, len(self._frame), _HASH_ROWS):
                chunk = self._frame.iloc[start : start + _HASH_ROWS]
                digest.update(_hash_rows(chunk).tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def schema_frame(self) -> pd.DataFrame:
        """An empty frame with the data's columns and dtypes (no rows)."""
        empty: pd.DataFrame = self._frame.iloc[:0]
        return empty

    def bound_contributions(self, unit: str, max_rows: int, rng: SecureRandom) -> PandasBackend:
        """A backend over a bounded copy: at most ``max_rows`` rows per unit (see below)."""
        bounded = bound_contributions(self._frame, unit, max_rows, rng)
        return PandasBackend(bounded, chunk_rows=self._chunk_rows)

    def preflight(self) -> None:
        """Nothing to check: the rows are in this process."""

    # -- whole-frame row access (row-level mechanisms) --------------------------------

    @property
    def holds_rows(self) -> bool:
        """The rows are in this process: row-level mechanisms may read them."""
        return True

    def numeric_rows(self, plan: Plan, exprs: Sequence[Expr]) -> list[npt.NDArray[np.float64]]:
        """The float values (NaN for missing) of ``exprs`` on the rows the plan keeps.

        The plan's derived columns are evaluated once for all of ``exprs``.
        """
        return self.program_floats(Program.compile(plan, exprs))

    def category_codes(
        self, plan: Plan, expr: Expr, categories: Sequence[Hashable]
    ) -> npt.NDArray[np.int64]:
        """Each kept row's position among ``categories`` (−1: missing or not declared)."""
        (values,), mask = self.row_values(plan, [expr])
        if not isinstance(values, pd.Series):
            values = pd.Series(np.full(len(self._frame), values, dtype=object))
        codes = np.asarray(category_codes(values, tuple(categories)), dtype=np.int64)
        return codes if mask is None else codes[mask]

    def row_values(
        self, plan: Plan, exprs: Sequence[Expr]
    ) -> tuple[list[Any], npt.NDArray[np.bool_] | None]:
        """Values of ``exprs`` on every row (Series or scalars) and the plan's row mask (or None).

        The whole frame is evaluated at once; derived columns shared by the
        expressions and the filters are computed once.
        """
        program = Program.compile(plan, exprs)
        run = Run(program, Rows(self._frame))
        mask = run.mask()
        return [run.value(node) for node in program.outputs], mask

    def program_floats(self, program: Program) -> list[npt.NDArray[np.float64]]:
        """The float values (NaN for missing) of a program's outputs on the rows it keeps."""
        run = Run(program, Rows(self._frame))
        mask = run.mask()
        n = len(self._frame)
        out = []
        for node in program.outputs:
            floats = np.asarray(float_values(run.value(node), n), dtype=np.float64)
            out.append(floats if mask is None else floats[mask])
        return out

    def row_reduce(self, plan: Plan, exprs: Sequence[Expr], reducer: RowReducer) -> tuple[Any, ...]:
        """``reducer``'s sum over the rows the plan keeps (see :mod:`dpframe.backends.reduce`).

        A frame of more than one chunk is reduced chunk by chunk (a reducer's
        partial sums add, as over Dask partitions), so the temporaries stay
        chunk-sized; a frame of one chunk is reduced whole.
        """
        program = Program.compile(plan, exprs)
        n = len(self._frame)
        if n <= self._chunk_rows:
            return reducer.partial(self.program_floats(program))
        total: tuple[Any, ...] | None = None
        columns: dict[str, Any] = {}
        for start, stop in chunk_bounds(n, self._chunk_rows):
            run = Run(program, Rows(self._frame, start, stop, columns))
            mask = run.mask()
            floats = []
            for node in program.outputs:
                values = np.asarray(float_values(run.value(node), stop - start), dtype=np.float64)
                floats.append(values if mask is None else values[mask])
            part = reducer.partial(floats)
            total = part if total is None else add_partials(total, part)
        assert total is not None  # chunk_bounds gives at least one range
        return total

    # -- key discovery -------------------------------------------------------

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
        Evaluated on the whole frame at once (not in chunks).
        """
        return self.count_keys(Program.compile(plan, [expr]), unit, max_keys, rng)

    def count_keys(
        self,
        program: Program,
        unit: str = "",
        max_keys: int = 0,
        rng: SecureRandom | None = None,
    ) -> tuple[list[Hashable], npt.NDArray[np.int64]]:
        """:meth:`key_counts` of a compiled program (its only output is the key expression)."""
        run = Run(program, Rows(self._frame))
        mask = run.mask()
        values = run.value(program.outputs[0])
        if not isinstance(values, pd.Series):
            values = pd.Series(np.full(len(self._frame), values, dtype=object))
        row_codes, uniques = pd.factorize(values, use_na_sentinel=True)
        keep = row_codes >= 0 if mask is None else (row_codes >= 0) & mask
        if unit and max_keys:
            assert rng is not None
            keep &= _limit_keys_per_unit(self._frame[unit], row_codes, max_keys, rng)
        counts = np.bincount(row_codes[keep], minlength=len(uniques)).astype(np.int64)
        present = np.flatnonzero(counts > 0)  # keys whose rows were all filtered out are absent
        if uniques.dtype == object or pd.api.types.is_string_dtype(uniques.dtype):
            # text keys in one call: one by one, an Arrow-backed index took 15 µs a key
            keys: list[Hashable] = uniques.take(present).tolist()
            return keys, counts[present]
        return [uniques[i] for i in present], counts[present]

    # -- measures ------------------------------------------------------------

    def compute(
        self,
        plan: Plan,
        measures: tuple[Measure, ...],
        by: tuple[GroupKey, ...],
        undeclared: bool = False,
    ) -> list[npt.NDArray[np.float64]]:
        """Exact per-group values of ``measures`` (see :class:`Measure`).

        The plan is compiled once (:func:`~dpframe.backends.program.compile_query`)
        and evaluated chunk by chunk (filters, derived columns, group slots,
        measures; each distinct computation once per chunk) and the per-chunk
        totals are added: bit-identical to one pass over all rows (see
        :mod:`dpframe.backends.chunks`), with chunk-sized temporaries.  With
        ``undeclared`` (and keys), one more one-cell total follows: the kept
        rows whose key is present but not declared (every key present, one
        or more outside its declared categories or bins).
        """
        key = (
            plan.key(),
            tuple(_measure_key(m) for m in measures),
            tuple(k.key() for k in by),
            undeclared,
        )
        query = self._queries.get(key)
        if query is None:
            query = compile_query(plan, measures, by, undeclared)
            if len(self._queries) >= _QUERIES_KEPT:
                self._queries.clear()
            self._queries[key] = query
        return self.run_query(query)

    def run_query(self, query: Query) -> list[npt.NDArray[np.float64]]:
        """:meth:`compute` of a compiled query."""
        n = len(self._frame)
        if n > MAX_ROWS:  # also what keeps every partial total exact (chunks module)
            raise DPError(f"dpframe aggregates at most {MAX_ROWS} rows per release.")
        program, measures = query.program, query.measures
        if not program.filters and not query.keys and all(m.kind == "rows" for m in measures):
            return [np.array([float(n)]) for _ in measures]  # a plain row count reads no rows
        size = query.cells
        cached = [self._cached_slots(key) for key in query.keys]
        shared = MeasurePlan.of(measures, query.nodes)
        totals: list[npt.NDArray[np.float64]] | None = None
        columns: dict[str, Any] = {}  # the frame's column Series, shared by the chunks
        # Every chunk adds a total per cell: with many cells (a grouped quantile's
        # histogram) chunks grow with them, up to 4x, so adding totals never
        # outweighs reading rows (temporaries stay no larger than the totals).
        rows = max(self._chunk_rows, min(size, 4 * self._chunk_rows))
        for start, stop in chunk_bounds(n, rows):
            run = Run(program, Rows(self._frame, start, stop, columns))
            mask = run.mask()
            slots = _chunk_slots(run, query.keys, cached, start, stop)
            cells: Cells = slots
            if slots is None:
                cells = mask  # no group-by: one cell, the rows the filters keep (no slot array)
            elif mask is not None:
                cells = np.where(mask, slots, 0)
            partial = measure_totals(run, shared, cells, size)
            if query.undeclared:
                partial.append(undeclared_rows(cells, size))
            totals = add_totals(totals, partial)
        assert totals is not None  # chunk_bounds gives at least one range
        return totals

    def _cached_slots(self, key: KeySpec) -> _Codes | None:
        """The cached slot codes of a source key column (built on first use); None otherwise."""
        if not key.source:
            return None  # an expression or a bucket: evaluated per chunk
        cache_key = (key.source, key.categories)
        codes = self._codes.get(cache_key)
        if codes is None:
            column = self._frame[key.source]
            n = len(column)
            bounds = chunk_bounds(n, self._chunk_rows)
            dtype = code_dtype(len(key.categories) + 1, n, self._chunk_rows)
            if len(bounds) == 1:
                codes = slot_codes(column, key.categories).astype(dtype, copy=False)
            else:
                codes = np.empty(n, dtype=dtype)
                for start, stop in bounds:
                    chunk = column.iloc[start:stop]
                    codes[start:stop] = slot_codes(chunk, key.categories)
            codes.flags.writeable = False
            self._codes[cache_key] = codes
        return codes


def source_slot_codes(
    column: pd.Series, categories: tuple[Hashable, ...], chunk_rows: int = CHUNK_ROWS
) -> _Codes:
    """The slot codes of a source key column, in the smallest unsigned dtype that holds them.

    The same codes as :class:`PandasBackend` caches (1 + the position among
    ``categories``, 0 missing, k + 1 present but undeclared), computed
    ``chunk_rows`` at a time; read-only.
    """
    n = len(column)
    dtype = code_dtype(len(categories) + 1, n, 0)  # chunk_rows 0: always the smallest dtype
    codes = np.empty(n, dtype=dtype)
    for start, stop in chunk_bounds(n, chunk_rows):
        codes[start:stop] = slot_codes(column.iloc[start:stop], categories)
    codes.flags.writeable = False
    return codes


def _chunk_slots(
    run: Run,
    keys: tuple[KeySpec, ...],
    cached: list[_Codes | None],
    start: int,
    stop: int,
) -> npt.NDArray[np.intp] | None:
    """Cell slot of each row of the chunk ``[start, stop)``.

    1 + the cell's index; 0 for no cell (a missing key); ``cells + 1`` when
    every key is present and some key is not declared (the undeclared slot,
    dropped from the cells' totals; see :func:`~dpframe.backends.chunks.bincount`).
    """
    slots: npt.NDArray[np.intp] | None = None
    cells = 1
    n = len(run.rows)
    for key, codes in zip(keys, cached, strict=True):
        key_slots: npt.NDArray[np.intp]
        size = len(key.categories)
        if codes is not None:  # a view when the cache already holds intp codes
            key_slots = codes[start:stop].astype(np.intp, copy=False)
        elif key.bucket is not None:
            inner = as_float(run.value(key.node), n)
            key_slots = outside_bins(bucket_codes(inner, *key.bucket) + 1, inner, size)
        else:
            values = run.value(key.node)
            if not isinstance(values, pd.Series):
                values = pd.Series(np.full(n, values, dtype=object))
            key_slots = slot_codes(values, key.categories)
        run.release(key.node)
        slots = combine_slots(slots, key_slots, size, cells)
        cells *= size
    return slots


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
    id are units of their own.  Returns a new (smaller) DataFrame, or
    ``frame`` itself when no unit is over the limit.
    """
    positions = kept_positions(frame[unit], max_rows, rng)
    if len(positions) == len(frame):
        return frame  # every unit within the limit: nothing to copy
    bounded: pd.DataFrame = frame.iloc[positions]
    return bounded


def _unit_codes(units: pd.Series) -> npt.NDArray[np.int64]:
    """A code per row, equal for the rows of one unit (−1: a missing unit).

    Integer IDs in a range of at most a quarter of the rows (plus 1,024) are
    their own codes (the value minus the smallest; no hash table, and no copy
    for int64 IDs from 0): the IDs of a people table and their visits.  Any
    other column is factorized.  Only which rows share a code matters (the
    codes' order never reaches the draw: the random keys follow row order).
    """
    numpy_ints = isinstance(units.dtype, np.dtype) and units.dtype.kind in "iu"
    values = units.to_numpy() if numpy_ints else None
    if values is not None and len(values) > 0:
        low, high = int(values.min()), int(values.max())
        if high - low <= len(values) // 4 + 1024:
            if low == 0 and values.dtype == np.int64:
                return values
            shifted: npt.NDArray[np.int64] = (values - values.dtype.type(low)).astype(np.int64)
            return shifted
    codes, _ = pd.factorize(units, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64)


def kept_positions(units: pd.Series, max_rows: int, rng: SecureRandom) -> npt.NDArray[np.intp]:
    """The positions (ascending) of at most ``max_rows`` rows per unit, a uniform random subset.

    See :func:`bound_contributions`; rows with a missing unit are units of
    their own.  A unit with at most ``max_rows`` rows keeps them all (its only
    subset of that size), so random keys are drawn and sorted only for the
    rows of units over the limit.
    """
    codes = _unit_codes(units)
    present = codes >= 0  # a missing unit is one row: never over a limit >= 1
    if present.all():  # no copy of the codes (a whole copy of the keys at 10^7 rows)
        sizes = np.bincount(codes)
        if len(sizes) == 0 or int(sizes.max()) <= max_rows:
            return np.arange(len(codes), dtype=np.intp)  # no unit over: no per-row lookup
        over = (sizes > max_rows)[codes]
        del sizes
    else:
        over = np.zeros(len(codes), dtype=bool)
        found = codes[present]
        over[present] = (np.bincount(found) > max_rows)[found]
        del found
    if not over.any():
        return np.arange(len(codes), dtype=np.intp)
    rows = np.flatnonzero(over)
    crowded = codes[rows]
    n = len(rows)
    keys = rng.uniform_below(2**62, n)
    order = np.lexsort((keys, crowded))
    sorted_codes = crowded[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    rank = np.arange(n) - group_start
    keep = ~over
    keep[rows[order[rank < max_rows]]] = True
    return np.flatnonzero(keep).astype(np.intp, copy=False)


def _measure_key(measure: Measure) -> tuple[Any, ...]:
    """A measure's exact identity (floats by their hex form, the expression by its key)."""
    expr = None if measure.expr is None else measure.expr.key()
    floats = (measure.lower, measure.upper, measure.center, measure.quantum)
    return (measure.kind, expr, measure.power, *(float(x).hex() for x in floats))
