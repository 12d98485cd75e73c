"""Column expressions, as pandas operators spell them (all free: nothing read or charged).

Arithmetic, comparisons, ``&``/``|``/``~``, ``isin``, ``between``, ``isna``,
``clip`` and whole powers build :mod:`dpframe.plan.expressions` trees whose
public facts (kind, bounds, keys) follow from the columns' declarations
(:func:`~dpframe.plan.schema.infer_column`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from dpframe.api.handle import FrameHandle, SeriesHandle, handle_of
from dpframe.api.keywords import declare_call
from dpframe.api.teaching import did_you_mean
from dpframe.errors import SchemaError
from dpframe.mechanisms.answers.array import DPValue
from dpframe.mechanisms.answers.results import Release
from dpframe.plan.expressions import Clip, Expr, IsIn, Lit
from dpframe.plan.inline import resolved_key
from dpframe.plan.schema import check_bounds, infer_column
from dpframe.plan.temporal import DateLit, is_date

__all__ = [
    "OPERATORS",
    "between",
    "binary",
    "check_declared",
    "clip",
    "is_column",
    "keep_name",
    "power",
    "public_value",
    "to_expr",
    "wrap",
]

#: The Python operators on columns, as expression builders.
OPERATORS: dict[str, Callable[[Expr, Expr], Expr]] = {
    "+": Expr.__add__,
    "-": Expr.__sub__,
    "*": Expr.__mul__,
    "/": Expr.__truediv__,
    "==": Expr.__eq__,
    "!=": Expr.__ne__,
    "<": Expr.__lt__,
    "<=": Expr.__le__,
    ">": Expr.__gt__,
    ">=": Expr.__ge__,
    "&": Expr.__and__,
    "|": Expr.__or__,
}


def is_column(value: object) -> bool:
    """True for a private column (a :class:`~dpframe.PrivateSeries`)."""
    return isinstance(handle_of(value), SeriesHandle)


def public_value(value: Any) -> Any:
    """A released number as the public number it is (its shown value); anything else unchanged.

    A :class:`~dpframe.Release` or a released cell (``DPValue``) is public once
    released: ``pf["x"].fillna(pf["x"].mean(epsilon=...))`` and
    ``pf["x"] - pf["x"].mean(epsilon=...)`` use it as a constant, free.
    """
    if isinstance(value, (Release, DPValue)):
        return float(value)
    return value


def to_expr(value: Any, frame: FrameHandle | None = None) -> Expr:
    """The expression of a private column (or its handle), literal or expression.

    With ``frame``, a column taken from another frame is accepted only if it
    means the same on ``frame``: same data, and the same definitions of every
    derived column it reads (otherwise it would silently be re-bound).
    """
    found = value if isinstance(value, SeriesHandle) else handle_of(value)
    if isinstance(found, SeriesHandle):
        if frame is not None and found.frame is not frame:
            here = resolved_key(frame.plan, found.expr)
            there = resolved_key(found.frame.plan, found.expr)
            if here != there:
                raise SchemaError(
                    f"{found.expr} comes from another frame where it means something else "
                    "(other data or other derived columns); build it from this frame."
                )
        return found.expr
    if isinstance(value, Expr):
        return value
    value = public_value(value)
    if isinstance(value, (bool, int, float, str)):
        return Lit(value)
    if is_date(value):  # pd.Timestamp, datetime, date, numpy.datetime64
        return DateLit(value)
    raise SchemaError(f"Cannot use a {type(value).__name__} as a column expression.")


def wrap(series: SeriesHandle, expr: Expr) -> SeriesHandle:
    """``expr`` over ``series``' frame, named after the expression."""
    return series.with_expr(expr, infer_column(str(expr), expr, series.schema))


def keep_name(series: SeriesHandle, expr: Expr) -> SeriesHandle:
    """``expr`` over ``series``' frame, keeping the column's name (as pandas does)."""
    return series.with_expr(expr, infer_column(series.info.name, expr, series.schema))


def _date_text(series: SeriesHandle, other: Any) -> Any:
    """A string compared with a date column is read as a date, as pandas reads it."""
    if series.info.kind != "datetime" or not isinstance(other, str):
        return other
    try:
        return pd.Timestamp(other)
    except ValueError:
        raise SchemaError(f"{other!r} is not a date; write e.g. '2020-01-31'.") from None


