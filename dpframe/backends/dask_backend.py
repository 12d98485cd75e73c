"""The Dask backend: the same plans on partitioned data, evaluated where the data lives.

Every partition is evaluated by the pandas backend's own code (one
:class:`~dpframe.backends.pandas_backend.PandasBackend` per partition, built
on the worker), and the per-partition results are added up in a tree on the
workers.  Only the final per-group arrays (and, for private key discovery,
the per-key counts) come back to the client process.

Exactness: each partition's totals are the pandas backend's (integer-valued
float64, exact), turned into int64 on the worker and added as integers
(:mod:`~dpframe.backends.exact_totals`): no rounding in any order, and no
ceiling on the number of rows.  Totals of magnitude at most 2**53 come back
as float64, bit-identical to the pandas backend's on the same rows however
the data is partitioned (``tests/dask/test_equivalence.py`` checks this);
larger ones (more than 2**31 rows) as exact int64.

This module imports dask; it is imported only when a dask DataFrame is
loaded (``import dpframe`` never imports it).
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import numpy.typing as npt
import pandas as pd
from dask.base import tokenize
from dask.delayed import Delayed, delayed
from dask.tokenize import TokenizationError as TokenizationError

from dpframe.backends.cluster import (
    NO_CLIENT_WARNING,
    check_partition_memory,
    check_workers,
    run_bounded,
    worker_memory_limits,
)
from dpframe.backends.dask_load_pass import (
    merge_load_partials,
    sketch_and_count,
    sketch_and_over,
    units_over,
    worker_sketch,
)
from dpframe.backends.dask_unit_sizes import combine_counts, partition_counts
from dpframe.backends.data_sketch import (
    FrameSketch,
    PartialSketch,
    SketchKey,
    finish_sketch,
    merge_partials,
)
from dpframe.backends.exact_totals import Exact, add_exact, exact_partial, final_totals
from dpframe.backends.pandas_backend import (
    PandasBackend,
    bound_contributions,
    source_slot_codes,
)
from dpframe.backends.parquet_sizes import largest_partition_bytes
from dpframe.backends.program import Program, Query, compile_query
from dpframe.backends.reduce import RowReducer, add_partials
from dpframe.errors import DPError, SchemaError, caller_stacklevel
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Expr
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey, Plan

__all__ = ["KEY_CODES_OPTION", "DaskBackend", "read_dask"]

#: How many partial results one reduction task adds up.
_FAN_IN = 8
#: The dask option holding how many (key column, categories) slot-code lists a
#: backend keeps on the workers (default 16; 0 keeps none: every release hashes its keys).
KEY_CODES_OPTION = "dpframe.key-code-lists"
_CODES_KEPT = 16
#: The dask configuration key that turns on a progress bar for each query.
PROGRESS_OPTION = "dpframe.progress"
#: The dtype pandas itself gives text (``str`` in pandas 3, ``object`` before).
_PANDAS_TEXT = pd.Series(["text"]).dtype

_NO_ROWS = "Row-level mechanisms need the rows in memory; a Dask backend keeps them on the cluster."


@dataclass(frozen=True)
class KeyCounts:
    """Per-key row counts from some partitions.

    A class of its own so that distributed pickles it whole: inside a plain
    dict, a ``numpy.float64`` key would reach the client as a Python float.
    """

    counts: dict[Hashable, int]


class DaskBackend:
    """Evaluate plans on a dask DataFrame, partition by partition, on the workers.

    The computation runs on whatever scheduler dask is configured with: a
    ``distributed.Client`` if one is active (a ``LocalCluster`` or a real
    cluster), else dask's local threads.  Set the dask option
    ``dpframe.progress`` (``dask.config.set({"dpframe.progress": True})``)
    to show a progress bar for each query on a distributed client.

    Args:
        frame: the private data, a dask DataFrame; held by reference, never
            collected to the client.
        unit: the column the partitions are grouped by (every unit's rows in
            one partition), or empty; set on contribution-bounded views.
        fingerprint: the dataset's identity, when already known.
    """

    def __init__(self, frame: dd.DataFrame, *, unit: str = "", fingerprint: str = "") -> None:
        if len(frame.columns) == 0:
            raise SchemaError("The DataFrame has no columns; there is nothing to protect or query.")
        self._frame = frame
        self._unit = unit
        self._fingerprint = fingerprint
        self._checked: frozenset[str] = frozenset()  # workers that passed the version check
        self._warned = False  # the no-Client warning, once per backend
        # Persisted slot codes per (key column, categories): see _key_codes.
        self._codes: dict[tuple[str, tuple[Hashable, ...]], list[Delayed]] = {}
        # Whether some unit has more rows than a bound, counted with the sketch (data_sketch).
        self._over: dict[tuple[str, int], bool] = {}

    @property
    def lazy_rows(self) -> dd.DataFrame:
        """The dask DataFrame itself (lazy, on the cluster): for a private join's plan only."""
        return self._frame

    def preflight(self) -> None:
        """Before the charge: the cluster can run dpframe's tasks (see :mod:`.cluster`).

        With a ``distributed.Client``, every worker must run dpframe, pandas and
        numpy at this process's versions (checked once per set of workers,
        within a bounded wait); without one, a warning that the rows stream
        through this process (once).

        Raises:
            ClusterNotReadyError: the check failed; nothing is charged.
        """
        client = _client()
        if client is None:
            if not self._warned:
                self._warned = True
                warnings.warn(NO_CLIENT_WARNING, UserWarning, stacklevel=caller_stacklevel())
            return
        info: Any = client.scheduler_info()
        workers = frozenset(info.get("workers", {}))
        if workers and workers <= self._checked:
            return
        self._checked = check_workers(client)

    def __repr__(self) -> str:
        return f"DaskBackend(<private data>, {self._frame.npartitions} partitions)"

    def __reduce__(self) -> Any:
        raise DPError("A backend holding private data cannot be pickled.")

    def schema_frame(self) -> pd.DataFrame:
        """An empty frame with the columns and dtypes as evaluated (dask's metadata; no rows)."""
        empty: pd.DataFrame = pd.DataFrame(
            {name: pd.Series(dtype=dtype) for name, dtype in self._frame.dtypes.items()}
        )
        return _as_pandas_dtypes(empty)

    def fingerprint(self) -> str:
        """The dataset's identity, without reading the data when dask can name it.

        BLAKE2b over the column names and dtypes and dask's deterministic
        token of the frame (``dask.base.tokenize`` with
        ``tokenize.ensure-deterministic``).  For files (``read_parquet``,
        ``read_csv``) the token covers the paths, the reader's arguments and
        each file's metadata (fsspec's checksum: size and modification time),
        so it reads no data: the same files, unchanged, give the same
        fingerprint in any process.  A file rewritten in place with the same
        size and modification time would keep its fingerprint.  For a frame
        made from pandas data the token hashes the data itself.  When dask
        cannot name the graph deterministically, the fingerprint is a content
        hash computed on the workers in one pass (one 20-byte digest per
        partition comes back).  The pandas and dask backends give different
        fingerprints for the same rows.
        """
        if not self._fingerprint:
            digest = hashlib.blake2b(digest_size=20)
            digest.update(b"dask\x00")
            for name, dtype in self._frame.dtypes.items():
                digest.update(f"{name}\x00{dtype}\x00".encode())
            try:
                with dask.config.set({"tokenize.ensure-deterministic": True}):
                    digest.update(b"token\x00" + tokenize(self._frame).encode())
            except TokenizationError:
                digest.update(b"content\x00" + self._content_digest())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def _content_digest(self) -> bytes:
        parts = [delayed(_partition_digest, pure=False)(p) for p in _to_delayed(self._frame)]
        digests: list[bytes] = _compute(delayed(list, pure=False)(parts), charged=False)
        return hashlib.blake2b(b"".join(digests), digest_size=20).digest()

    def data_sketch(self, key: SketchKey, units: tuple[str, int] | None = None) -> FrameSketch:
        """The keyed sketch of the rows (:mod:`~dpframe.backends.data_sketch`), on the workers.

        One pass: each partition is sketched where it is (its row hashes and
        one sum per column, in blocks), the partial sketches (at most
        :data:`~dpframe.backends.data_sketch.SKETCH_SIZE` hashes each) are merged
        in a tree of tasks, and only the merged one comes back; the key itself
        stays here (the workers get one derived 64-bit salt).  The identity is
        the keyed :meth:`fingerprint`.

        With ``units`` (a unit column and its bound), the same tasks count the
        rows per unit (:mod:`~dpframe.backends.dask_load_pass`); whether some
        unit is over the bound is kept for :meth:`bound_contributions`, which
        then reads no row to learn it.
        """
        salt = key.row_salt
        if units is None:
            parts = [delayed(worker_sketch, pure=False)(p, salt) for p in _to_delayed(self._frame)]
            merged: PartialSketch = _compute(_tree_reduce(parts, merge_partials), charged=False)
            return finish_sketch(merged, key, self.fingerprint())
        unit, limit = units
        both = [
            delayed(sketch_and_count, pure=False)(p, salt, unit, limit)
            for p in _to_delayed(self._frame)
        ]
        combined = _tree_reduce(both, merge_load_partials)
        sketch, over = _compute(delayed(sketch_and_over, pure=False)(combined), charged=False)
        self._over[units] = bool(over)
        return finish_sketch(sketch, key, self.fingerprint())

    # -- evaluation ----------------------------------------------------------

    def compute(
        self,
        plan: Plan,
        measures: tuple[Measure, ...],
        by: tuple[GroupKey, ...],
        undeclared: bool = False,
    ) -> list[npt.NDArray[np.float64]]:
        """Exact per-group values of ``measures``, bit-identical to the pandas backend's.

        The plan is compiled once here (:func:`~dpframe.backends.program.compile_query`)
        and the flat query (no nested expressions) is sent to every partition.
        With ``undeclared``, the count of the rows with an undeclared key follows
        (added over the partitions like the other totals).  Partition totals
        are added as integers (:mod:`~dpframe.backends.exact_totals`): float64
        arrays while every total is at most 2**53 in magnitude, exact int64
        beyond; nothing counts the rows after the scan, so there is no row
        ceiling.
        """
        query = compile_query(plan, measures, by, undeclared)
        codes = self._key_codes(query)
        program = query.program
        # A key column read only as the key is not read again: its codes stand in for it.
        only_keys = {k.source for k in query.keys if k.source and program.uses[k.node] == 1}
        read = set(program.columns) - only_keys
        if read or not codes:  # a plain row count reads one column (its length)
            columns = [c for c in self._frame.columns if c in read] or list(self._frame.columns[:1])
            parts: list[Delayed | None] = list(self._partitions(columns))
        else:
            parts = [None] * self._frame.npartitions
        # The codes' keys travel inside the partial: dask would walk every category otherwise.
        evaluate = functools.partial(_partition_measures, query, tuple(codes))
        lists = list(codes.values())
        partials = [
            delayed(evaluate, pure=False)(part, *(found[i] for found in lists))
            for i, part in enumerate(parts)
        ]
        total: Exact = _compute(_tree_reduce(partials, add_exact))
        return final_totals(total)

    def _key_codes(self, query: Query) -> dict[tuple[str, tuple[Hashable, ...]], list[Delayed]]:
        """Each source key's slot codes per partition, kept on the workers across releases.

        Computed (one pass over the key column) the first time a key column
        is grouped by with a list of categories, then persisted: later
        releases grouping by it read 1 or 2 bytes per row from worker memory
        instead of hashing the column again.  They cost 1 byte per row (2
        beyond 255 categories) per list in the workers' memory (spilled to
        disk under pressure like any persisted data); at most
        :data:`KEY_CODES_OPTION` lists are kept (default 16, the oldest is
        dropped first; 0 keeps none).  A lost worker's codes are recomputed
        by dask from the data.
        """
        found: dict[tuple[str, tuple[Hashable, ...]], list[Delayed]] = {}
        limit = int(dask.config.get(KEY_CODES_OPTION, _CODES_KEPT))
        if limit <= 0:
            self._codes.clear()
            return found
        for key in query.keys:
            if not key.source:
                continue
            cache_key = (key.source, key.categories)
            kept = self._codes.get(cache_key)
            if kept is not None and not _available(kept):
                del self._codes[cache_key]  # e.g. the client restarted the workers
                kept = None
            if kept is None:
                make = functools.partial(_partition_codes, key.source, key.categories)
                parts = _to_delayed(self._frame[[key.source]])
                kept = _persist_delayed([delayed(make, pure=False)(p) for p in parts])
                while self._codes and len(self._codes) >= limit:
                    self._codes.pop(next(iter(self._codes)))
                self._codes[cache_key] = kept
            found[cache_key] = kept
        return found

    def key_counts(
        self,
        plan: Plan,
        expr: Expr,
        unit: str = "",
        max_keys: int = 0,
        rng: SecureRandom | None = None,
    ) -> tuple[list[Hashable], npt.NDArray[np.int64]]:
        """Exact row count per distinct present value of ``expr`` (for key discovery only).

        The same keys and counts as the pandas backend, possibly in another
        order (the session does not depend on it: partition selection draws
        i.i.d. noise per key and releases the keys sorted).  With ``unit``
        and ``max_keys``, each unit keeps the rows of at most ``max_keys`` of
        its keys, a uniformly random choice drawn on the worker that holds
        the unit (a :class:`~dpframe.noise.SecureRandom` over that worker's
        ``os.urandom``; ``rng`` is not sent to workers).  The data is
        shuffled by ``unit`` first unless it is already grouped by it.
        """
        limit = bool(unit and max_keys)
        program = Program.compile(plan, [expr])
        columns = _needed_columns(self._frame.columns, program, unit if limit else "")
        frame = self._frame[columns]
        if limit and self._unit != unit:
            frame = frame.shuffle(on=unit)
        count = functools.partial(_partition_keys, program, unit if limit else "", max_keys)
        partials = [delayed(count, pure=False)(part) for part in _to_delayed(frame)]
        merged: KeyCounts = _compute(_tree_reduce(partials, _merge_keys))
        keys = list(merged.counts)
        return keys, np.array([merged.counts[k] for k in keys], dtype=np.int64)

    def row_reduce(self, plan: Plan, exprs: Sequence[Expr], reducer: RowReducer) -> tuple[Any, ...]:
        """``reducer``'s sum over the kept rows: partial sums per partition, added.

        Each worker evaluates the compiled plan on its partition and returns
        only ``reducer``'s partial sum (e.g. kernel sums on a grid, a gradient
        sum); the rows never leave the workers.
        """
        program = Program.compile(plan, exprs)
        parts = self._partitions(_needed_columns(self._frame.columns, program))
        reduce = functools.partial(_partition_reduce, program, reducer)
        partials = [delayed(reduce, pure=False)(part) for part in parts]
        total: tuple[Any, ...] = _compute(_tree_reduce(partials, add_partials))
        return total

    @property
    def holds_rows(self) -> bool:
        """The rows stay on the cluster: row-level mechanisms are refused before the charge."""
        return False

    def numeric_rows(self, plan: Plan, exprs: Sequence[Expr]) -> list[npt.NDArray[np.float64]]:
        """Refused: the rows stay on the cluster (see :attr:`holds_rows`)."""
        raise SchemaError(_NO_ROWS)

    def category_codes(
        self, plan: Plan, expr: Expr, categories: Sequence[Hashable]
    ) -> npt.NDArray[np.int64]:
        """Refused: the rows stay on the cluster (see :attr:`holds_rows`)."""
        raise SchemaError(_NO_ROWS)

    def bound_contributions(self, unit: str, max_rows: int, rng: SecureRandom) -> DaskBackend:
        """A view with at most ``max_rows`` rows per value of ``unit``, kept on the workers.

        The data is shuffled by ``unit`` (every unit's rows land in one
        partition), then each partition keeps, per unit, the rows with the
        ``max_rows`` smallest of independent uniform 62-bit keys.  The keys are
        drawn on the worker from a fresh :class:`~dpframe.noise.SecureRandom`
        (``os.urandom`` of the worker host), exactly as the pandas backend
        draws them from the session's source; they never leave the worker.
        Rows with a missing unit id are units of their own.  The view is
        persisted on the cluster (workers spill it to disk under memory
        pressure), so every query sees the same subset; if a worker is lost,
        its partitions are recomputed with new keys, which is still a
        uniformly random subset (the bound holds for any per-unit choice).
        ``rng`` only names the view, so two loads never share a subset.  When
        no unit has more than ``max_rows`` rows (counted first on the workers:
        :mod:`~dpframe.backends.dask_unit_sizes`, or with the load's sketch), the
        data is kept as it is, without a shuffle.
        """
        over = self._over.get((unit, max_rows))
        if over is None:
            partials = [
                delayed(partition_counts, pure=False)(part, unit, max_rows)
                for part in _to_delayed(self._frame[[unit]])
            ]
            counted = _tree_reduce(partials, combine_counts)
            over = bool(_compute(delayed(units_over, pure=False)(counted), charged=False))
        if not over:  # every unit within the bound: every row kept, no shuffle
            return DaskBackend(self._frame, unit=unit, fingerprint=self.fingerprint())
        salt = rng.randbits(64)
        bounded = self._frame.shuffle(on=unit).map_partitions(
            _bound_partition, unit, max_rows, salt, meta=self.schema_frame()
        )
        return DaskBackend(_persist(bounded), unit=unit, fingerprint=self.fingerprint())

    def _partitions(self, columns: list[str]) -> list[Delayed]:
        return _to_delayed(self._frame[columns])


