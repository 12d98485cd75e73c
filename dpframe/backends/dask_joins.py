"""A private join on Dask: both sides stay partitioned on the cluster, never collected.

The same steps as :mod:`dpframe.backends.joins` (its docstring), as dask
operations: each side's plan is evaluated partition by partition, the right
columns take the join's names, rows with a missing key are set aside (they
never match) and added back where the join keeps unmatched rows, the rows are
matched with ``dask.dataframe.merge`` (a shuffle on the keys; a right side
of one partition is sent whole to every left partition instead), and at most
``max_rows`` rows per ID are kept by the Dask backend's own bounding (a
shuffle on the ID, then a uniformly random subset per ID drawn on the
worker; the view is persisted, so every release reads one subset).  A join on
another key (``join.on_key``) first cuts each side to at most k rows per key
value the same way (a shuffle on the keys, a uniformly random subset per key
value drawn on the worker; rows with a missing key kept), and has no per-ID
step; its rank table (``rows="per_key"``, for ``k="auto"``) is computed
after the same shuffle, partition by partition.  A pandas side is partitioned
first.  A join on the ID truncated per ID flags each row kept or dropped in
one persisted draw (``rows="kept"`` and ``rows="dropped"`` read its two
halves); its rows per ID (``rows="per_id"``, for ``max_rows="auto"``) are
counted after a shuffle on the ID, partition by partition.
"""

from __future__ import annotations

import os
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.delayed import delayed

from dpframe.backends.base import Backend
from dpframe.backends.dask_backend import DaskBackend, _to_delayed
from dpframe.backends.joins import fillable, per_id_rows, per_key, per_key_ranks, side_frame
from dpframe.backends.lookup_join import lookup_merge
from dpframe.backends.pandas_backend import PandasBackend, kept_positions
from dpframe.errors import SchemaError
from dpframe.noise import SecureRandom
from dpframe.plan.joins import join_columns
from dpframe.plan.nodes import Join, Plan

__all__ = ["dask_join", "dask_per_id", "dask_ranks"]

#: The flag column of a truncated join's rows (kept or dropped), on the workers only.
_KEPT = "_dp_kept"


def _side_partition(part: pd.DataFrame, plan: Plan, columns: tuple[str, ...]) -> pd.DataFrame:
    return side_frame(PandasBackend(part), plan, columns)


