"""A private join's public schema and rows, as the release path resolves a join source.

A :class:`~dpframe.plan.nodes.Source` with a ``join`` is not loaded: its
schema follows from its two sides' schemas and its rows from their rows.
Before anything is read (and before any charge), the join is checked again
here as the facade checked it (:func:`dpframe.plan.joins.check_join`), and
the source's own facts (ID column, row limit, ID space) must be exactly the
ones that follow from the join, so a source built by hand cannot claim
fewer rows per person than the join keeps.

The rows are computed once per session and join, by the first release that
reads them, after its charge (:class:`JoinedRows` is a backend that computes
them on first use: an explanation or a refused release reads nothing), then
kept: every release on one join reads the same random subset of at most
``max_rows`` rows per ID (:mod:`dpframe.backends.joins`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.base import Backend
from dpframe.backends.joins import join_backends, per_id_backend
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.backends.reduce import RowReducer
from dpframe.errors import DPError
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Expr
from dpframe.plan.joins import (
    check_join,
    default_max_rows,
    join_schema,
    join_source,
    unit_of,
)
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey, Join, Plan, Source
from dpframe.plan.schema import Schema
from dpframe.plan.validate import plan_schema

__all__ = ["JoinedRows", "Sources", "drawn_join", "forget_join", "joined_backend", "joined_schema"]


class Sources(Protocol):
    """What a join needs of the release path: its sides' schemas, backends and the rng."""

    rng: SecureRandom
    joins: dict[Join, Backend]
    join_rows: dict[Join, tuple[Backend, Backend]]

    def source_schema(self, source: Source) -> Schema:
        """The public schema of a source."""
        ...

    def source_backend(self, source: Source) -> Backend:
        """The backend of a source."""
        ...


def _checked(source: Source) -> tuple[Join, Source, Source]:
    join = source.join
    if join is None:
        raise DPError("This source is not a join.")
    left, right = unit_of(join.left), unit_of(join.right)
    if join_source(join, left, right) != source:
        raise DPError(
            "This join's source does not match its join (ID column, row limit or ID space): "
            "build joins with PrivateFrame.merge."
        )
    return join, left, right


def joined_schema(path: Sources, source: Source) -> Schema:
    """The public schema of a join source (its sides' checked first)."""
    join, left, right = _checked(source)
    left_schema = plan_schema(join.left, path.source_schema(left)).select(join.left_columns)
    right_schema = plan_schema(join.right, path.source_schema(right)).select(join.right_columns)
    return join_schema(join, left_schema, right_schema)


class JoinedRows:
    """A backend over a join's rows, computed on first use (after the charge), then kept.

    Args:
        path: the release path (the sides' backends and the random source).
        source: the join source (checked).
    """

    def __init__(self, path: Sources, source: Source, sides: tuple[Backend, Backend]) -> None:
        self._path = path
        self._source = source
        self._sides = sides
        self._holds = all(side.holds_rows for side in sides)
        self._rows: Backend | None = None

    def __repr__(self) -> str:
        return "JoinedRows(<private data>)"

    def __reduce__(self) -> Any:
        raise DPError("A backend holding private data cannot be pickled.")

    def materialized(self) -> Backend:
        """The joined rows' own backend (computed now if not yet; after the charge only)."""
        return self._get()

    def _get(self) -> Backend:
        if self._rows is None:
            join, left, right = _checked(self._source)
            most = default_max_rows(join.how, left, right)
            drawn = drawn_join(join)
            unit = unit_column_of(drawn, left, right)
            both = self._path.join_rows.get(drawn)
            if both is None:
                sides = (_rows_of(self._sides[0]), _rows_of(self._sides[1]))
                if self._holds:
                    both = join_backends(*sides, drawn, unit, self._path.rng, most)
                elif drawn.rows == "per_key":  # a Dask side: the rank table, on the cluster
                    from dpframe.backends.dask_joins import dask_ranks

                    ranks = dask_ranks(*sides, drawn)
                    both = (ranks, ranks)
                else:  # a Dask side: kept and dropped rows of one draw, on the cluster
                    from dpframe.backends.dask_joins import dask_join

                    both = dask_join(*sides, drawn, unit, self._path.rng, most)
                self._path.join_rows[drawn] = both
            if join.rows == "per_id":  # drawn with no truncation: its kept rows are all rows
                self._rows = _per_id(both[0], unit)
            else:
                self._rows = both[1] if join.rows == "dropped" else both[0]
        return self._rows

    @property
    def holds_rows(self) -> bool:
        """The joined rows are computed in this process (both sides hold their rows here)."""
        return self._holds

    def preflight(self) -> None:
        """Before the charge: each side's backend can run (e.g. Dask workers)."""
        for side in self._sides:
            side.preflight()

    def compute(
        self,
        plan: Plan,
        measures: tuple[Measure, ...],
        by: tuple[GroupKey, ...],
        undeclared: bool = False,
    ) -> list[npt.NDArray[np.float64]]:
        """As the joined rows' backend."""
        return self._get().compute(plan, measures, by, undeclared)

    def key_counts(
        self,
        plan: Plan,
        expr: Expr,
        unit: str = "",
        max_keys: int = 0,
        rng: SecureRandom | None = None,
    ) -> tuple[list[Hashable], npt.NDArray[np.int64]]:
        """As the joined rows' backend."""
        return self._get().key_counts(plan, expr, unit, max_keys, rng)

    def fingerprint(self) -> str:
        """As the joined rows' backend."""
        return self._get().fingerprint()

    def schema_frame(self) -> pd.DataFrame:
        """As the joined rows' backend."""
        return self._get().schema_frame()

    def row_reduce(self, plan: Plan, exprs: Sequence[Expr], reducer: RowReducer) -> tuple[Any, ...]:
        """As the joined rows' backend."""
        return self._get().row_reduce(plan, exprs, reducer)

    def numeric_rows(self, plan: Plan, exprs: Sequence[Expr]) -> list[npt.NDArray[np.float64]]:
        """As the joined rows' backend."""
        return self._get().numeric_rows(plan, exprs)

    def category_codes(
        self, plan: Plan, expr: Expr, categories: Sequence[Hashable]
    ) -> npt.NDArray[np.int64]:
        """As the joined rows' backend."""
        return self._get().category_codes(plan, expr, categories)

    def bound_contributions(self, unit: str, max_rows: int, rng: SecureRandom) -> Backend:
        """As the joined rows' backend."""
        return self._get().bound_contributions(unit, max_rows, rng)


