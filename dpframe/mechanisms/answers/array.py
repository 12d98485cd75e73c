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

Post-processing of released values and public noise facts: free of privacy cost.
"""

from __future__ import annotations

import builtins
import numbers
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api.extensions import (
    ExtensionArray,
    ExtensionDtype,
    register_extension_dtype,
)

from dpframe.errors import DPError
from dpframe.mechanisms.answers.display import LEVEL, shown_interval
from dpframe.mechanisms.answers.forms import Block, Forms, check_level

__all__ = ["DPArray", "DPDtype", "DPValue", "PlainResultWarning"]

FloatArray = npt.NDArray[np.float64]
_DENSE_LIMIT = 20_000_000  # cells x terms of a cumulative sum, as a dense matrix


class PlainResultWarning(UserWarning):
    """A pandas step could not carry the released values' uncertainty: plain numbers follow."""


def _plain(what: str) -> None:
    warnings.warn(
        f"{what} cannot carry the released values' intervals; the result holds plain "
        "numbers (use .dp.ci() before this step to keep them).",
        PlainResultWarning,
        stacklevel=4,
    )


class _QuotientModel:
    """The truth of ``a op b`` for two released arrays: the box of their intervals (Bonferroni).

    ``a / b``: [min, max] of the four quotients of the ends when b's interval
    excludes 0, else unbounded; ``a * b``: of the four products.  Each
    operand's interval is taken at 1 − (1 − level)/2.
    """

    def __init__(self, first: DPArray, second: DPArray, op: str) -> None:
        self._first, self._second, self._op = first, second, op

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        each = 1 - (1 - level) / 2
        a_lo, a_hi = self._first.intervals(each)
        b_lo, b_hi = self._second.intervals(each)
        if self._op == "*":
            ends = [a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi]
            return np.minimum.reduce(ends), np.maximum.reduce(ends)
        with np.errstate(divide="ignore", invalid="ignore"):
            ends = [a_lo / b_lo, a_lo / b_hi, a_hi / b_lo, a_hi / b_hi]
        low, high = np.minimum.reduce(ends), np.maximum.reduce(ends)
        spans_zero = (b_lo <= 0) & (b_hi >= 0)
        return np.where(spans_zero, -np.inf, low), np.where(spans_zero, np.inf, high)


