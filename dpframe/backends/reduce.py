"""Row-level sums: a function of each kept row's values, added over all rows.

Some mechanisms need more than per-group sums of one column but still only a
*sum over rows*: the kernel density estimate adds each row's kernel on a grid,
a full-batch gradient step adds each row's gradient.  A :class:`RowReducer`
says how to turn a block of rows into a partial sum and how to add two
partial sums; the backend applies it to the rows a plan keeps — the whole
frame at once on pandas, each partition on its worker on Dask (only the
partial sums come back) — so these mechanisms run where the data is.

Reducers are frozen dataclasses of public parameters (grid points, bandwidth,
bounds, the current weights), pickled to the workers; they never carry data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dpframe.errors import DPError

__all__ = ["GradientSum", "KernelSums", "RowReducer", "add_partials"]

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


@dataclass(frozen=True)
class KernelSums:
    """Kernel sums on a grid of the clamped present values, and their count.

    ``partial`` gives ``(n, S)`` with n the present values and
    S(x_j) = Σ_i φ_h(x_j − clamp(X_i)) (:func:`dpframe.mechanisms.kde.kernel_sums`).
    """

    points: tuple[float, ...]
    bandwidth: float
    bounds: tuple[float, float]

    def partial(self, columns: Sequence[FloatArray]) -> tuple[Any, ...]:
        """``(count, kernel sums)`` of one block."""
        from dpframe.mechanisms.kde import kernel_sums

        (values,) = columns
        present = values[~np.isnan(values)]
        clamped = np.clip(present, self.bounds[0], self.bounds[1])
        grid = np.asarray(self.points, dtype=np.float64)
        return len(clamped), kernel_sums(clamped, grid, self.bandwidth)


@dataclass(frozen=True)
class GradientSum:
    """The gradient sum of a regression's loss at ``weights`` over the complete rows.

    The columns are the features, then the target; a row with any missing
    value is left out.  Features and target are clamped and rescaled as in
    :func:`dpframe.mechanisms.regression.normalize_features` / ``normalize_target``.
    ``partial`` gives ``(n, Σ ∇ℓ)``; with ``weights=None`` only the count.
    """

    feature_bounds: tuple[tuple[float, float], ...]
    target_bounds: tuple[float, float]
    loss: str
    weights: tuple[float, ...] | None = None

    def partial(self, columns: Sequence[FloatArray]) -> tuple[Any, ...]:
        """``(complete rows, gradient sum)`` of one block."""
        from dpframe.mechanisms.regression import gradient_sum, normalize_features, normalize_target

        complete = np.all([~np.isnan(c) for c in columns], axis=0)
        count = int(np.count_nonzero(complete))
        dim = len(self.feature_bounds) + 1
        if self.weights is None or count == 0:
            return count, np.zeros(dim)
        z = normalize_features([c[complete] for c in columns[:-1]], list(self.feature_bounds))
        y = normalize_target(columns[-1][complete], self.target_bounds, self.loss)  # type: ignore[arg-type]
        w = np.asarray(self.weights, dtype=np.float64)
        return count, gradient_sum(w, z, y, self.loss)  # type: ignore[arg-type]
