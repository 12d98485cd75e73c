"""The backend interface: exact, non-private evaluation of plans.

A backend evaluates filters, derived columns, clamping, per-group sums and
contribution bounding, and nothing else: noise, accounting and release stay
in the session and are identical for every backend.  Results are exact
integer-valued sums (float64 arrays holding integers below 2**53), one entry
per group.  :func:`make_backend` picks the engine from the type of the data:
a pandas DataFrame gets :class:`~dpframe.backends.pandas_backend.PandasBackend`,
a dask DataFrame gets :class:`~dpframe.backends.dask_backend.DaskBackend`
(imported only then: ``import dpframe`` never imports dask).
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import SchemaError
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import GroupKey, Plan

if TYPE_CHECKING:
    from dpframe.backends.reduce import RowReducer

__all__ = ["MAX_ROWS", "Backend", "Measure", "is_dask_frame", "make_backend"]

#: The largest number of rows a release may aggregate.  Sums are computed in
#: float64 over values quantized to at most 2**22 units, so any sum of up to
#: 2**31 rows is exact.
MAX_ROWS = 2**31


@dataclass(frozen=True)
class Measure:
    """One exact quantity to compute per group.

    ``rows`` counts rows; ``nonnull`` counts rows where ``expr`` is present;
    ``sum`` adds ``round((clip(expr, lower, upper) - center) ** power / quantum)``
    over present values (missing values add nothing).  ``quantum`` is a power
    of two chosen so that every term is at most 2**22 in magnitude.
    """

    kind: Literal["rows", "nonnull", "sum"]
    expr: Expr | None = None
    lower: float = 0.0
    upper: float = 0.0
    center: float = 0.0
    power: Literal[1, 2] = 1
    quantum: float = 1.0


class Backend(Protocol):
    """What the session needs from an engine."""

    def compute(
        self, plan: Plan, measures: tuple[Measure, ...], by: tuple[GroupKey, ...]
    ) -> list[npt.NDArray[np.float64]]:
        """Exact values of ``measures`` per group (length = product of key sizes)."""
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

    def bound_contributions(self, unit: str, max_rows: int, rng: SecureRandom) -> Backend:
        """A backend over at most ``max_rows`` rows per value of ``unit`` (a random subset)."""
        ...


def is_dask_frame(data: object) -> bool:
    """True for a dask DataFrame (without importing dask when it is not loaded)."""
    dask_dataframe = sys.modules.get("dask.dataframe")
    if dask_dataframe is None:
        return False  # a dask object cannot exist before dask.dataframe is imported
    return isinstance(data, dask_dataframe.DataFrame)


def make_backend(data: object) -> Backend:
    """The backend for ``data``: a pandas DataFrame or a dask DataFrame.

    Raises:
        SchemaError: for anything else, or a frame without rows or columns.
    """
    if is_dask_frame(data):
        from dpframe.backends.dask_backend import DaskBackend

        return DaskBackend(data)  # type: ignore[arg-type]  # checked by is_dask_frame
    if not isinstance(data, pd.DataFrame):
        raise SchemaError("private_frame() needs a pandas DataFrame (or a dask DataFrame).")
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise SchemaError("The DataFrame is empty; there is nothing to protect or query.")
    from dpframe.backends.pandas_backend import PandasBackend

    return PandasBackend(data)
