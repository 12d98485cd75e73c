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
from typing import TYPE_CHECKING, Any

import numpy as np

from dpframe.errors import SchemaError
from dpframe.plan.elementwise import UFunc, Where
from dpframe.plan.expressions import Clip, Compare, Expr, IsNull, Lit, Not
from dpframe.plan.recode import Recode
from dpframe.plan.schema import infer_column

if TYPE_CHECKING:
    from dpframe.api.frame import PrivateFrame
    from dpframe.api.series import PrivateSeries

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


def _series(series: PrivateSeries, expr: Expr) -> PrivateSeries:
    """A series of ``expr`` on ``series``' frame, keeping its name (as pandas does)."""
    frame = series._frame
    return type(series)._create(frame, expr, infer_column(series.name, expr, frame._schema))


def _condition(series: PrivateSeries, cond: object, verb: str) -> Expr:
    from dpframe.api.frame import _to_expr

    if callable(cond) and not hasattr(cond, "_to_expr"):
        raise SchemaError(
            f"{verb}() takes a condition built from the frame's columns (pf['age'] > 30): "
            "Python functions cannot run on private rows."
        )
    if isinstance(cond, (bool, np.bool_)):
        return Lit(bool(cond))
    if not hasattr(cond, "_to_expr") and not isinstance(cond, Expr):
        raise SchemaError(f"{verb}() takes a condition built from the frame's columns.")
    expr = _to_expr(cond, series._frame)
    if infer_column("_condition", expr, series._frame._schema).kind != "boolean":
        raise SchemaError(f"{verb}() needs a condition (a comparison, isin, &, |, ~).")
    return expr


def _public(value: object, verb: str) -> object:
    if hasattr(value, "_to_expr") or isinstance(value, (Expr, Mapping)) or callable(value):
        raise SchemaError(
            f"{verb}() takes a public constant (a number, a string or NaN) as the replacement; "
            "to combine columns, derive them with arithmetic."
        )
    return value


def fillna(self: PrivateSeries, value: object = None) -> PrivateSeries:
    """Missing values replaced by the public ``value``, as ``Series.fillna(value)`` (free).

    The result's bounds (numbers) or public keys (text) include ``value``.
    ``method=``/``ffill`` are not available: they copy values between rows.

    Example:
        >>> pf["age"].fillna(0).mean(epsilon=0.1)  # doctest: +SKIP
    """
    if value is None:
        raise SchemaError("fillna() needs a value: fillna(0); ffill/bfill copy private rows.")
    other = _public(value, "fillna")
    return _series(self, Where(self._expr, Not(IsNull(self._expr)), other))  # type: ignore[arg-type]


def where(self: PrivateSeries, cond: object, other: object = np.nan) -> PrivateSeries:
    """The values where ``cond`` holds, else ``other`` (default missing), as ``Series.where``.

    ``cond`` is a condition on the same frame; ``other`` a public constant.
    A missing condition counts as false.  Free.
    """
    expr = Where(self._expr, _condition(self, cond, "where"), _public(other, "where"))  # type: ignore[arg-type]
    return _series(self, expr)


def mask(self: PrivateSeries, cond: object, other: object = np.nan) -> PrivateSeries:
    """``other`` where ``cond`` holds, the values elsewhere, as ``Series.mask`` (free)."""
    expr = Where(self._expr, Not(_condition(self, cond, "mask")), _public(other, "mask"))  # type: ignore[arg-type]
    return _series(self, expr)


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


def astype(self: PrivateSeries, dtype: object) -> PrivateSeries:
    """The column as another declared kind, as ``Series.astype`` (free).

    * numbers to ``float`` (bounds kept), ``int`` (truncated toward zero, as
      pandas; a missing value stays missing), ``bool`` (``x != 0``);
    * a column with declared keys to ``str`` (each key as its text) or
      ``category`` (unchanged); text keys that are numbers to ``float``/``int``;
    * anything else is refused, saying why (a conversion must not depend on
      values nobody declared).
    """
    target = _dtype_name(dtype)
    info = self._info
    numeric = info.kind in ("numeric", "boolean")
    if numeric and target in ("float", "int", "bool"):
        if target == "float":
            return _series(self, self._expr * 1.0) if info.kind == "boolean" else self
        if target == "int":
            return _series(self, UFunc(self._expr, "trunc"))
        return _series(self, Compare("!=", self._expr, Lit(0)))
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
        return _series(self, Recode(self._expr, tuple(keys), tuple(str(k) for k in keys)))  # type: ignore[arg-type]
    if info.kind in ("text", "categorical") and keys is not None:
        try:
            numbers = tuple(float(k) for k in keys)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            numbers = ()
        if numbers:
            recoded = Recode(self._expr, tuple(keys), numbers)  # type: ignore[arg-type]
            expr: Expr = UFunc(recoded, "trunc") if target == "int" else recoded
            return _series(self, expr)
    raise SchemaError(
        f"astype({target}) of the {info.kind} column {info.name!r}: only declared keys that "
        "are numbers convert; recode with map({...}) to the values you want."
    )


