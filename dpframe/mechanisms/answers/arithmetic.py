"""The ``dp`` array's arithmetic: the intervals follow ``+``, ``-``, ``*`` and ``/``.

``+`` and ``-`` of released columns, and multiplication and division by
public numbers, combine the cells' affine forms exactly; a ratio or product
of two released columns gets the Bonferroni box of its operands' intervals
(:class:`_QuotientModel`).  Comparisons use the values.  A step that cannot
carry the uncertainty (``//``, ``%``, ``**``, ``abs``, other numpy functions)
returns plain floats with a :class:`PlainResultWarning`, never a silently
wrong interval.

Post-processing of released values and public noise facts: free of privacy cost.
"""

from __future__ import annotations

import numbers
import operator
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pandas as pd

from dpframe.mechanisms.answers.cells import FloatArray, ReleasedCells
from dpframe.mechanisms.answers.forms import Block, Forms
from dpframe.mechanisms.answers.value import DPValue

__all__ = ["ArrayArithmetic", "PlainResultWarning", "scipy_sparse", "warn_plain"]

_APPLY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
# numpy's ufuncs that keep the forms, and the array's own operators they stand for
_UFUNC_OPERATORS = {"add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "truediv"}


class PlainResultWarning(UserWarning):
    """A pandas step could not carry the released values' uncertainty: plain numbers follow."""


def warn_plain(what: str, stacklevel: int = 4) -> None:
    """Warn that ``what`` gives plain numbers (to the caller of the pandas step).

    ``stacklevel`` counts from this function: 4 reaches the caller of a pandas
    step on a ``dp`` array; a release's own operator passes 3.
    """
    warnings.warn(
        f"{what} cannot carry the released values' intervals; the result holds plain "
        "numbers (use .dp.ci() before this step to keep them).",
        PlainResultWarning,
        stacklevel=stacklevel,
    )


def scipy_sparse() -> Any:
    """``scipy.sparse``, imported where first needed (``import dpframe`` stays light)."""
    from scipy import sparse as module

    return module


def _diagonal(values: FloatArray) -> Any:
    """A sparse diagonal matrix (csr_array; ``diags_array`` is scipy ≥ 1.11 only)."""
    diagonal = np.asarray(values, dtype=float)
    n = len(diagonal)
    return scipy_sparse().csr_array((diagonal, (np.arange(n), np.arange(n))), shape=(n, n))


class _QuotientModel:
    """The truth of ``a op b`` for two released arrays: the box of their intervals (Bonferroni).

    ``a / b``: [min, max] of the four quotients of the ends when b's interval
    excludes 0, else unbounded; ``a * b``: of the four products.  Each
    operand's interval is taken at 1 − (1 − level)/2.
    """

    def __init__(self, first: ReleasedCells, second: ReleasedCells, op: str) -> None:
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


class ArrayArithmetic(ReleasedCells):
    """Operators of the ``dp`` array: the forms follow exact operations (module docstring)."""

    __array_priority__ = 1000

    def _operand(self, other: Any) -> ReleasedCells | None:
        """``other`` as an array of this length (public numbers: exact cells), or None."""
        if isinstance(other, ReleasedCells):
            return other
        if isinstance(getattr(other, "cell", None), DPValue):  # a scalar release
            other = other.cell
        if isinstance(other, DPValue):
            return self._concat_same_type([other.as_array()] * len(self))
        if isinstance(other, bool):
            return None
        if isinstance(other, (numbers.Number, np.number)):
            return type(self)(np.full(len(self), float(cast(float, other))), Forms.exact(len(self)))
        if isinstance(other, (np.ndarray, list)) and np.asarray(other).dtype.kind in "iuf":
            return type(self)(np.asarray(other, dtype=float), Forms.exact(len(self)))
        return None

    def _arith(self, other: Any, op: str, reverse: bool = False) -> Any:
        if isinstance(other, (pd.Series, pd.Index, pd.DataFrame)):
            return NotImplemented
        found = self._operand(other)
        if found is None:
            return NotImplemented
        first, second = (found, self) if reverse else (self, found)
        integer = first.whole & second.whole
        apply = _APPLY[op]
        with np.errstate(divide="ignore", invalid="ignore"):  # x / 0: inf or NaN, as pandas
            values = apply(first.values, second.values)
            centers = apply(first.centers, second.centers)
        exact_first, exact_second = not first.forms.blocks, not second.forms.blocks
        if op in ("+", "-"):
            sign = 1.0 if op == "+" else -1.0
            forms = Forms.combine(first.forms, 1.0, second.forms, sign)
            return type(self)(values, forms, integer, centers)
        if op == "*" and (exact_first or exact_second):
            constant, released = (first, second) if exact_first else (second, first)
            weights = _diagonal(constant.values)
            integer = integer & (constant.values == np.round(constant.values))
            return type(self)(values, released.forms.mixed(weights), integer, centers)
        if op == "/" and exact_second:
            with np.errstate(divide="ignore"):
                weights = _diagonal(1.0 / second.values)
            return type(self)(values, first.forms.mixed(weights), False, centers)
        model = _QuotientModel(first, second, op)
        block = Block(len(values), model=model, released=np.asarray(centers, dtype=float))
        return type(self)(values, Forms.of_block(block), False, centers)

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

    def __neg__(self) -> Any:
        return type(self)(-self._values, self._forms.scaled(-1.0), self._whole, -self._centers)

    def __pos__(self) -> Any:
        return self

    def _compare(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        if isinstance(other, (pd.Series, pd.Index, pd.DataFrame)):
            return NotImplemented
        if isinstance(other, ReleasedCells):
            return op(self._values, other.values)
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
        warn_plain(name)
        found = self._operand(other)
        right = found.values if found is not None else other
        return op(self._values, right)

    def __floordiv__(self, other: Any) -> Any:
        return self._plain_op(other, operator.floordiv, "//")

    def __mod__(self, other: Any) -> Any:
        return self._plain_op(other, operator.mod, "%")

    def __pow__(self, other: Any) -> Any:
        return self._plain_op(other, operator.pow, "**")

    def __abs__(self) -> Any:
        warn_plain("abs()")
        return np.abs(self._values)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Numpy's ``add``/``subtract``/``multiply``/``divide``/``negative`` keep the forms."""
        name = ufunc.__name__
        if method == "__call__" and not kwargs and name in _UFUNC_OPERATORS and len(inputs) == 2:
            left, right = inputs
            operator_name = _UFUNC_OPERATORS[name]
            if isinstance(left, ReleasedCells):
                return getattr(left, f"__{operator_name}__")(right)
            return getattr(right, f"__r{operator_name}__")(left)
        if method == "__call__" and name == "negative" and len(inputs) == 1:
            return -self
        if any(isinstance(x, (pd.Series, pd.Index, pd.DataFrame)) for x in inputs):
            return NotImplemented
        warn_plain(f"numpy.{name}")
        plain = [x.values if isinstance(x, ReleasedCells) else x for x in inputs]
        return getattr(ufunc, method)(*plain, **kwargs)
