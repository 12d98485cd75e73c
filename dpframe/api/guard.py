"""Guard rails shared by private frames and series: the ways raw rows must never leave.

Python's own protocols (``len``, iteration, ``bool``, ``in``, pickling, numpy
conversion) are refused by the methods here.  pandas attributes that would
show rows (``head``, ``values``, ``shape``...) are *not* attributes at all:
``__getattr__`` refuses them with an ``AttributeError`` subclass (see
:mod:`dpframe.api.teaching`), so ``hasattr`` is False, ``dir()`` and tab
completion list only what works, and the refusal says what to ask instead.
numpy's protocols turn ``np.mean(pf["x"])`` into a refusal naming
``pf["x"].mean(epsilon=...)``, and let numpy scalars take part in column
arithmetic (``np.float64(2) * pf["x"]`` is the expression ``x * 2``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, NoReturn

from dpframe.api.teaching import (
    REVEALING,
    UnknownAttributeError,
    library_caller,
    missing_attribute,
    refusal_for_function,
)
from dpframe.errors import PrivacyViolationError
from dpframe.plan.elementwise import bounded_ufunc

__all__ = ["RowGuard", "UnknownAttributeError"]

#: numpy ufuncs that are column arithmetic or comparisons: applied as the Python operator.
_OPERATORS: dict[str, Callable[..., Any]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "true_divide": operator.truediv,
    "power": operator.pow,
    "negative": operator.neg,
    "absolute": operator.abs,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "less": operator.lt,
    "less_equal": operator.le,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "bitwise_and": operator.and_,
    "logical_and": operator.and_,
    "bitwise_or": operator.or_,
    "logical_or": operator.or_,
    "invert": operator.invert,
    "logical_not": operator.invert,
}


def refuse(what: str) -> NoReturn:
    """Raise the error for an operation that would reveal raw values.

    When the operation came from a pandas or numpy function (``pd.cut(pf["x"])``
    asks for an array), the refusal names that function and what to write instead.
    """
    caller = library_caller()
    if caller is not None:
        raise refusal_for_function(*caller)
    raise PrivacyViolationError(
        f"{what} would reveal private rows, so dpframe refuses it. Ask for an "
        "aggregate instead (count, sum, mean, var, std, groupby(...)), each with epsilon=."
    )


def _scalar(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds; anything else unchanged."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    return value


class RowGuard:
    """Mixin: every path that yields raw values raises :class:`PrivacyViolationError`."""

    __slots__ = ()

    def _missing(self, name: str, extra: str = "") -> Exception:
        """The error for an attribute this object does not have (refused, taught or unknown).

        pandas asks every argument for ``_typ`` to tell its own frames and
        series apart (``isinstance(x, ABCDataFrame)``); asked from inside a pandas
        function (``pd.concat([pf])``), the answer is that function's refusal with
        what to write instead, not pandas' bare ``TypeError`` naming this class.
        """
        if name == "_typ":
            caller = library_caller()
            if caller is not None and caller[1].split(".")[0] == "pandas":
                return refusal_for_function(*caller)
        names = dir(self) if not name.startswith("_") else ()
        return missing_attribute(type(self).__name__, name, extra, names)

    def __dir__(self) -> list[str]:
        """What works: public methods and properties, never a refused pandas name."""
        return sorted(n for n in super().__dir__() if not n.startswith("_") and n not in REVEALING)

    def __len__(self) -> int:
        refuse("len() (the exact row count is private)")

    def __iter__(self) -> Any:
        refuse("Iteration")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        refuse("Conversion to a numpy array")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """``np.clip``/``np.round``/``np.where`` of a column build expressions; others refuse.

        A refused numpy function (``np.mean``, ``np.concatenate``...) names its
        private counterpart.
        """
        hook = getattr(type(self), "_numpy_function", None)
        if hook is not None:
            result = hook(func.__name__, tuple(args), dict(kwargs))
            if result is not None:
                return result
        raise refusal_for_function(func.__name__, getattr(func, "__module__", None) or "numpy")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Numpy scalars act as Python numbers; bounded functions of a column are expressions.

        ``np.log(pf["x"])``, ``np.sqrt``, ``np.exp``... build a derived column
        whose bounds follow from the column's (:mod:`dpframe.api.verbs.elementwise`);
        a function that cannot be bounded, or one given a whole frame, refuses.
        """
        name = ufunc.__name__
        hook = getattr(type(self), "_numpy_ufunc", None)
        one = len(inputs) == 1 and inputs[0] is self and method == "__call__" and not kwargs
        if hook is not None and one and name not in _OPERATORS and bounded_ufunc(name):
            return hook(self, name)
        apply = _OPERATORS.get(name)
        if apply is None or method != "__call__" or kwargs:
            raise refusal_for_function(name, "numpy")
        operands = [_scalar(x) for x in inputs]
        if any(hasattr(x, "__array__") and not isinstance(x, RowGuard) for x in operands):
            raise refusal_for_function(ufunc.__name__, "numpy")  # a public array operand
        return apply(*operands)

    def __reduce_ex__(self, protocol: Any) -> Any:
        refuse("Pickling")

    def __reduce__(self) -> Any:
        refuse("Pickling")

    def __getstate__(self) -> Any:
        refuse("Pickling")

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def __bool__(self) -> bool:
        refuse("Truth testing")

    def __contains__(self, item: object) -> bool:
        refuse("Membership testing on values")