class DPValue(numbers.Real):
    """One released number (a cell of a :class:`DPArray`): a float with its interval.

    Arithmetic with numbers and other released numbers keeps the interval;
    comparisons, ``float()`` and formatting use the value.
    """

    __slots__ = ("_array",)

    def __init__(self, array: DPArray) -> None:
        if len(array) != 1:
            raise ValueError("A DPValue is one cell.")
        self._array = array

    @property
    def value(self) -> float:
        """The released value."""
        return float(self._array.values[0])

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """(low, high) containing the (clamped) truth with probability at least ``level``."""
        low, high = self._array.intervals(level)
        return float(low[0]), float(high[0])

    def as_array(self) -> DPArray:
        """This value as a one-cell array."""
        return self._array

    def __repr__(self) -> str:
        return self._array.cell_text(0)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self.value, spec) if spec else repr(self)

    def __float__(self) -> float:
        return self.value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The value as a 0-d array, so numpy functions (``np.isnan``, ``np.sqrt``) accept it."""
        return np.asarray(self.value, dtype=dtype)

    def __int__(self) -> int:
        return int(self.value)

    def __trunc__(self) -> int:
        return int(self.value)

    def __floor__(self) -> int:
        return int(np.floor(self.value))

    def __ceil__(self) -> int:
        return int(np.ceil(self.value))

    def __round__(self, ndigits: int | None = None) -> Any:
        return round(self.value, ndigits)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: object) -> bool:
        try:
            return self.value == float(other)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return NotImplemented

    def __lt__(self, other: Any) -> bool:
        return self.value < float(other)

    def __le__(self, other: Any) -> bool:
        return self.value <= float(other)

    def __gt__(self, other: Any) -> bool:
        return self.value > float(other)

    def __ge__(self, other: Any) -> bool:
        return self.value >= float(other)

    def _op(self, other: Any, op: str, reverse: bool = False) -> Any:
        found = self._array._arith(other, op, reverse)
        if found is NotImplemented:
            return NotImplemented
        return found[0] if isinstance(found, DPArray) else found

    def __add__(self, other: Any) -> Any:
        return self._op(other, "+")

    def __radd__(self, other: Any) -> Any:
        return self._op(other, "+", True)

    def __sub__(self, other: Any) -> Any:
        return self._op(other, "-")

    def __rsub__(self, other: Any) -> Any:
        return self._op(other, "-", True)

    def __mul__(self, other: Any) -> Any:
        return self._op(other, "*")

    def __rmul__(self, other: Any) -> Any:
        return self._op(other, "*", True)

    def __truediv__(self, other: Any) -> Any:
        return self._op(other, "/")

    def __rtruediv__(self, other: Any) -> Any:
        return self._op(other, "/", True)

    def __neg__(self) -> Any:
        return self._op(-1.0, "*")

    def __pos__(self) -> DPValue:
        return self

    def __abs__(self) -> float:
        return abs(self.value)

    def __floordiv__(self, other: Any) -> float:
        return self.value // float(other)

    def __rfloordiv__(self, other: Any) -> float:
        return float(other) // self.value

    def __mod__(self, other: Any) -> float:
        return self.value % float(other)

    def __rmod__(self, other: Any) -> float:
        return float(other) % self.value

    def __pow__(self, other: Any, modulo: Any = None) -> float:
        return float(self.value ** float(other))

    def __rpow__(self, other: Any) -> float:
        return float(float(other) ** self.value)


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


class DPArray(ExtensionArray):
    """Released numbers with their affine forms (see the module docstring).

    Args:
        values: the released values (NaN: missing).
        forms: one affine form per value.
        integer: the values are counts, shown as whole numbers.
        centers: where each form is centred, when the values shown differ from
            it (after ``round``: the truth's interval is the unrounded value's);
            default: the values.
    """

    __array_priority__ = 1000

    def __init__(
        self, values: Any, forms: Forms, integer: bool = False, centers: Any = None
    ) -> None:
        self._values = np.asarray(values, dtype=float)
        if forms.cells != len(self._values):
            raise ValueError("one form per value")
        self._forms = forms
        self._integer = bool(integer)
        self._centers = self._values if centers is None else np.asarray(centers, dtype=float)

    # -- what it holds --------------------------------------------------------------

    @staticmethod
    def of_block(values: Any, block: Block, integer: bool = False) -> DPArray:
        """A release's own cells: cell k carries error k of ``block``."""
        return DPArray(values, Forms.of_block(block), integer)

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
        """True for counts (whole numbers on screen)."""
        return self._integer

    def intervals(self, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
        """Per cell, (low, high) containing the (clamped) truth with probability ≥ ``level``."""
        level = check_level(level)
        low, high = self._forms.intervals(self._centers, level)
        missing = np.isnan(self._values)
        return np.where(missing, np.nan, low), np.where(missing, np.nan, high)

    def cell_text(self, i: int) -> str:
        """Cell ``i`` as shown: ``value ± half-width`` (95%), ``<NA>`` when missing."""
        value = float(self._values[i])
        if np.isnan(value):
            return "<NA>"
        one = self._take_rows(np.array([i]))
        try:
            low, high = one._forms.intervals(one._centers, LEVEL)
        except DPError:  # no value interval (a quantile's rank error)
            return f"{value:,.0f}" if self._integer else f"{value:.6g}"
        return shown_interval(value, float(low[0]), float(high[0]), self._integer)[0]

    # -- the ExtensionArray protocol ---------------------------------------------------

    @property
    def dtype(self) -> DPDtype:
        """The ``dp`` dtype."""
        return DPDtype()

    def __len__(self) -> int:
        return len(self._values)

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
            else:
                value = np.nan if item is None or item is pd.NA else float(item)
                parts.append(DPArray([value], Forms.exact(1)))
        if not parts:
            return DPArray([], Forms.exact(0))
        return cls._concat_same_type(parts)

    @classmethod
    def _from_factorized(cls, values: Any, original: DPArray) -> DPArray:
        return DPArray(values, Forms.exact(len(values)))

    def _take_rows(self, rows: npt.NDArray[np.int64]) -> DPArray:
        def pick(array: FloatArray) -> FloatArray:
            found = array[np.maximum(rows, 0)] if len(self) else np.zeros(len(rows))
            return np.where(rows < 0, np.nan, found)

        centers = None if self._centers is self._values else pick(self._centers)
        return DPArray(pick(self._values), self._forms.take(rows), self._integer, centers)

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
            new = DPArray._concat_same_type([value.as_array()] * len(positions))
        else:
            new = DPArray._from_sequence(
                np.broadcast_to(np.asarray(value, dtype=object), len(positions))
            )
        if len(new) != len(positions):
            raise ValueError("as many values as positions")
        both = DPArray._concat_same_type([self, new])
        order = np.arange(len(self))
        order[positions] = len(self) + np.arange(len(positions))
        taken = both._take_rows(order)
        self._values, self._forms, self._centers = taken._values, taken._forms, taken._centers
        self._integer = self._integer and new._integer

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
        return DPArray(self._values.copy(), self._forms, self._integer, centers)

    @classmethod
    def _concat_same_type(cls, to_concat: Sequence[DPArray]) -> DPArray:
        parts = list(to_concat)
        values = np.concatenate([p._values for p in parts]) if parts else np.array([])
        centers = np.concatenate([p._centers for p in parts]) if parts else np.array([])
        forms = Forms.concat([p._forms for p in parts])
        return DPArray(values, forms, all(p._integer for p in parts), centers)

    def _values_for_argsort(self) -> FloatArray:
        return self._values

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
        return DPArray(rounded, self._forms, self._integer, self._centers)

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """As pandas: ``dp`` stays; numbers give the plain values (``.dp.raw``)."""
        if isinstance(dtype, DPDtype) or dtype == "dp":
            return self.copy() if copy else self
        if pd.api.types.pandas_dtype(dtype) == np.dtype(object):
            return np.asarray(self, dtype=object)
        return super().astype(dtype, copy=copy)

    # -- arithmetic (the intervals follow) ---------------------------------------------

    def _operand(self, other: Any) -> DPArray | None:
        """``other`` as an array of this length (public numbers: exact cells), or None."""
        if isinstance(other, DPArray):
            return other
        if isinstance(other, DPValue):
            return DPArray._concat_same_type([other.as_array()] * len(self))
        if isinstance(other, bool):
            return None
        if isinstance(other, (numbers.Number, np.number)):
            return DPArray(np.full(len(self), float(cast(float, other))), Forms.exact(len(self)))
        if isinstance(other, (np.ndarray, list)) and np.asarray(other).dtype.kind in "iuf":
            return DPArray(np.asarray(other, dtype=float), Forms.exact(len(self)))
        return None

    def _arith(self, other: Any, op: str, reverse: bool = False) -> Any:
        if isinstance(other, (pd.Series, pd.Index, pd.DataFrame)):
            return NotImplemented
        found = self._operand(other)
        if found is None:
            return NotImplemented
        first, second = (found, self) if reverse else (self, found)
        integer = first._integer and second._integer
        apply = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
        with np.errstate(divide="ignore", invalid="ignore"):  # x / 0: inf or NaN, as pandas
            values = apply[op](first._values, second._values)
            centers = apply[op](first._centers, second._centers)
        exact_first, exact_second = not first._forms.blocks, not second._forms.blocks
        if op in ("+", "-"):
            sign = 1.0 if op == "+" else -1.0
            forms = Forms.combine(first._forms, 1.0, second._forms, sign)
            return DPArray(values, forms, integer, centers)
        if op == "*" and (exact_first or exact_second):
            constant, released = (first, second) if exact_first else (second, first)
            weights = _diagonal(constant._values)
            integer = integer and bool(np.all(constant._values == np.round(constant._values)))
            return DPArray(values, released._forms.mixed(weights), integer, centers)
        if op == "/" and exact_second:
            with np.errstate(divide="ignore"):
                weights = _diagonal(1.0 / second._values)
            return DPArray(values, first._forms.mixed(weights), False, centers)
        model = _QuotientModel(first, second, op)
        block = Block(len(values), model=model, released=np.asarray(centers, dtype=float))
        return DPArray(values, Forms.of_block(block), False, centers)

    def __add__(self, other: Any) -> Any:
        return self._arith(other, "+")

    def __radd__(self, other: Any) -> Any:
        return self._arith(other, "+", True)

    def __sub__(self, other: Any) -> Any:
        return self._arith(other, "-")

    def __rsub__(self, other: Any) -> Any:
        return self._arith(other, "-", True)

    def __mul__(self, other: Any) -> Any:
        return self._arith(other, "*")

    def __rmul__(self, other: Any) -> Any:
        return self._arith(other, "*", True)

    def __truediv__(self, other: Any) -> Any:
        return self._arith(other, "/")

    def __rtruediv__(self, other: Any) -> Any:
        return self._arith(other, "/", True)

    def __neg__(self) -> DPArray:
        return DPArray(-self._values, self._forms.scaled(-1.0), self._integer, -self._centers)

    def __pos__(self) -> DPArray:
        return self

    def _compare(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        if isinstance(other, (pd.Series, pd.Index, pd.DataFrame)):
            return NotImplemented
        if isinstance(other, DPArray):
            return op(self._values, other._values)
        if isinstance(other, DPValue):
            return op(self._values, other.value)
        return op(self._values, other)

    def __eq__(self, other: object) -> Any:
        return self._compare(other, operator.eq)

    def __ne__(self, other: object) -> Any:
        return self._compare(other, operator.ne)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, operator.ge)

    def _plain_op(self, other: Any, op: Callable[[Any, Any], Any], name: str) -> Any:
        _plain(name)
        found = self._operand(other)
        right = found._values if found is not None else other
        return op(self._values, right)

    def __floordiv__(self, other: Any) -> Any:
        return self._plain_op(other, operator.floordiv, "//")

    def __mod__(self, other: Any) -> Any:
        return self._plain_op(other, operator.mod, "%")

    def __pow__(self, other: Any) -> Any:
        return self._plain_op(other, operator.pow, "**")

    def __abs__(self) -> Any:
        _plain("abs()")
        return np.abs(self._values)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Numpy's ``add``/``subtract``/``multiply``/``divide``/``negative`` keep the forms."""
        routes = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/"}
        if method == "__call__" and not kwargs and ufunc.__name__ in routes and len(inputs) == 2:
            left, right = inputs
            if isinstance(left, DPArray):
                return left._arith(right, routes[ufunc.__name__])
            return right._arith(left, routes[ufunc.__name__], reverse=True)
        if method == "__call__" and ufunc.__name__ == "negative" and len(inputs) == 1:
            return -self
        if any(isinstance(x, (pd.Series, pd.Index, pd.DataFrame)) for x in inputs):
            return NotImplemented
        _plain(f"numpy.{ufunc.__name__}")
        plain = [x._values if isinstance(x, DPArray) else x for x in inputs]
        return getattr(ufunc, method)(*plain, **kwargs)

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
                sparse = _sparse()
                row = sparse.csr_array(weights.reshape(1, -1))
                value = float(np.nansum(self._values) if skipna else self._values.sum())
                center = float(np.nansum(self._centers) if skipna else self._centers.sum())
                one = DPArray([value], self._forms.mixed(row), self._integer, [center])
                if name == "mean":
                    count = float(present.sum())
                    one = one / count if count else DPArray([np.nan], Forms.exact(1))
                total = DPValue(one)
            return DPArray._from_sequence([total]) if keepdims else total
        _plain(f"{name}()")
        values = self._values[present] if skipna else self._values
        result = getattr(np, name)(values) if len(values) else np.nan
        return np.array([result]) if keepdims else result

    def _accumulate(self, name: str, *, skipna: bool = True, **kwargs: Any) -> Any:
        if name != "cumsum":
            _plain(name)
            return getattr(np, name)(self._values)
        n, terms = len(self), self._forms.matrix.shape[1]
        if n * max(terms, 1) > _DENSE_LIMIT:
            _plain("cumsum of this many cells")
            return np.cumsum(self._values)

        def running(array: FloatArray) -> FloatArray:
            return np.cumsum(np.nan_to_num(array)) if skipna else np.cumsum(array)

        sparse = _sparse()
        lower = sparse.csr_array(np.tril(np.ones((n, n))))
        forms = self._forms.mixed(lower)
        return DPArray(running(self._values), forms, self._integer, running(self._centers))

    def rolling_sums(self, window: int) -> DPArray:
        """Sums over each window of ``window`` cells ending at each cell (NaN before it)."""
        n = len(self)
        if not isinstance(window, int) or window < 1:
            raise DPError("rolling(window): a whole number of cells, at least 1.")
        weights = np.zeros((n, n))
        for i in range(window - 1, n):
            weights[i, i - window + 1 : i + 1] = 1.0
        sparse = _sparse()

        def windows(array: FloatArray) -> FloatArray:
            sums = np.convolve(np.nan_to_num(array), np.ones(window))[:n]
            return np.where(np.arange(n) >= window - 1, sums, np.nan)

        forms = self._forms.mixed(sparse.csr_array(weights))
        return DPArray(windows(self._values), forms, self._integer, windows(self._centers))


def _diagonal(values: FloatArray) -> Any:
    """A sparse diagonal matrix (csr_array; ``diags_array`` is scipy ≥ 1.11 only)."""
    diagonal = np.asarray(values, dtype=float)
    n = len(diagonal)
    return _sparse().csr_array((diagonal, (np.arange(n), np.arange(n))), shape=(n, n))


def _sparse() -> Any:
    from scipy import sparse  # imported where first needed

    return sparse
