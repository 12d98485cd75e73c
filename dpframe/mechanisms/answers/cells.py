"""What a released column holds: each cell's value, its affine form, and how it is shown.

:class:`ReleasedCells` is the state of the ``dp`` dtype's array
(:class:`~dpframe.mechanisms.answers.array.DPArray`) and what reads it: the
values, their forms over the releases' errors
(:class:`~dpframe.mechanisms.answers.forms.Forms`), whether they are counts,
where each form is centred; each cell's interval at any level and its text
``value ± half-width``; rows taken out and arrays joined, forms and all.  The
arithmetic (:mod:`~dpframe.mechanisms.answers.arithmetic`) and pandas'
protocol (:mod:`~dpframe.mechanisms.answers.array`) build on it.

Post-processing of released values and public noise facts: free of privacy cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from pandas.api.extensions import ExtensionArray

from dpframe.errors import DPError
from dpframe.mechanisms.answers.display import LEVEL, shown_interval
from dpframe.mechanisms.answers.forms import Block, Forms, check_level

__all__ = ["FloatArray", "ReleasedCells"]

FloatArray = npt.NDArray[np.float64]
_Cells = TypeVar("_Cells", bound="ReleasedCells")


class ReleasedCells(ExtensionArray):
    """Released numbers with their affine forms: the state of a ``dp`` array.

    Args:
        values: the released values (NaN: missing).
        forms: one affine form per value.
        integer: the values are whole numbers (counts, an integer column's
            quantiles), shown without decimals: one flag for every cell, or one
            per cell (``describe``: its count row and an integer column's
            quartiles, beside means and deviations).
        centers: where each form is centred, when the values shown differ from
            it (after ``round``: the truth's interval is the unrounded value's);
            default: the values.
    """

    def __init__(
        self,
        values: Any,
        forms: Forms,
        integer: bool | npt.NDArray[np.bool_] = False,
        centers: Any = None,
    ) -> None:
        self._values = np.asarray(values, dtype=float)
        if forms.cells != len(self._values):
            raise ValueError("one form per value")
        self._forms = forms
        self._whole: npt.NDArray[np.bool_] = np.broadcast_to(
            np.asarray(integer, dtype=bool), self._values.shape
        ).copy()
        self._centers = self._values if centers is None else np.asarray(centers, dtype=float)

    @classmethod
    def of_block(
        cls: type[_Cells],
        values: Any,
        block: Block,
        integer: bool | npt.NDArray[np.bool_] = False,
    ) -> _Cells:
        """A release's own cells: cell k carries error k of ``block``."""
        return cls(values, Forms.of_block(block), integer)

    @property
    def values(self) -> FloatArray:
        """The released values (a copy is not made: do not modify)."""
        return self._values

    @property
    def forms(self) -> Forms:
        """The cells' affine forms."""
        return self._forms

    @property
    def integer(self) -> bool:
        """True when every cell is a whole number on screen (counts)."""
        return bool(self._whole.all())

    @property
    def whole(self) -> npt.NDArray[np.bool_]:
        """Per cell: shown as a whole number (do not modify)."""
        return self._whole

    @property
    def centers(self) -> FloatArray:
        """Where each cell's form is centred: the values (unrounded, after ``round``)."""
        return self._centers

    def __len__(self) -> int:
        return len(self._values)

    def intervals(self, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
        """Per cell, (low, high) containing the (clamped) truth with probability ≥ ``level``."""
        level = check_level(level)
        low, high = self._forms.intervals(self._centers, level)
        missing = np.isnan(self._values)
        if not missing.any():  # nothing to blank (the usual case): no copies
            return low, high
        return np.where(missing, np.nan, low), np.where(missing, np.nan, high)

    def cell_text(self, i: int) -> str:
        """Cell ``i`` as shown: ``value ± half-width`` (95%), ``<NA>`` when missing."""
        value = float(self._values[i])
        if np.isnan(value):
            return "<NA>"
        one = self._take_rows(np.array([i]))
        try:
            low, high = one.forms.intervals(one.centers, LEVEL)
        except DPError:  # no value interval (a quantile's rank error)
            return f"{value:,.0f}" if self._whole[i] else f"{value:.6g}"
        return shown_interval(value, float(low[0]), float(high[0]), bool(self._whole[i]))[0]

    def _take_rows(self: _Cells, rows: npt.NDArray[np.int64]) -> _Cells:
        def pick(array: FloatArray) -> FloatArray:
            found = array[np.maximum(rows, 0)] if len(self) else np.zeros(len(rows))
            return np.where(rows < 0, np.nan, found)

        centers = None if self._centers is self._values else pick(self._centers)
        whole = self._whole[np.maximum(rows, 0)] if len(self) else np.zeros(len(rows), bool)
        return type(self)(pick(self._values), self._forms.take(rows), whole, centers)

    @classmethod
    def _concat_same_type(cls: type[_Cells], to_concat: Sequence[_Cells]) -> _Cells:
        parts = list(to_concat)
        values = np.concatenate([p.values for p in parts]) if parts else np.array([])
        centers = np.concatenate([p.centers for p in parts]) if parts else np.array([])
        forms = Forms.concat([p.forms for p in parts])
        whole = np.concatenate([p.whole for p in parts]) if parts else np.array([], bool)
        return cls(values, forms, whole, centers)
