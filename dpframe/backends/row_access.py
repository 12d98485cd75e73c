"""Row-level values of a plan, for mechanisms that perturb or fit every row.

Sanitized copies, the kernel density estimate and the regressions need the
(filtered) rows of one or more columns, not per-group sums.  This module reads
them from the embedded pandas backend; the values stay inside the session's
release path and never leave it unperturbed.  Other backends are refused
*before* any charge (:func:`require_rows`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.base import Backend
from dpframe.backends.evaluate import float_values
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import Plan, Source

if TYPE_CHECKING:
    from dpframe.backends.pandas_backend import PandasBackend

__all__ = ["category_codes", "numeric_rows", "require_rows"]


def require_rows(session: Any, source: Source, reason: str) -> None:
    """Raise :class:`SchemaError` (nothing charged) if the source's backend cannot give rows."""
    from dpframe.backends.pandas_backend import PandasBackend

    backend = session._backends.get((source.dataset, source.view))
    if backend is not None and not isinstance(backend, PandasBackend):
        raise SchemaError(
            f"{reason[0].upper()}{reason[1:]}, so it runs on in-memory pandas data only; "
            "load the data as a pandas DataFrame for it."
        )


def _pandas(backend: Backend) -> PandasBackend:
    from dpframe.backends.pandas_backend import PandasBackend

    if not isinstance(backend, PandasBackend):
        raise SchemaError("Row-level mechanisms need the pandas backend.")
    return backend


def numeric_rows(
    backend: Backend, plan: Plan, exprs: Sequence[Expr]
) -> list[npt.NDArray[np.float64]]:
    """The float values (NaN for missing) of ``exprs`` on the rows the plan keeps.

    The plan's derived columns are evaluated once for all of ``exprs``.
    """
    pandas_backend = _pandas(backend)
    values, mask = pandas_backend.row_values(plan, exprs)
    n = len(pandas_backend._frame)
    out = []
    for value in values:
        floats = np.asarray(float_values(value, n), dtype=np.float64)
        out.append(floats if mask is None else floats[mask])
    return out


def category_codes(
    backend: Backend, plan: Plan, expr: Expr, categories: Sequence[Hashable]
) -> npt.NDArray[np.int64]:
    """Each kept row's position among ``categories`` (−1: missing or not declared)."""
    from dpframe.backends.pandas_backend import _category_codes

    pandas_backend = _pandas(backend)
    (values,), mask = pandas_backend.row_values(plan, [expr])
    if not isinstance(values, pd.Series):
        values = pd.Series(np.full(len(pandas_backend._frame), values, dtype=object))
    codes = np.asarray(_category_codes(values, tuple(categories)), dtype=np.int64)
    return codes if mask is None else codes[mask]