def check_declared(series: SeriesHandle, values: Iterable[Any], spelled: str) -> None:
    """Refuse a public value that is not one of the column's declared keys (before any charge).

    ``pf[pf["region"] == "South"]`` with keys ``south, ...`` matches no row by
    declaration: a release of it would be charged for nothing.  The keys are
    public, so the refusal can name the nearest one.  A column without
    declared keys (free text) cannot be checked.
    """
    keys = series.info.categories
    if keys is None:
        return
    try:
        declared = set(keys)
        missing = [v for v in values if _plain(v) not in declared]
    except TypeError:
        return  # an unhashable value: the expression itself refuses it
    if not missing:
        return
    value = missing[0]
    name = series.info.name
    shown = ", ".join(repr(k) for k in keys[:12]) + (", ..." if len(keys) > 12 else "")
    raise SchemaError(
        f"{value!r} is not a declared key of {name!r}, so in {spelled} it matches no row by "
        "declaration: refused before any charge (a release would spend budget on what the "
        f"public keys already decide).{did_you_mean(value, keys)} Declared keys: {shown}. "
        f"To match a value outside them, declare it first: "
        f"{declare_call('with_categories', name, f'[..., {value!r}]')}."
    )


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value (a public constant)."""
    item = getattr(value, "item", None)
    return item() if isinstance(value, np.generic) and callable(item) else value


def binary(series: SeriesHandle, other: Any, op: str, reverse: bool = False) -> SeriesHandle:
    """``series <op> other`` (``other <op> series`` with ``reverse``).

    ``==`` and ``!=`` with a public value that is not a declared key are
    refused (:func:`check_declared`).
    """
    other = public_value(other)
    if op in ("==", "!=") and isinstance(other, (bool, int, float, str, np.generic)):
        check_declared(series, [other], f"{series.info.name} {op} {other!r}")
    left, right = series.expr, to_expr(_date_text(series, other), series.frame)
    if reverse:
        left, right = right, left
    return wrap(series, OPERATORS[op](left, right))


def power(series: SeriesHandle, exponent: Any) -> SeriesHandle:
    """``x ** k`` for a whole k from 1 to 4: the product ``x * ... * x`` (interval bounds)."""
    if isinstance(exponent, bool) or not isinstance(exponent, (int, np.integer)):
        raise SchemaError(
            "A private column takes whole powers 1 to 4 (x ** 2); for other powers derive "
            "the column before loading."
        )
    if not 1 <= int(exponent) <= 4:
        raise SchemaError(f"x ** {int(exponent)}: a private column takes whole powers 1 to 4.")
    result = series
    for _ in range(int(exponent) - 1):
        result = binary(result, series.expr, "*")
    return result


def isin(series: SeriesHandle, values: Iterable[Any]) -> SeriesHandle:
    """True where the value is one of the public ``values`` (each a declared key, if declared)."""
    expr = series.expr.isin(values)  # refuses a string or a non-list first
    listed = list(expr.values) if isinstance(expr, IsIn) else []
    check_declared(series, listed, f"{series.info.name}.isin({listed!r})")
    return wrap(series, expr)


def between(series: SeriesHandle, left: Any, right: Any) -> SeriesHandle:
    """``left <= x <= right``."""
    low, high = _date_text(series, left), _date_text(series, right)
    return wrap(
        series, series.expr.between(to_expr(low, series.frame), to_expr(high, series.frame))
    )


def clip(series: SeriesHandle, lower: float | None, upper: float | None) -> SeriesHandle:
    """Clamped to public ``[lower, upper]``; the result has these bounds.

    As pandas, either end may be left out (``clip(upper=120)``): the column's
    declared bound stands in for it, since every release clamps to it anyway
    (a column without bounds needs both ends).  Neither end: the column itself.
    """
    lower, upper = public_value(lower), public_value(upper)
    if lower is None and upper is None:
        return series
    if lower is None or upper is None:
        declared = series.info.bounds
        if declared is None:
            given = f"upper={upper!r}" if lower is None else f"lower={lower!r}"
            raise SchemaError(
                f"clip({given}) of {series.info.name!r}, which has no declared bounds: the "
                "other end is unknown, so releases could not be bounded. Give both ends, "
                "clip(lower, upper), or declare bounds first: pf.with_bounds(col=(low, high))."
            )
        if lower is None:
            lower = min(declared[0], float(upper))
        else:
            upper = max(declared[1], float(lower))
    low, high = check_bounds(series.info.name, (lower, upper))
    return wrap(series, Clip(series.expr, low, high))
