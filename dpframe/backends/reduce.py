"""Row-level sums: a function of each kept row's values, added over all rows.

Some mechanisms need more than per-group sums of one column but still only a
*sum over rows*: the kernel density estimate adds each row's kernel on a grid,
a full-batch gradient step adds each row's gradient.  A :class:`RowReducer`
says how to turn a block of rows into a partial sum and how to add two
partial sums; the backend applies it to the rows a plan keeps — the whole
frame at once on pandas, each partition on its worker on Dask (only the
partial sums come back) — so these mechanisms run where the data is.  The reducers themselves live
with their mechanisms (:class:`dpframe.mechanisms.models.kde.KernelSums`,
:class:`dpframe.mechanisms.models.regression.GradientSum`).

Reducers are frozen dataclasses of public parameters (grid points, bandwidth,
bounds, the current weights), pickled to the workers; they never carry data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dpframe.errors import DPError

__all__ = ["RowReducer", "add_partials"]

FloatArray = npt.NDArray[np.float64]


class RowReducer(Protocol):
    """Turns the float values of a block of rows into a partial sum."""

    def partial(self, columns: Sequence[FloatArray]) -> tuple[Any, ...]:
        """The partial sum over one block (one array per requested expression, NaN missing)."""
        ...


def add_partials(*partials: tuple[Any, ...]) -> tuple[Any, ...]:
    """Add partial sums element by element (counts and arrays alike)."""
    if not partials:
        raise DPError("Nothing to add.")
    width = len(partials[0])
    return tuple(sum((p[i] for p in partials[1:]), partials[0][i]) for i in range(width))