# -- worker-side functions (module level, so workers can unpickle them) ------


def _as_pandas_dtypes(part: pd.DataFrame) -> pd.DataFrame:
    """Text columns as pandas itself reads them (see :class:`DaskBackend`).

    dask turns text into ``string[pyarrow]`` whose missing value is ``pd.NA``
    (its ``dataframe.convert-string`` option), where pandas 3 uses ``str``
    (missing is NaN): ``col != "a"`` would then drop rows with missing text
    on Dask and keep them on pandas.  Converting such columns back to pandas'
    own text dtype keeps the two backends' answers identical.
    """
    text = [
        name
        for name, dtype in part.dtypes.items()
        if isinstance(dtype, pd.StringDtype) and dtype.na_value is pd.NA and dtype != _PANDAS_TEXT
    ]
    if not text:
        return part
    converted: pd.DataFrame = part.astype(dict.fromkeys(text, _PANDAS_TEXT))
    return converted


def _partition_measures(
    query: Query,
    names: tuple[tuple[str, tuple[Hashable, ...]], ...],
    part: pd.DataFrame | None,
    *kept: npt.NDArray[Any],
) -> Exact:
    """A partition's exact totals; ``kept``: its persisted codes of the keys ``names``."""
    codes = dict(zip(names, kept, strict=True))
    if part is None:  # nothing to read but the keys
        rows = len(next(iter(codes.values())))
        frame: pd.DataFrame = pd.DataFrame(index=pd.RangeIndex(rows))
    else:
        frame = _as_pandas_dtypes(part)
    missing = {source: kept for (source, _), kept in codes.items() if source not in frame}
    if missing:  # stand-ins for key columns read only as keys (their codes are used instead)
        frame = frame.assign(**missing)
    return exact_partial(PandasBackend(frame, codes=codes).run_query(query))


