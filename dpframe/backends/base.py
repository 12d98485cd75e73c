"""The backend interface: exact, non-private evaluation of plans.

A backend evaluates filters, derived columns, clamping, per-group sums and
contribution bounding, and nothing else: noise, accounting and release stay
in the session and are identical for every backend.  Results are exact
integer-valued sums, one entry per group: float64 arrays holding integers of
magnitude at most 2**53, or int64 arrays when a total is larger (only a
distributed backend over more than :data:`MAX_ROWS` rows can get there; see
:mod:`dpframe.backends.exact_totals`).
:func:`dpframe.backends.factory.make_backend` picks the engine from the type
of the data.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Expr
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey, Plan

if TYPE_CHECKING:
    from dpframe.backends.reduce import RowReducer

__all__ = ["MAX_ROWS", "Backend", "is_dask_frame"]

#: The most rows one in-memory frame (a pandas frame, or one Dask partition)
#: may hold.  Its sums are computed in float64 over values quantized to at
#: most 2**22 units, so any sum of up to 2**31 rows is exact.  Partitions are
#: added as integers, so a Dask release has no such ceiling.
MAX_ROWS = 2**31


class Backend(Protocol):
    """What the session needs from an engine."""

    def compute(
        self,
        plan: Plan,
        measures: tuple[Measure, ...],
        by: tuple[GroupKey, ...],
        undeclared: bool = False,
    ) -> list[npt.NDArray[np.float64]]:
        """Exact values of ``measures`` per group (length = product of key sizes).

        float64 arrays of integers at most 2**53 in magnitude, or int64 arrays
        when some total is larger (see :mod:`dpframe.backends.exact_totals`).

        With ``undeclared`` (and keys), one more array of length 1 follows: the
        number of kept rows whose keys are all present and not all declared.
        """
        ...

    def key_counts(
        self,
        plan: Plan,
        expr: Expr,
        unit: str = "",
        max_keys: int = 0,
        rng: SecureRandom | None = None,
    ) -> tuple[list[Hashable], npt.NDArray[np.int64]]:
        """Exact row count per distinct present value of ``expr`` (private key discovery)."""
        ...

    def fingerprint(self) -> str:
        """A stable digest of the data (the ledger key)."""
        ...

    def schema_frame(self) -> pd.DataFrame:
        """An empty DataFrame with the data's column names and dtypes (public facts only)."""
        ...

    def row_reduce(self, plan: Plan, exprs: Sequence[Expr], reducer: RowReducer) -> tuple[Any, ...]:
        """A sum over the kept rows of a function of their values (see ``backends.reduce``)."""
        ...

    @property
    def holds_rows(self) -> bool:
        """True when the rows are in this process, so row-level mechanisms may read them."""
        ...

    def preflight(self) -> None:
        """Before the charge: refuse if the backend cannot run a release now.

        Raises a :class:`~dpframe.errors.DPError` (e.g. Dask workers without
        dpframe); reads no data.
        """
        ...

    def numeric_rows(self, plan: Plan, exprs: Sequence[Expr]) -> list[npt.NDArray[np.float64]]:
        """The float values (NaN for missing) of ``exprs`` on the rows the plan keeps.

        Only where :attr:`holds_rows`; other backends raise :class:`SchemaError`.
        """
        ...

    def category_codes(
        self, plan: Plan, expr: Expr, categories: Sequence[Hashable]
    ) -> npt.NDArray[np.int64]:
        """Each kept row's position among ``categories`` (−1: missing or not declared).

        Only where :attr:`holds_rows`; other backends raise :class:`SchemaError`.
        """
        ...

    def bound_contributions(self, unit: str, max_rows: int, rng: SecureRandom) -> Backend:
        """A backend over at most ``max_rows`` rows per value of ``unit`` (a random subset)."""
        ...


def is_dask_frame(data: object) -> bool:
    """True for a dask DataFrame (without importing dask when it is not loaded)."""
    dask_dataframe = sys.modules.get("dask.dataframe")
    if dask_dataframe is None:
        return False  # a dask object cannot exist before dask.dataframe is imported
    return isinstance(data, dask_dataframe.DataFrame)
