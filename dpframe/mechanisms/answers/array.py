"""The ``dp`` dtype: released numbers whose uncertainty travels with them through pandas.

A released Series or DataFrame column holds a :class:`DPArray`: each cell a
value and its affine form over the releases' errors
(:class:`~dpframe.mechanisms.answers.forms.Forms`).  pandas keeps the forms
through selection (``loc``, ``iloc``, masks), ``sort_values``,
``sort_index``, ``head``/``tail``, ``nlargest``/``nsmallest``, ``reindex``,
``rename``, ``stack``/``unstack``, ``T`` and ``pd.concat``; ``+``, ``-``,
multiplication and division by public numbers and ``cumsum`` propagate them
exactly; a ratio or product of two released columns gets the Bonferroni
box of its operands' intervals.  Every cell prints as ``value ± half-width``
(the 95% interval's larger half), in any kernel, in ``print`` and
``to_string``.  A step that cannot carry the uncertainty (``np.log``,
``abs``, ``max``) returns plain floats with a warning, never a silently
wrong interval; ``.dp.raw`` gives the plain values on purpose.

This module is pandas' side of it: the dtype, the ExtensionArray protocol
(construction, selection, assignment, conversion) and the reductions.  What
the array holds is :mod:`~dpframe.mechanisms.answers.cells`, its operators
:mod:`~dpframe.mechanisms.answers.arithmetic`, a single cell
:mod:`~dpframe.mechanisms.answers.value`.

Post-processing of released values and public noise facts: free of privacy cost.
"""

from __future__ import annotations

import builtins
import sys
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api.extensions import ExtensionDtype, register_extension_dtype

from dpframe.errors import DPError
from dpframe.mechanisms.answers.arithmetic import (
    ArrayArithmetic,
    PlainResultWarning,
    scipy_sparse,
    warn_plain,
)
from dpframe.mechanisms.answers.cells import FloatArray
from dpframe.mechanisms.answers.forms import Block, Forms
from dpframe.mechanisms.answers.value import DPValue

# DPValue: the dtype's scalar type (``DPDtype.type``), also named here beside the dtype.
__all__ = ["PLAIN_CELL", "DPArray", "DPDtype", "DPValue"]

#: Why a cell made from a plain number has no interval.  pandas hands a dp column
#: plain floats when a row is added (``df.loc["All"] = df.sum()``, ``pd.concat`` of a
#: row built from released values): their noise is lost there, and calling them exact
#: (a zero-width interval) would be a silent trap.
PLAIN_CELL = (
    "a plain number placed in a released table: its noise is not known here (rows added "
    "with df.loc[...] = ... or pd.concat lose it; add them through .T, as t = df.T; "
    "t['All'] = t.sum(axis=1); t.T, to keep every interval)"
)

_DENSE_LIMIT = 20_000_000