def _partition_codes(source: str, categories: tuple[Hashable, ...], part: pd.DataFrame) -> Any:
    return source_slot_codes(_as_pandas_dtypes(part)[source], categories)


def _partition_reduce(program: Program, reducer: RowReducer, part: pd.DataFrame) -> tuple[Any, ...]:
    return reducer.partial(PandasBackend(_as_pandas_dtypes(part)).program_floats(program))


def _partition_keys(program: Program, unit: str, max_keys: int, part: pd.DataFrame) -> KeyCounts:
    if len(part) == 0:
        return KeyCounts({})
    rng = SecureRandom() if unit else None
    keys, counts = PandasBackend(_as_pandas_dtypes(part)).count_keys(program, unit, max_keys, rng)
    return KeyCounts(dict(zip(keys, counts.tolist(), strict=True)))


def _merge_keys(*partials: KeyCounts) -> KeyCounts:
    merged: dict[Hashable, int] = {}
    for partial in partials:
        for key, count in partial.counts.items():
            merged[key] = merged.get(key, 0) + count
    return KeyCounts(merged)


def _bound_partition(part: pd.DataFrame, unit: str, max_rows: int, salt: int) -> pd.DataFrame:
    del salt  # only makes the task names unique
    if len(part) == 0:
        return part
    return bound_contributions(part, unit, max_rows, SecureRandom(os.urandom))


