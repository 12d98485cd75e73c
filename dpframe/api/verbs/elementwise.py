"""Element-wise verbs on private columns, as pandas and numpy spell them (all free).

``fillna(value)``, ``where(cond, other)``, ``mask(cond, other)``, ``astype(dtype)``,
``round()`` and numpy functions (``np.log(pf["wage"])``, ``np.sqrt``,
``np.clip``, ``np.where``...) build expressions
(:mod:`dpframe.plan.elementwise`, :mod:`dpframe.plan.recode`) whose public
bounds and keys follow from the column's: nothing is read, nothing is charged.
Replacement values are public constants; a function whose result cannot be
given public bounds is refused, naming those that can.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dpframe.api.handle import FrameHandle, SeriesHandle, handle_of
from dpframe.api.verbs.columns import clip, is_column, keep_name, public_value, to_expr
from dpframe.api.verbs.frames import assign
from dpframe.errors import SchemaError
from dpframe.plan.elementwise import UFunc, Where
from dpframe.plan.expressions import Clip, Compare, Expr, IsNull, Lit, Not
from dpframe.plan.recode import Recode
from dpframe.plan.schema import infer_column

__all__ = [
    "apply_ufunc",
    "astype",
    "fillna",
    "floordiv",
    "frame_fillna",
    "mask",
    "modulo",
    "numpy_function",
    "round_values",
    "where",
]

_DTYPES: dict[str, str] = {
    "float": "float",
    "float64": "float",
    "float32": "float",
    "double": "float",
    "int": "int",
    "int64": "int",
    "int32": "int",
    "Int64": "int",
    "bool": "bool",
    "boolean": "bool",
    "str": "str",
    "string": "str",
    "object": "str",
    "category": "category",
}


def _condition(series: SeriesHandle, cond: object, verb: str) -> Expr:
    if callable(cond) and not is_column(cond):
        raise SchemaError(
            f"{verb}() takes a condition built from the frame's columns (pf['age'] > 30): "
            "Python functions cannot run on private rows."
        )
    if isinstance(cond, (bool, np.bool_)):
        return Lit(bool(cond))
    if not is_column(cond) and not isinstance(cond, Expr):
        raise SchemaError(f"{verb}() takes a condition built from the frame's columns.")
    expr = to_expr(cond, series.frame)
    if infer_column("_condition", expr, series.schema).kind != "boolean":
        raise SchemaError(f"{verb}() needs a condition (a comparison, isin, &, |, ~).")
    return expr


def _public(value: object, verb: str) -> object:
    value = public_value(value)  # a released number is public
    if is_column(value) or isinstance(value, (Expr, Mapping)) or callable(value):
        raise SchemaError(
            f"{verb}() takes a public constant (a number, a string or NaN) as the replacement; "
            "to combine columns, derive them with arithmetic."
        )
    return value


def fillna(self: SeriesHandle, value: object = None) -> SeriesHandle:
    """Missing values replaced by the public ``value``, as ``Series.fillna(value)`` (free).

    The result's bounds (numbers) or public keys (text) include ``value``.
    ``method=``/``ffill`` are not available: they copy values between rows.

    Example:
        >>> pf["age"].fillna(0).mean(epsilon=0.1)  # doctest: +SKIP
    """
    if value is None:
        raise SchemaError("fillna() needs a value: fillna(0); ffill/bfill copy private rows.")
    other = _public(value, "fillna")
    return keep_name(self, Where(self.expr, Not(IsNull(self.expr)), other))  # type: ignore[arg-type]


def where(self: SeriesHandle, cond: object, other: object = np.nan) -> SeriesHandle:
    """The values where ``cond`` holds, else ``other`` (default missing), as ``Series.where``.

    ``cond`` is a condition on the same frame; ``other`` a public constant.
    A missing condition counts as false.  Free.
    """
    expr = Where(self.expr, _condition(self, cond, "where"), _public(other, "where"))  # type: ignore[arg-type]
    return keep_name(self, expr)


def mask(self: SeriesHandle, cond: object, other: object = np.nan) -> SeriesHandle:
    """``other`` where ``cond`` holds, the values elsewhere, as ``Series.mask`` (free)."""
    expr = Where(self.expr, Not(_condition(self, cond, "mask")), _public(other, "mask"))  # type: ignore[arg-type]
    return keep_name(self, expr)


def _dtype_name(dtype: object) -> str:
    if isinstance(dtype, type):
        if dtype is bool:
            return "bool"
        if dtype is int:
            return "int"
        if dtype is float:
            return "float"
        if dtype is str or dtype is object:
            return "str"
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        dtype = np.dtype(dtype).name
    if isinstance(dtype, np.dtype):
        dtype = dtype.name
    found = _DTYPES.get(str(dtype)) if isinstance(dtype, (str, np.dtype)) else None
    if found is None:
        raise SchemaError(
            f"astype({dtype!r}): a private column converts to float, int, bool, str or category."
        )
    return found


def astype(self: SeriesHandle, dtype: object) -> SeriesHandle:
    """The column as another declared kind, as ``Series.astype`` (free).

    * numbers to ``float`` (bounds kept), ``int`` (truncated toward zero, as
      pandas; a missing value stays missing), ``bool`` (``x != 0``);
    * a column with declared keys to ``str`` (each key as its text) or
      ``category`` (unchanged); text keys that are numbers to ``float``/``int``;
    * anything else is refused, saying why (a conversion must not depend on
      values nobody declared).
    """
    target = _dtype_name(dtype)
    info = self.info
    numeric = info.kind in ("numeric", "boolean")
    if numeric and target in ("float", "int", "bool"):
        if target == "float":
            return keep_name(self, self.expr * 1.0) if info.kind == "boolean" else self
        if target == "int":
            return keep_name(self, UFunc(self.expr, "trunc"))
        return keep_name(self, Compare("!=", self.expr, Lit(0)))
    keys = info.categories
    if target == "category":
        if keys is None:
            raise SchemaError(
                f"astype('category') needs the public keys of {info.name!r}: declare "
                f"categories={{{info.name!r}: [...]}} (or with_categories)."
            )
        return self
    if target == "str":
        if info.kind in ("text", "categorical"):
            return self
        if keys is None:
            raise SchemaError(
                f"astype(str) of {info.name!r} needs its public keys (each becomes its text): "
                f"declare categories={{{info.name!r}: [...]}}."
            )
        return keep_name(self, Recode(self.expr, tuple(keys), tuple(str(k) for k in keys)))  # type: ignore[arg-type]
    if info.kind in ("text", "categorical") and keys is not None:
        try:
            numbers = tuple(float(k) for k in keys)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            numbers = ()
        if numbers:
            recoded = Recode(self.expr, tuple(keys), numbers)  # type: ignore[arg-type]
            expr: Expr = UFunc(recoded, "trunc") if target == "int" else recoded
            return keep_name(self, expr)
    raise SchemaError(
        f"astype({target}) of the {info.kind} column {info.name!r}: only declared keys that "
        "are numbers convert; recode with map({...}) to the values you want."
    )


def apply_ufunc(self: SeriesHandle, name: str) -> SeriesHandle:
    """``numpy.<name>(column)`` as an expression with bounds from the column's (free).

    Privacy: free (a public function of each row's value).  The result's
    bounds are the function of the column's bounds (monotone functions) or
    its fixed range; ``np.log`` of a column whose bounds include 0 has no
    bounds (clip first: ``np.log(pf['x'].clip(1, 5000))``).
    """
    if name == "isnan":
        return keep_name(self, IsNull(self.expr))
    return keep_name(self, UFunc(self.expr, name))


def round_values(self: SeriesHandle, decimals: int = 0) -> SeriesHandle:
    """Rounded to ``decimals`` places (half to even, as pandas), free."""
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise SchemaError("round() takes a whole number of decimals.")
    if decimals == 0:
        return apply_ufunc(self, "rint")
    scale = 10.0 ** int(decimals)
    return keep_name(self, UFunc(self.expr * scale, "rint") / scale)


def floordiv(self: SeriesHandle, other: object) -> SeriesHandle:
    """``x // c`` for a public number c: ``floor(x / c)``, bounds by interval arithmetic (free)."""
    if isinstance(other, bool) or not isinstance(other, (int, float, np.integer, np.floating)):
        raise SchemaError("x // c takes a public number c (floor of x / c).")
    if float(other) == 0:
        raise SchemaError("x // 0: division by zero.")
    return keep_name(self, UFunc(self.expr / float(other), "floor"))


def modulo(self: SeriesHandle, other: object) -> SeriesHandle:
    """``x % c`` for a public positive number c, as Python and pandas: ``x - c·floor(x / c)``.

    The result lies in ``[0, c]`` (``[0, c)`` up to float rounding): those are its bounds.
    """
    if isinstance(other, bool) or not isinstance(other, (int, float, np.integer, np.floating)):
        raise SchemaError("x % c takes a public positive number c.")
    divisor = float(other)
    if not divisor > 0 or not np.isfinite(divisor):
        raise SchemaError("x % c takes a public positive number c (a finite c > 0).")
    remainder = self.expr - UFunc(self.expr / divisor, "floor") * divisor
    return keep_name(self, Clip(remainder, 0.0, divisor))


def numpy_function(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``np.clip``, ``np.round``/``np.around`` and ``np.where`` on private columns; else None.

    Returns the result's handle, or None: not available (the caller refuses,
    naming the counterpart).
    """
    handles = tuple(handle_of(a) for a in args)
    first = handles[0] if handles else None
    if name == "clip" and len(args) == 3 and not kwargs and isinstance(first, SeriesHandle):
        low, high = args[1], args[2]
        bounds = first.info.bounds
        if low is None or high is None:
            if bounds is None:
                raise SchemaError("np.clip of a column without bounds needs both ends.")
            low = bounds[0] if low is None else low
            high = bounds[1] if high is None else high
        return clip(first, low, high)
    if name in ("round", "round_", "around") and isinstance(first, SeriesHandle):  # numpy<1.25
        decimals = args[1] if len(args) > 1 else kwargs.get("decimals", 0)
        return round_values(first, decimals)
    if name == "where" and len(args) == 3 and not kwargs:
        cond, x, y = args
        hx, hy = handles[1], handles[2]
        if isinstance(hx, SeriesHandle) and not isinstance(hy, SeriesHandle):
            return where(hx, cond, y)
        if isinstance(hy, SeriesHandle) and not isinstance(hx, SeriesHandle):
            return mask(hy, cond, x)
        if any(isinstance(h, SeriesHandle) for h in handles):
            raise SchemaError(
                "np.where(cond, x, y) on private columns takes one column and one public "
                "constant: pf['x'].where(cond, 0)."
            )
    return None


def frame_fillna(self: FrameHandle, value: object = None) -> FrameHandle:
    """Missing values replaced per column, as ``DataFrame.fillna`` (free).

    ``value`` is one public constant for every column, or a dict ``{column: value}``
    (or a released Series indexed by column, as ``pf.fillna(pf.mean(epsilon=...))``).
    """
    if value is None:
        raise SchemaError("fillna() needs a value, or a dict {column: value}.")
    if isinstance(value, pd.Series):  # pandas: fill each column from the Series' entry
        value = {str(k): v for k, v in value.items() if str(k) in self.schema.names}
    names = self.schema.names
    pairs = dict(value) if isinstance(value, Mapping) else dict.fromkeys(names, value)
    if isinstance(value, Mapping):
        for name in pairs:
            self.schema.get(name)  # an unknown column is refused here, naming the columns
    elif isinstance(value, str):  # as pandas: text fills only the text columns
        pairs = {n: v for n, v in pairs.items() if not self.schema.get(n).summable}
    else:
        pairs = {n: v for n, v in pairs.items() if self.schema.get(n).summable}
    filled = {name: fillna(self.column(name), fill) for name, fill in pairs.items()}
    return assign(self, filled) if filled else self