def _lazy(backend: Backend, plan: Plan, columns: tuple[str, ...]) -> dd.DataFrame:
    """A side's kept rows and columns, as a dask DataFrame (evaluated on the workers)."""
    if isinstance(backend, DaskBackend):
        frame = backend.lazy_rows
        meta = side_frame(PandasBackend(frame._meta), plan, columns)
        lazy: dd.DataFrame = frame.map_partitions(  # type: ignore[no-untyped-call]
            _side_partition, plan, columns, meta=meta
        )
        return lazy
    rows = side_frame(backend, plan, columns)  # an in-memory side: partitioned as it is
    parted: dd.DataFrame = dd.from_pandas(  # type: ignore[no-untyped-call]
        rows, npartitions=max(1, len(rows) // 1_000_000 + 1)
    )
    return parted


def _cut_partition(part: pd.DataFrame, keys: list[str], k: int, salt: int) -> pd.DataFrame:
    """At most ``k`` rows per key value of one partition (all its rows: shuffled on the keys)."""
    del salt  # only makes the task names unique
    if len(part) == 0:
        return part
    return per_key(part.reset_index(drop=True), keys, k, SecureRandom(os.urandom))


def _cut(frame: dd.DataFrame, keys: list[str], k: int, rng: SecureRandom) -> dd.DataFrame:
    """A side cut to at most ``k`` rows per key value, on the workers (never collected).

    Shuffled on the keys, so every key value's rows land in one partition;
    each partition then keeps, per key value, a uniformly random subset of
    ``k`` rows (keys from the worker's own secure source).  Rows with a
    missing key are kept (they never match).
    """
    salt = rng.randbits(64)
    shuffled = frame.shuffle(on=keys)
    cut: dd.DataFrame = shuffled.map_partitions(_cut_partition, keys, k, salt, meta=frame._meta)
    return cut


def _side_ranks(part: pd.DataFrame, join: Join, side: str) -> pd.DataFrame:
    """One partition's rank table (all rows of its key values: shuffled on the keys)."""
    empty = part.iloc[:0]
    if side == "left":
        return per_key_ranks(part, empty, join)
    return per_key_ranks(empty, part, join)


def dask_ranks(left: Backend, right: Backend, join: Join) -> DaskBackend:
    """A join's rows per key value (``rows="per_key"``) on the workers, never collected."""
    sides = []
    for side, backend, plan, columns, keys in (
        ("left", left, join.left, join.left_columns, list(join.left_on)),
        ("right", right, join.right, join.right_columns, list(join.right_on)),
    ):
        frame = _lazy(backend, plan, columns)
        meta = _side_ranks(frame._meta, join, side)
        ranks: dd.DataFrame = frame.shuffle(on=keys).map_partitions(
            _side_ranks, join, side, meta=meta
        )
        sides.append(ranks)
    both: Any = dd.concat(sides)  # type: ignore[no-untyped-call]
    return DaskBackend(both.persist(), fingerprint="per_key")  # never digested


def dask_join(
    left: Backend,
    right: Backend,
    join: Join,
    unit_column: str,
    rng: SecureRandom,
    most: int,
) -> tuple[DaskBackend, DaskBackend]:
    """Dask backends over the join's kept rows (at most ``join.max_rows`` per ID) and dropped."""
    layout = join_columns(join)
    left_names = {c: n for n, side, c in layout if side == "left"}
    right_names = {c: n for n, side, c in layout if side == "right"}
    names = [n for n, _, _ in layout]
    keys = list(join.left_on)
    lf = _lazy(left, join.left, join.left_columns).rename(columns=left_names)
    rf = _lazy(right, join.right, join.right_columns).rename(
        columns={**right_names, **dict(zip(join.right_on, join.left_on, strict=True))}
    )
    if join.on_key:  # each side cut per key value first (on the workers); no per-ID step after
        lf = _cut(lf, keys, join.k_left, rng)
        rf = _cut(rf, keys, join.k_right, rng)
    if join.how in ("left", "outer"):  # unmatched rows fill these: the dtypes the schema says
        rf = rf.map_partitions(fillable, keys, meta=fillable(rf._meta, keys))
    if join.how in ("right", "outer"):
        lf = lf.map_partitions(fillable, keys, meta=fillable(lf._meta, keys))
    left_missing = lf[keys].isna().any(axis=1)
    right_missing = rf[keys].isna().any(axis=1)
    lok, rok = lf[~left_missing], rf[~right_missing]
    joined: Any
    if join.how == "semi":  # the left rows whose key is on the right, once each
        joined = lok.merge(rok[keys].drop_duplicates(), how="inner", on=keys)[names]
    elif join.how == "anti":
        found = rok[keys].drop_duplicates().assign(_dp_found=True)
        marked = lok.merge(found, how="left", on=keys)
        hit = marked["_dp_found"].fillna(False).astype(bool)
        joined = dd.concat(  # type: ignore[no-untyped-call]
            [marked[~hit][names], lf[left_missing][names]]
        )
    else:
        joined = _matched(lok, rok, keys, join.how)[names]
        parts = [joined]
        if join.how in ("left", "outer"):
            parts.append(_aligned(lf[left_missing], joined._meta))
        if join.how in ("right", "outer"):
            parts.append(_aligned(rf[right_missing], joined._meta))
        if len(parts) > 1:
            joined = dd.concat(  # type: ignore[no-untyped-call]
                parts
            )
        joined = joined[names]
    name = f"join:{rng.randbits(64):016x}"
    if join.on_key or join.max_rows >= most:
        # Persisted: every release reads the same cut (join.on_key), and the join is
        # matched once, not once per release (the workers spill it under memory pressure).
        persist: Any = joined.persist
        joined = persist()
        return DaskBackend(joined, fingerprint=name), DaskBackend(_none(joined), fingerprint=name)
    return _truncated(joined, unit_column, join.max_rows, rng, name)


def _merge_partition(part: pd.DataFrame, right: pd.DataFrame, keys: list[str], how: Any) -> Any:
    """One left partition joined to the whole right side (pandas' merge, or its lookup)."""
    quick = lookup_merge(part, right, keys[0], how) if len(keys) == 1 else None
    return part.merge(right, how=how, on=keys, sort=False) if quick is None else quick


def _matched(lok: dd.DataFrame, rok: dd.DataFrame, keys: list[str], how: Any) -> Any:
    """The matched rows: a right side of one partition is sent whole to each left partition.

    (An inner or left join only: each left partition's rows meet every right
    row there, as Dask's own single-partition merge does, without its hash
    table rebuilt per split.)  Otherwise Dask's merge (a shuffle on the keys).
    """
    if how not in ("inner", "left") or rok.npartitions != 1:
        merge: Any = lok.merge
        return merge(rok, how=how, on=keys)
    (whole,) = _to_delayed(rok)
    meta = _merge_partition(lok._meta, rok._meta, keys, how)
    task = delayed(_merge_partition, pure=False)
    parts = [task(part, whole, keys, how) for part in _to_delayed(lok)]
    from_delayed: Any = dd.from_delayed  # (map_partitions with a Delayed argument: dask 2025+)
    return from_delayed(parts, meta=meta, verify_meta=False)


def _with_columns(part: pd.DataFrame, meta: pd.DataFrame) -> pd.DataFrame:
    out: pd.DataFrame = part.reindex(columns=meta.columns).astype(meta.dtypes.to_dict())
    return out


def _aligned(frame: dd.DataFrame, meta: pd.DataFrame) -> dd.DataFrame:
    """``frame``'s rows with every column of ``meta`` (the other side's missing), in its dtypes.

    The unmatched rows added to a join hold all its columns before the
    concatenation: a concatenation whose inputs lack a column gives a
    projection on that column fewer partitions than the others (dask's
    projection pushdown), and a release reads columns by partition.
    """
    each: Any = frame.map_partitions
    aligned: dd.DataFrame = each(_with_columns, meta, meta=meta)
    return aligned


def _none(frame: dd.DataFrame) -> dd.DataFrame:
    """No rows, with ``frame``'s columns (a join that drops nothing)."""
    empty: dd.DataFrame = frame.map_partitions(  # type: ignore[no-untyped-call]
        _no_rows, meta=frame._meta
    )
    return empty


def _no_rows(part: pd.DataFrame) -> pd.DataFrame:
    none: pd.DataFrame = part.iloc[:0]
    return none


def _flag_partition(part: pd.DataFrame, unit: str, max_rows: int, salt: int) -> pd.DataFrame:
    """One partition's rows (all of its IDs': shuffled on the ID), each flagged kept or not."""
    del salt  # only makes the task names unique
    keep = np.zeros(len(part), dtype=bool)
    if len(part):
        keep[kept_positions(part[unit], max_rows, SecureRandom(os.urandom))] = True
    flagged: pd.DataFrame = part.assign(**{_KEPT: keep})
    return flagged


def _side_of(part: pd.DataFrame, kept: bool) -> pd.DataFrame:
    rows: pd.DataFrame = part.loc[part[_KEPT].to_numpy() == kept].drop(columns=[_KEPT])
    return rows


def _truncated(
    joined: dd.DataFrame, unit: str, max_rows: int, rng: SecureRandom, name: str
) -> tuple[DaskBackend, DaskBackend]:
    """The kept rows (at most ``max_rows`` per ID, a random subset) and the dropped rows.

    As the Dask backend's own bounding (a shuffle on the ID, then per ID the
    rows with the smallest of independent keys drawn on the worker from its
    own secure source; missing IDs are IDs of their own), but every row is
    flagged and the flagged rows are persisted: the kept and the dropped rows
    are the two halves of one draw, as on pandas.
    """
    salt = rng.randbits(64)
    meta = joined._meta.assign(**{_KEPT: np.zeros(0, dtype=bool)})
    flagged: Any = joined.shuffle(on=unit).map_partitions(
        _flag_partition, unit, max_rows, salt, meta=meta
    )
    flagged = flagged.persist()
    halves = [flagged.map_partitions(_side_of, kept, meta=joined._meta) for kept in (True, False)]
    return DaskBackend(halves[0], fingerprint=name), DaskBackend(halves[1], fingerprint=name)


def _per_id_partition(part: pd.DataFrame, unit: str) -> pd.DataFrame:
    return per_id_rows(part, unit)


def dask_per_id(rows: Backend, unit: str) -> DaskBackend:
    """One row per ID of a join's rows with its number of rows, on the workers (``rows="per_id"``).

    Shuffled on the ID, so every ID's rows are in one partition; each
    partition counts its IDs' rows (a row with a missing ID is an ID of its
    own, as :func:`dpframe.backends.joins.per_id_rows`).  Persisted, never
    collected.
    """
    if not isinstance(rows, DaskBackend):
        raise SchemaError(
            "The rows per ID of a join with a Dask side are counted from the join's Dask "
            "rows, and these are in memory: load both frames on one backend."
        )
    frame = rows.lazy_rows
    meta = per_id_rows(frame._meta, unit) if unit else None
    if not unit:  # no ID column (a row-level frame's public merge): no rows per ID
        return DaskBackend(_none(frame), fingerprint="per_id")
    counts: Any = frame[[unit]].shuffle(on=unit).map_partitions(_per_id_partition, unit, meta=meta)
    return DaskBackend(counts.persist(), fingerprint="per_id")  # never digested