def _partition_digest(part: pd.DataFrame) -> bytes:
    digest = hashlib.blake2b(digest_size=20)
    digest.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
    return digest.digest()


# -- client-side helpers -----------------------------------------------------


def _tree_reduce(partials: Sequence[Delayed], combine: Callable[..., Any]) -> Delayed:
    """Combine ``partials`` in order, ``_FAN_IN`` at a time, in tasks on the workers."""
    level = list(partials)
    if not level:
        raise SchemaError("The dask DataFrame has no partitions; there is nothing to query.")
    task = delayed(combine, pure=False)
    while len(level) > 1:
        level = [task(*level[i : i + _FAN_IN]) for i in range(0, len(level), _FAN_IN)]
    return level[0]


def _needed_columns(columns: Iterable[str], program: Program, extra: str = "") -> list[str]:
    """The source columns a compiled query reads, in the frame's order (at least one column)."""
    names: set[str] = set(program.columns)
    if extra:
        names.add(extra)
    ordered = list(columns)
    needed = [c for c in ordered if c in names]
    return needed or ordered[:1]


def _to_delayed(frame: dd.DataFrame) -> list[Delayed]:
    """One delayed pandas DataFrame per partition (after dask's graph optimization)."""
    to_delayed: Callable[[], list[Delayed]] = frame.to_delayed
    return to_delayed()


