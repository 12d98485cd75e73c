"""The rows of a private join: both sides' plans evaluated, matched, then bounded per ID.

:func:`join_backends` is what the engine calls for a
:class:`~dpframe.plan.nodes.Join` (the public checks are in
:mod:`dpframe.plan.joins`).  Its steps, all exact and non-private:

1. each side's plan is evaluated on its backend (filters and derived
   columns), keeping the columns the join names;
2. the right side's keys take the left keys' names, and other names present
   in both take the suffixes, as pandas;
3. rows whose key has a missing value never match (pandas would match a
   missing key with a missing key): they are set aside and, for the sides
   that keep unmatched rows, added back with missing values on the other
   side's columns;
4. the rows are matched (``pandas.merge``; by direct lookup for a
   many-to-one join on a dense integer key, the same rows:
   :mod:`~dpframe.backends.lookup_join`), or, for a semi/anti join, the
   left rows whose key is (not) among the right keys are kept;
5. at most ``max_rows`` rows per ID are kept, a uniformly random subset from
   the secure source (:func:`~dpframe.backends.pandas_backend.kept_positions`;
   rows with a missing ID are units of their own); the rows dropped are kept
   apart (a join with ``rows="dropped"`` reads them: same draw).  Rows per ID
   (``rows="per_id"``) are counted only when asked, from the join drawn with
   no truncation.

The result is a new in-memory backend over the joined rows; the engine keeps
it for the session, so every release on the same join reads the same subset.
The two sides stay as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.base import Backend
from dpframe.backends.lookup_join import lookup_merge
from dpframe.backends.pandas_backend import PandasBackend, kept_positions
from dpframe.errors import SchemaError
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.joins import PER_ID_ROWS, PER_KEY_RANK, PER_KEY_SIDE, join_columns
from dpframe.plan.nodes import Join, Plan

__all__ = [
    "fillable",
    "join_backends",
    "join_frames",
    "per_id_backend",
    "per_id_rows",
    "per_key",
    "per_key_ranks",
    "side_frame",
    "truncate",
]


def side_frame(backend: Backend, plan: Plan, columns: tuple[str, ...]) -> pd.DataFrame:
    """The rows ``plan`` keeps, with ``columns`` (evaluated on ``backend``; in memory).

    A backend that sends its row work to other processes but holds its
    in-memory backend as ``inner`` (a curator's worker backend) is read
    through ``inner``: the join is computed in this process.
    """
    inner = getattr(backend, "inner", None)
    if isinstance(inner, PandasBackend):
        backend = inner
    if not isinstance(backend, PandasBackend):
        raise SchemaError(
            "A private join runs on in-memory pandas frames in this version; load both "
            "frames as pandas DataFrames."
        )
    exprs: list[Expr] = [Col(c) for c in columns]
    values, mask = backend.row_values(plan, exprs)
    n = len(backend.rows)
    data: dict[str, Any] = {}
    for name, value in zip(columns, values, strict=True):
        if isinstance(value, pd.Series):
            data[name] = value.reset_index(drop=True)
        else:  # a constant column
            data[name] = pd.Series([value] * n)
    # copy=False: the columns stay the side's own (copy-on-write), not a second copy of the keys
    frame = pd.DataFrame(data, index=pd.RangeIndex(n), copy=False)
    if mask is not None:
        frame = frame.loc[np.asarray(mask, dtype=bool)].reset_index(drop=True)
    kept: pd.DataFrame = frame
    return kept


def _missing_key(frame: pd.DataFrame, keys: list[str]) -> pd.Series:
    missing: pd.Series = frame[keys].isna().any(axis=1)
    return missing


def fillable(frame: pd.DataFrame, keep: list[str]) -> pd.DataFrame:
    """Columns unmatched rows fill with missing values, in the dtype the schema says.

    As pandas would make them, but decided from the dtypes, never from the
    values: numpy integers become float64, booleans pandas' nullable boolean
    (see :func:`dpframe.plan.joins.join_schema`).
    """
    casts: dict[str, Any] = {}
    for name in frame.columns:
        if name in keep:
            continue
        dtype = frame[name].dtype
        if pd.api.types.is_bool_dtype(dtype) and not isinstance(
            dtype, pd.api.extensions.ExtensionDtype
        ):
            casts[name] = "boolean"
        elif pd.api.types.is_integer_dtype(dtype) and not isinstance(
            dtype, pd.api.extensions.ExtensionDtype
        ):
            casts[name] = "float64"
    return frame.astype(casts) if casts else frame


def join_frames(left: pd.DataFrame, right: pd.DataFrame, join: Join) -> pd.DataFrame:
    """The matched rows of two side frames (steps 2 to 4 of the module docstring)."""
    layout = join_columns(join)
    left_names = {c: n for n, side, c in layout if side == "left"}
    right_names = {c: n for n, side, c in layout if side == "right"}
    lkeys = list(join.left_on)
    right = right.rename(
        columns={**right_names, **dict(zip(join.right_on, join.left_on, strict=True))}
    )
    left = left.rename(columns=left_names)
    lkeys = [left_names.get(k, k) for k in lkeys]
    names = [n for n, _, _ in layout]
    if join.how in ("left", "outer"):
        right = fillable(right, lkeys)
    if join.how in ("right", "outer"):
        left = fillable(left, lkeys)
    left_missing = _missing_key(left, lkeys)
    right_missing = _missing_key(right, lkeys)
    left_ok = left.loc[~left_missing] if left_missing.any() else left
    right_ok = right.loc[~right_missing] if right_missing.any() else right
    if join.how in ("semi", "anti"):
        found = pd.MultiIndex.from_frame(left_ok[lkeys]).isin(
            pd.MultiIndex.from_frame(right_ok[lkeys])
        )
        if join.how == "semi":
            semi: pd.DataFrame = left_ok.loc[found].reset_index(drop=True)[names]
            return semi
        anti: pd.DataFrame = pd.concat(
            [left_ok.loc[~found], left.loc[left_missing]], ignore_index=True
        )[names]
        return anti
    how: Any = join.how  # inner, left, right or outer here
    quick = lookup_merge(left_ok, right_ok, lkeys[0], how) if len(lkeys) == 1 else None
    matched = left_ok.merge(right_ok, how=how, on=lkeys, sort=False) if quick is None else quick
    parts = [matched]
    if join.how in ("left", "outer"):
        parts.append(left.loc[left_missing])
    if join.how in ("right", "outer"):
        parts.append(right.loc[right_missing])
    joined = pd.concat(parts, ignore_index=True) if len(parts) > 1 else matched
    out: pd.DataFrame = joined.reindex(columns=names).reset_index(drop=True)
    return out


def truncate(
    joined: pd.DataFrame, unit_column: str, max_rows: int, rng: SecureRandom
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows kept (at most ``max_rows`` per ID, a random subset) and the rows dropped."""
    positions = kept_positions(joined[unit_column], max_rows, rng)
    if len(positions) == len(joined):
        return joined, joined.iloc[:0]
    keep = np.zeros(len(joined), dtype=bool)
    keep[positions] = True
    kept: pd.DataFrame = joined.loc[keep].reset_index(drop=True)
    dropped: pd.DataFrame = joined.loc[~keep].reset_index(drop=True)
    return kept, dropped


def per_key(frame: pd.DataFrame, keys: list[str], k: int, rng: SecureRandom) -> pd.DataFrame:
    """At most ``k`` rows per value of ``keys`` (a uniformly random subset from the secure source).

    Rows with a missing key are kept (they never match: each stays one row).
    """
    codes = frame.groupby(keys, sort=False, dropna=True).ngroup().to_numpy()
    present = codes >= 0
    if not present.any():
        return frame
    kept = np.flatnonzero(present)[kept_positions(pd.Series(codes[present]), k, rng)]
    keep = ~present
    keep[kept] = True
    if keep.all():
        return frame
    out: pd.DataFrame = frame.loc[keep].reset_index(drop=True)
    return out


def _ranks(frame: pd.DataFrame, keys: list[str], most: int) -> npt.NDArray[np.int64]:
    """Each row's place among its key value's rows (1, 2, ...; clipped at ``most``).

    Rows with a missing key are left out (they never match: no cut applies).
    """
    present = ~_missing_key(frame, keys)
    places = frame.loc[present].groupby(keys, sort=False).cumcount().to_numpy(dtype=np.int64)
    ranks: npt.NDArray[np.int64] = np.minimum(places + 1, most)
    return ranks


def per_key_ranks(left: pd.DataFrame, right: pd.DataFrame, join: Join) -> pd.DataFrame:
    """The rows per key value of both sides, as ranks (a join's ``rows="per_key"``).

    One row per side row whose key is present: ``side`` ("left"/"right") and
    ``rank``, its place among the rows of its key value on its side, clipped
    at ``join.k_left``.  A key value with c rows gives ranks 1, ..., c, so
    removing a person's rows removes as many rows of this table (the top
    ranks of their key values); docs/proofs/private_joins.md.
    """
    most = join.k_left
    parts = [
        (name, _ranks(frame, list(keys), most))
        for name, frame, keys in (("left", left, join.left_on), ("right", right, join.right_on))
    ]
    sides = np.concatenate([np.full(len(r), name, dtype=object) for name, r in parts])
    table: pd.DataFrame = pd.DataFrame(
        {
            PER_KEY_SIDE: pd.array(sides, dtype="str"),
            PER_KEY_RANK: np.concatenate([r for _, r in parts]).astype(np.int64),
        }
    )
    return table


def per_id_rows(joined: pd.DataFrame, unit_column: str) -> pd.DataFrame:
    """One row per ID: its number of joined rows (a row with a missing ID is an ID of its own)."""
    units = joined[unit_column]
    sizes = units.value_counts(sort=False, dropna=True).to_numpy(dtype=np.int64)
    counts = np.concatenate([sizes, np.ones(int(units.isna().sum()), dtype=np.int64)])
    table: pd.DataFrame = pd.DataFrame({PER_ID_ROWS: counts})
    return table


def join_backends(
    left: Backend,
    right: Backend,
    join: Join,
    unit_column: str,
    rng: SecureRandom,
    most: int,
) -> tuple[Backend, Backend]:
    """Backends over the join's kept rows and its dropped rows (one draw).

    Kept: at most ``join.max_rows`` rows per ID.  ``most`` is the most rows
    the join can give one ID (the product of the sides' limits, or the left
    limit for semi/anti joins): when ``join.max_rows`` is at least that, no
    ID can be over it and the truncation is skipped (it would keep every
    row).  Rows per ID are counted on demand from the rows of the join drawn
    at ``most`` (all its rows: :func:`per_id_backend`), never kept otherwise.
    """
    left_rows = side_frame(left, join.left, join.left_columns)
    right_rows = side_frame(right, join.right, join.right_columns)
    if join.on_key and join.rows == "per_key":  # ranks per key value, for choosing k
        ranks = PandasBackend(per_key_ranks(left_rows, right_rows, join))
        return ranks, ranks
    if join.on_key:  # each side cut per key value first; no per-ID step after
        left_rows = per_key(left_rows, list(join.left_on), join.k_left, rng)
        right_rows = per_key(right_rows, list(join.right_on), join.k_right, rng)
    joined = join_frames(left_rows, right_rows, join)
    del left_rows, right_rows  # the sides' evaluated rows, freed before any truncation
    if join.on_key or join.max_rows >= most:
        return PandasBackend(joined), PandasBackend(joined.iloc[:0])
    kept, dropped = truncate(joined, unit_column, join.max_rows, rng)
    return PandasBackend(kept), PandasBackend(dropped)


def per_id_backend(rows: PandasBackend, unit_column: str) -> PandasBackend:
    """A backend over one row per ID of ``rows`` with its number of rows (:func:`per_id_rows`).

    ``rows`` are all the join's rows (drawn with no truncation); a join with
    no ID column (a row-level frame's public merge) has no rows per ID.
    """
    frame = rows.rows
    return PandasBackend(per_id_rows(frame, unit_column) if unit_column else frame.iloc[:0])