def apply_ufunc(self: PrivateSeries, name: str) -> PrivateSeries:
    """``numpy.<name>(column)`` as an expression with bounds from the column's (free).

    Privacy: free (a public function of each row's value).  The result's
    bounds are the function of the column's bounds (monotone functions) or
    its fixed range; ``np.log`` of a column whose bounds include 0 has no
    bounds (clip first: ``np.log(pf['x'].clip(1, 5000))``).
    """
    if name == "isnan":
        return _series(self, IsNull(self._expr))
    return _series(self, UFunc(self._expr, name))


def round_values(self: PrivateSeries, decimals: int = 0) -> PrivateSeries:
    """Rounded to ``decimals`` places (half to even, as pandas), free."""
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise SchemaError("round() takes a whole number of decimals.")
    if decimals == 0:
        return apply_ufunc(self, "rint")
    scale = 10.0 ** int(decimals)
    return _series(self, UFunc(self._expr * scale, "rint") / scale)


def floordiv(self: PrivateSeries, other: object) -> PrivateSeries:
    """``x // c`` for a public number c: ``floor(x / c)``, bounds by interval arithmetic (free)."""
    if isinstance(other, bool) or not isinstance(other, (int, float, np.integer, np.floating)):
        raise SchemaError("x // c takes a public number c (floor of x / c).")
    if float(other) == 0:
        raise SchemaError("x // 0: division by zero.")
    return _series(self, UFunc(self._expr / float(other), "floor"))


def modulo(self: PrivateSeries, other: object) -> PrivateSeries:
    """``x % c`` for a public positive number c, as Python and pandas: ``x - c·floor(x / c)``.

    The result lies in ``[0, c]`` (``[0, c)`` up to float rounding): those are its bounds.
    """
    if isinstance(other, bool) or not isinstance(other, (int, float, np.integer, np.floating)):
        raise SchemaError("x % c takes a public positive number c.")
    divisor = float(other)
    if not divisor > 0 or not np.isfinite(divisor):
        raise SchemaError("x % c takes a public positive number c (a finite c > 0).")
    remainder = self._expr - UFunc(self._expr / divisor, "floor") * divisor
    return _series(self, Clip(remainder, 0.0, divisor))


def _first_series(args: tuple[Any, ...]) -> PrivateSeries | None:
    from dpframe.api.series import PrivateSeries

    return next((a for a in args if isinstance(a, PrivateSeries)), None)


def numpy_function(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``np.clip``, ``np.round``/``np.around`` and ``np.where`` on private columns; else None.

    None means: not available (the caller refuses, naming the counterpart).
    """
    from dpframe.api.series import PrivateSeries

    if name == "clip" and len(args) == 3 and not kwargs and isinstance(args[0], PrivateSeries):
        series = args[0]
        low, high = args[1], args[2]
        bounds = series.bounds
        if low is None or high is None:
            if bounds is None:
                raise SchemaError("np.clip of a column without bounds needs both ends.")
            low = bounds[0] if low is None else low
            high = bounds[1] if high is None else high
        return series.clip(low, high)
    if name in ("round", "around") and isinstance(args[0], PrivateSeries):
        decimals = args[1] if len(args) > 1 else kwargs.get("decimals", 0)
        return round_values(args[0], decimals)
    if name == "where" and len(args) == 3 and not kwargs:
        cond, x, y = args
        if isinstance(x, PrivateSeries) and not isinstance(y, PrivateSeries):
            return where(x, cond, y)
        if isinstance(y, PrivateSeries) and not isinstance(x, PrivateSeries):
            return mask(y, cond, x)
        if _first_series(args) is not None:
            raise SchemaError(
                "np.where(cond, x, y) on private columns takes one column and one public "
                "constant: pf['x'].where(cond, 0)."
            )
    return None


def frame_fillna(self: PrivateFrame, value: object = None) -> PrivateFrame:
    """Missing values replaced per column, as ``DataFrame.fillna`` (free).

    ``value`` is one public constant for every column, or a dict ``{column: value}``.
    """
    if value is None:
        raise SchemaError("fillna() needs a value, or a dict {column: value}.")
    pairs = dict(value) if isinstance(value, Mapping) else dict.fromkeys(self.columns, value)
    if isinstance(value, Mapping):
        for name in pairs:
            self._schema.get(name)  # an unknown column is refused here, naming the columns
    elif isinstance(value, str):  # as pandas: text fills only the text columns
        pairs = {n: v for n, v in pairs.items() if not self._schema.get(n).summable}
    else:
        pairs = {n: v for n, v in pairs.items() if self._schema.get(n).summable}
    filled = {name: fillna(self[name], fill) for name, fill in pairs.items()}
    return self.assign(**filled) if filled else self