def _client() -> Any:
    try:
        from distributed import default_client
    except ImportError:  # dask without distributed: local threads
        return None
    get_client: Callable[[], Any] = default_client
    try:
        return get_client()
    except ValueError:  # no client is active
        return None


def _compute(obj: Delayed, charged: bool = True) -> Any:
    """Compute ``obj``: on a distributed client within a bounded time (see ``run_bounded``)."""
    client = _client()
    if client is not None:
        show: Callable[[Any], None] | None = None
        if dask.config.get(PROGRESS_OPTION, False):
            from distributed import progress

            show = progress
        return run_bounded(client, obj, show, charged)
    compute: Callable[[Delayed], tuple[Any, ...]] = dask.base.compute
    (result,) = compute(obj)
    return result


def _persist(frame: dd.DataFrame) -> dd.DataFrame:
    client = _client()
    if client is None:
        persist: Callable[[], dd.DataFrame] = frame.persist
        return persist()
    persisted: dd.DataFrame = client.persist(frame)
    return persisted


def _available(parts: list[Delayed]) -> bool:
    """False when some persisted part was cancelled (a restart) or failed: compute it again."""
    try:
        from distributed import futures_of
    except ImportError:
        return True
    find: Callable[[Any], list[Any]] = futures_of
    return all(f.status not in ("cancelled", "error", "lost") for f in find(parts))