def _outside_pandas() -> int:
    """The ``stacklevel`` of the first caller outside dpframe and pandas (the analyst's line)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
        ("dpframe.", "pandas.")
    ):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level  # cells x terms of a cumulative sum, as a dense matrix


@register_extension_dtype
class DPDtype(ExtensionDtype):
    """The dtype of released numbers (``dtype: dp``)."""

    name = "dp"
    na_value = np.nan
    type = DPValue  # the scalar type
    _is_numeric = True

    @classmethod
    def construct_array_type(cls) -> builtins.type[DPArray]:
        """The array type: :class:`DPArray`."""
        return DPArray


class DPArray(ArrayArithmetic):
    """Released numbers with their affine forms (see the module docstring).

    Args:
        values: the released values (NaN: missing).
        forms: one affine form per value.
        integer: the values are counts, shown as whole numbers.
        centers: where each form is centred, when the values shown differ from
            it (after ``round``: the truth's interval is the unrounded value's);
            default: the values.
    """

    # -- the ExtensionArray protocol ---------------------------------------------------

    @property
    def dtype(self) -> DPDtype:
        """The ``dp`` dtype."""
        return DPDtype()

    @property
    def nbytes(self) -> int:
        """Memory of the values and forms."""
        matrix = self._forms.matrix
        return int(self._values.nbytes + matrix.data.nbytes + matrix.indices.nbytes)

    @classmethod
    def _from_sequence(cls, scalars: Any, *, dtype: Any = None, copy: bool = False) -> DPArray:
        items = list(scalars)
        parts: list[DPArray] = []
        for item in items:
            if isinstance(item, DPValue):
                parts.append(item.as_array())
            else:  # a plain number as a cell: its noise, if it had any, is not known
                value = np.nan if item is None or item is pd.NA else float(item)
                parts.append(DPArray([value], Forms.of_block(Block(1, reason=PLAIN_CELL))))
        if not parts:
            return DPArray([], Forms.exact(0))
        return cls._concat_same_type(parts)

    @classmethod
    def _from_scalars(cls, scalars: Any, *, dtype: Any) -> DPArray:
        """The strict cast pandas tries after ``map``/``apply``: released cells only.

        A function dpframe can follow (``lambda v: 2 * v + 1``) returns cells
        that carry their forms; any other (``v ** 2``, ``math.log``) returns
        plain numbers, refused here with a :class:`PlainResultWarning`, so
        pandas falls back to a plain float column rather than cells that show
        no interval without a word.
        """
        items = list(scalars)
        if all(isinstance(item, DPValue) for item in items):
            return cls._from_sequence(items, dtype=dtype)
        if any(isinstance(i, (float, int, np.number)) and not isinstance(i, bool) for i in items):
            warnings.warn(
                "A function applied to released values (apply, map) gave plain numbers: "
                "their intervals are not known (use .dp.ci() before this step to keep them, "
                "or a function of the form a * v + b, which keeps them).",
                PlainResultWarning,
                stacklevel=_outside_pandas(),
            )
        raise TypeError("plain numbers are not released cells")

    @classmethod
    def _from_factorized(cls, values: Any, original: DPArray) -> DPArray:
        return DPArray(values, Forms.exact(len(values)))

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, np.integer)):
            index = int(item)
            if index < 0:
                index += len(self)
            if not 0 <= index < len(self):
                raise IndexError("index out of range")
            if np.isnan(self._values[index]):
                return np.nan  # a missing cell is the dtype's missing value, as pandas gives it
            return DPValue(self._take_rows(np.array([index])))
        if isinstance(item, tuple) and len(item) == 1:
            item = item[0]
        rows = np.arange(len(self))[item]
        return self._take_rows(np.atleast_1d(rows).astype(np.int64))

    def __setitem__(self, key: Any, value: Any) -> None:
        positions = np.atleast_1d(np.arange(len(self))[key]).astype(np.int64)
        if isinstance(value, DPArray):
            new = value
        elif isinstance(value, DPValue):
            new = self._concat_same_type([value.as_array()] * len(positions))
        else:  # public numbers assigned on purpose (s[i] = 0, fillna(0)): exact cells
            items = np.broadcast_to(np.asarray(value, dtype=object), len(positions))
            parts = [
                item.as_array()
                if isinstance(item, DPValue)
                else DPArray(
                    [np.nan if item is None or item is pd.NA else float(item)], Forms.exact(1)
                )
                for item in items
            ]
            new = self._concat_same_type(parts) if parts else DPArray([], Forms.exact(0))
        if len(new) != len(positions):
            raise ValueError("as many values as positions")
        both = self._concat_same_type([self, new])
        order = np.arange(len(self))
        order[positions] = len(self) + np.arange(len(positions))
        taken = both.take(order)
        self._values, self._forms, self._centers = taken.values, taken.forms, taken.centers
        self._whole = taken.whole

    def isna(self) -> npt.NDArray[np.bool_]:
        """True where the value is missing."""
        missing: npt.NDArray[np.bool_] = np.isnan(self._values)
        return missing

    def take(self, indices: Any, allow_fill: bool = False, fill_value: Any = None) -> DPArray:
        """Cells at ``indices`` (−1 with ``allow_fill``: a missing cell)."""
        rows = np.asarray(indices, dtype=np.int64)
        if allow_fill:
            if fill_value is not None and not pd.isna(fill_value):
                raise ValueError("a released column fills only with missing values")
            if (rows < -1).any():
                raise ValueError("invalid take index")
            return self._take_rows(rows)
        rows = np.where(rows < 0, rows + len(self), rows)
        if len(rows) and ((rows < 0) | (rows >= len(self))).any():
            raise IndexError("index out of range")
        return self._take_rows(rows)

    def tolist(self) -> list[float]:
        """The plain released values (as ``to_numpy``; ``.dp.ci()`` gives their intervals)."""
        values: list[float] = self._values.tolist()
        return values

    def copy(self) -> DPArray:
        """A copy (the forms are immutable and shared)."""
        centers = None if self._centers is self._values else self._centers.copy()
        return DPArray(self._values.copy(), self._forms, self._whole, centers)

    def _values_for_argsort(self) -> FloatArray:
        return self._values

    def argmax(self, skipna: bool = True) -> int:
        """As pandas (``idxmax`` uses it); warns when another cell's interval reaches this one's."""
        position = int(cast(Any, super()).argmax(skipna=skipna))
        self._warn_unsettled(position, "largest")
        return position

    def argmin(self, skipna: bool = True) -> int:
        """As pandas (``idxmin`` uses it); warns when another cell's interval reaches this one's."""
        position = int(cast(Any, super()).argmin(skipna=skipna))
        self._warn_unsettled(position, "smallest")
        return position

    def _warn_unsettled(self, position: int, which: str) -> None:
        """Warn when the released values do not settle which cell is the ``which`` one.

        Another cell whose 95% interval reaches the chosen cell's may hold the
        true extreme.  Post-processing of the released values: free.
        """
        try:
            low, high = self.intervals(0.95)
        except DPError:  # cells without a value interval: nothing to compare
            return
        others = np.arange(len(self)) != position
        if which == "largest":
            reach = high[others] >= low[position]
        else:
            reach = low[others] <= high[position]
        if bool(np.any(reach & ~np.isnan(high[others]))):
            advice = (
                'pf.groupby(key).argmax("mean", column, epsilon=...) chooses privately and '
                "states how sure the choice is"
                if which == "largest"
                else "dp.ci(result) shows every cell's interval"
            )
            warnings.warn(
                f"The chosen cell is the {which} by its released value, but another cell's 95% "
                "interval overlaps its own: these releases do not settle which group's true value "
                f"is the {which}; {advice}.",
                PlainResultWarning,
                stacklevel=_outside_pandas(),
            )

    def _values_for_factorize(self) -> tuple[FloatArray, float]:
        return self._values, np.nan

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if dtype is not None and np.dtype(dtype) == object:
            out = np.empty(len(self), dtype=object)
            for i in range(len(self)):
                out[i] = np.nan if np.isnan(self._values[i]) else self[i]
            return out
        return self._values.astype(float if dtype is None else dtype)

    def _formatter(self, boxed: bool = False) -> Callable[[Any], str]:
        return lambda cell: "<NA>" if not isinstance(cell, DPValue) else repr(cell)

    def round(self, decimals: int = 0, *args: Any, **kwargs: Any) -> DPArray:
        """The values rounded for the eye (the intervals are the truth's, unchanged)."""
        rounded = np.round(self._values, decimals)
        return DPArray(rounded, self._forms, self._whole, self._centers)

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """As pandas: ``dp`` stays; numbers give the plain values (``.dp.raw``)."""
        if isinstance(dtype, DPDtype) or dtype == "dp":
            return self.copy() if copy else self
        if pd.api.types.pandas_dtype(dtype) == np.dtype(object):
            return np.asarray(self, dtype=object)
        return super().astype(dtype, copy=copy)

    # -- reductions and accumulations ---------------------------------------------------

    def _reduce(
        self, name: str, *, skipna: bool = True, keepdims: bool = False, **kwargs: Any
    ) -> Any:
        present = ~np.isnan(self._values)
        if name in ("sum", "mean"):
            weights = np.where(present, 1.0, 0.0) if skipna else np.ones(len(self))
            if not skipna and not present.all():
                total: Any = np.nan
            else:
                sparse = scipy_sparse()
                row = sparse.csr_array(weights.reshape(1, -1))
                value = float(np.nansum(self._values) if skipna else self._values.sum())
                center = float(np.nansum(self._centers) if skipna else self._centers.sum())
                one = DPArray([value], self._forms.mixed(row), self.integer, [center])
                if name == "mean":
                    count = float(present.sum())
                    one = one / count if count else DPArray([np.nan], Forms.exact(1))
                total = DPValue(one)
            return self._from_sequence([total]) if keepdims else total
        warn_plain(f"{name}()")
        values = self._values[present] if skipna else self._values
        result = getattr(np, name)(values) if len(values) else np.nan
        return np.array([result]) if keepdims else result

    def _accumulate(self, name: str, *, skipna: bool = True, **kwargs: Any) -> Any:
        if name != "cumsum":
            warn_plain(name)
            return getattr(np, name)(self._values)
        n, terms = len(self), self._forms.matrix.shape[1]
        if n * max(terms, 1) > _DENSE_LIMIT:
            warn_plain("cumsum of this many cells")
            return np.cumsum(self._values)

        def running(array: FloatArray) -> FloatArray:
            return np.cumsum(np.nan_to_num(array)) if skipna else np.cumsum(array)

        sparse = scipy_sparse()
        lower = sparse.csr_array(np.tril(np.ones((n, n))))
        forms = self._forms.mixed(lower)
        whole = np.logical_and.accumulate(self._whole) if n else self._whole
        return DPArray(running(self._values), forms, whole, running(self._centers))

    def rolling_sums(self, window: int) -> DPArray:
        """Sums over each window of ``window`` cells ending at each cell (NaN before it)."""
        n = len(self)
        if not isinstance(window, int) or window < 1:
            raise DPError("rolling(window): a whole number of cells, at least 1.")
        weights = np.zeros((n, n))
        for i in range(window - 1, n):
            weights[i, i - window + 1 : i + 1] = 1.0
        sparse = scipy_sparse()

        def windows(array: FloatArray) -> FloatArray:
            sums = np.convolve(np.nan_to_num(array), np.ones(window))[:n]
            return np.where(np.arange(n) >= window - 1, sums, np.nan)

        forms = self._forms.mixed(sparse.csr_array(weights))
        return DPArray(windows(self._values), forms, self.integer, windows(self._centers))