def drawn_join(join: Join) -> Join:
    """The join whose one draw gives ``join``'s rows (kept, dropped and per ID share one).

    Rows per ID do not depend on the bound (drawn at the most rows the join
    can give); ranks per key value are their own table (no cut, no draw).
    """
    if join.rows == "per_key":
        return join
    left, right = unit_of(join.left), unit_of(join.right)
    bound = default_max_rows(join.how, left, right) if join.rows == "per_id" else join.max_rows
    return replace(join, rows="kept", max_rows=bound)


def forget_join(path: Sources, join: Join) -> bool:
    """Drop the rows kept for ``join`` (True if any were): a later release computes them again.

    The draw it shared with another kept join (its kept and dropped rows) is
    kept while that one is.  A release on ``join`` after this reads a new
    draw: each release's guarantee holds for any draw (docs/proofs/
    private_joins.md), only the sameness of the rows across releases is lost.
    """
    found = path.joins.pop(join, None) is not None
    drawn = drawn_join(join)
    if drawn in path.join_rows and all(drawn_join(j) != drawn for j in path.joins):
        del path.join_rows[drawn]
        found = True
    return found


def unit_column_of(join: Join, left: Source, right: Source) -> str:
    """The joined rows' ID column (the left key paired with the right ID column).

    A merge with a public table keeps the left frame's ID column ("" for a
    row-level frame: no truncation per ID is then possible, nor asked).
    """
    position = check_join(join, left, right)
    if position == -2:  # a join on another key: its rows have no single owner
        return ""
    return left.unit_column if position < 0 else join.left_on[position]


def _per_id(rows: Backend, unit: str) -> Backend:
    """One row per ID of a join's rows with its number of rows (in memory or on Dask)."""
    if isinstance(rows, PandasBackend):
        return per_id_backend(rows, unit)
    from dpframe.backends.dask_joins import dask_per_id

    return dask_per_id(rows, unit)


def _rows_of(backend: Backend) -> Backend:
    """A side's backend, with the rows of a join side computed."""
    return backend.materialized() if isinstance(backend, JoinedRows) else backend


def joined_backend(path: Sources, source: Source) -> Backend:
    """The rows of a join source, at most ``max_rows`` per ID (computed on first use, then kept)."""
    join, left, right = _checked(source)
    kept = path.joins.get(join)
    if kept is None:
        joined_schema(path, source)  # every check again, before any row is read
        sides = (path.source_backend(left), path.source_backend(right))
        kept = path.joins[join] = JoinedRows(path, source, sides)
    return kept