def _persist_delayed(parts: list[Delayed]) -> list[Delayed]:
    client = _client()
    if client is None:
        persist: Callable[..., tuple[Delayed, ...]] = dask.base.persist
        return list(persist(*parts))
    persisted: list[Delayed] = client.persist(parts)
    return persisted


def read_dask(kind: str, path: str | os.PathLike[str], kwargs: Mapping[str, Any]) -> dd.DataFrame:
    """Open a CSV or Parquet file (or directory, or glob) lazily as a dask DataFrame.

    Reads only metadata (Parquet footers; for CSV, dask reads a small sample
    in this process to infer the column types: pass ``dtype=`` to fix them).

    With a distributed client, a Parquet data set's largest partition
    (estimated from the footers: :mod:`~dpframe.backends.parquet_sizes`) is
    checked against the workers' memory limits.

    Raises:
        SchemaError: the file cannot be opened (the message holds no data).
        ClusterNotReadyError: a partition would not fit in a worker's memory
            (the message names the fix); nothing is charged.
    """
    reader: Callable[..., dd.DataFrame] = dd.read_parquet if kind == "parquet" else dd.read_csv
    try:
        frame = reader(os.fspath(path) if isinstance(path, os.PathLike) else path, **kwargs)
    except ImportError:
        raise SchemaError("Reading this format needs pyarrow: pip install pyarrow.") from None
    except (OSError, ValueError, TypeError) as exc:
        raise SchemaError(f"Cannot read {os.fspath(path)!r}: {type(exc).__name__}.") from None
    client = _client()
    if kind == "parquet" and client is not None:
        largest = largest_partition_bytes(path, frame.npartitions, frame._meta)
        check_partition_memory(largest, worker_memory_limits(client))
    return frame
