"""Column expressions and element-wise verbs of a private column (free), as pandas spells them.

The part of :class:`~dpframe.PrivateSeries` that builds new columns: Python's
operators, ``isin``, ``between``, ``clip``, ``fillna``, ``where``, ``astype``,
``map``, ``cut`` and the rest.  Each is one verb of
:mod:`dpframe.api.verbs.columns`, :mod:`~dpframe.api.verbs.elementwise`,
:mod:`~dpframe.api.verbs.recoding` or :mod:`~dpframe.api.verbs.binning`
applied to the column's handle; nothing is read or charged (``qcut`` excepted:
it releases its edges).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from dpframe.api.fresh import fresh_aware
from dpframe.api.handle import SeriesHandle
from dpframe.api.verbs import binning, columns, elementwise, recoding

if TYPE_CHECKING:
    from dpframe.plan.privacy import Number, Privacy

__all__ = ["ColumnExpressions"]

S = TypeVar("S", bound="ColumnExpressions")


def _made(cls: type[S], handle: SeriesHandle) -> S:
    """A new column of class ``cls`` over ``handle``."""
    made = object.__new__(cls)
    object.__setattr__(made, "_handle", handle)
    return made


class ColumnExpressions:
    """Free verbs of a column: each returns a new column of the same class."""

    __slots__ = ()

    _handle: SeriesHandle

    def _derived(self: S, handle: SeriesHandle) -> S:
        return _made(type(self), handle)

    def _op(self: S, other: Any, op: str, reverse: bool = False) -> S:
        return self._derived(columns.binary(self._handle, other, op, reverse))

    def __add__(self: S, other: Any) -> S:
        return self._op(other, "+")

    def __radd__(self: S, other: Any) -> S:
        return self._op(other, "+", reverse=True)

    def __sub__(self: S, other: Any) -> S:
        return self._op(other, "-")

    def __rsub__(self: S, other: Any) -> S:
        return self._op(other, "-", reverse=True)

    def __mul__(self: S, other: Any) -> S:
        return self._op(other, "*")

    def __rmul__(self: S, other: Any) -> S:
        return self._op(other, "*", reverse=True)

    def __pow__(self: S, exponent: Any) -> S:
        """``x ** k`` for a whole k from 1 to 4: the product ``x * ... * x`` (interval bounds)."""
        return self._derived(columns.power(self._handle, exponent))

    def __truediv__(self: S, other: Any) -> S:
        return self._op(other, "/")

    def __rtruediv__(self: S, other: Any) -> S:
        return self._op(other, "/", reverse=True)

    def __floordiv__(self: S, other: object) -> S:
        """``x // c`` for a public number c: ``floor(x / c)``, bounds by interval arithmetic."""
        return self._derived(elementwise.floordiv(self._handle, other))

    def __mod__(self: S, other: object) -> S:
        """``x % c`` for a public positive number c, as Python and pandas."""
        return self._derived(elementwise.modulo(self._handle, other))

    def __eq__(self: S, other: object) -> S:  # type: ignore[override]
        return self._op(other, "==")

    def __ne__(self: S, other: object) -> S:  # type: ignore[override]
        return self._op(other, "!=")

    def __lt__(self: S, other: Any) -> S:
        return self._op(other, "<")

    def __le__(self: S, other: Any) -> S:
        return self._op(other, "<=")

    def __gt__(self: S, other: Any) -> S:
        return self._op(other, ">")

    def __ge__(self: S, other: Any) -> S:
        return self._op(other, ">=")

    def __and__(self: S, other: Any) -> S:
        return self._op(other, "&")

    def __rand__(self: S, other: Any) -> S:
        return self._op(other, "&", reverse=True)

    def __or__(self: S, other: Any) -> S:
        return self._op(other, "|")

    def __ror__(self: S, other: Any) -> S:
        return self._op(other, "|", reverse=True)

    def __invert__(self: S) -> S:
        return self._derived(columns.wrap(self._handle, ~self._handle.expr))

    def __neg__(self: S) -> S:
        return self._derived(columns.wrap(self._handle, -self._handle.expr))

    def __abs__(self: S) -> S:
        return self.abs()

    __hash__ = None  # type: ignore[assignment]

    def abs(self: S) -> S:
        """Each value's absolute value, as ``Series.abs`` (free: nothing is charged).

        Example:
            >>> (pf["experience"] - 20).abs().mean(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(columns.wrap(self._handle, abs(self._handle.expr)))

    def isin(self: S, values: Iterable[Any]) -> S:
        """True where the value is one of the public ``values``, as ``Series.isin`` (free).

        Example:
            >>> pf[pf["region"].isin(["south", "west"])].count(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(columns.isin(self._handle, values))

    def between(self: S, left: Any, right: Any) -> S:
        """True where ``left <= x <= right``, as ``Series.between`` (free).

        Example:
            >>> pf[pf["education"].between(12, 16)]["wage"].mean(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(columns.between(self._handle, left, right))

    def isna(self: S) -> S:
        """True where the value is missing, as ``Series.isna`` (free).

        Example:
            >>> pf["wage"].isna().sum(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(columns.wrap(self._handle, self._handle.expr.isna()))

    def notna(self: S) -> S:
        """True where the value is present, as ``Series.notna`` (free).

        Example:
            >>> pf["wage"].notna().mean(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(columns.wrap(self._handle, self._handle.expr.notna()))

    def clip(self: S, lower: float | None = None, upper: float | None = None) -> S:
        """Values limited to public ``[lower, upper]``, as ``Series.clip`` (free).

        Example:
            >>> pf["wage"].clip(0, 2000).mean(epsilon=0.1)  # doctest: +SKIP

        ``[lower, upper]`` become the result's bounds.  As pandas, one end may be
        left out (``clip(upper=120)``): the column's declared bound is the other
        end (releases clamp to it anyway).
        """
        return self._derived(columns.clip(self._handle, lower, upper))

    def fillna(self: S, value: object = None) -> S:
        """Missing values replaced by the public ``value``, as ``Series.fillna(value)`` (free).

        The result's bounds (numbers) or public keys (text) include ``value``.
        ``method=``/``ffill`` are not available: they copy values between rows.

        Example:
            >>> pf["wage"].fillna(0).mean(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(elementwise.fillna(self._handle, value))

    def where(self: S, cond: object, other: object = float("nan")) -> S:
        """The values where ``cond`` holds, else ``other`` (default missing), as ``Series.where``.

        Example:
            >>> pf["wage"].where(pf["parttime"] == "no").mean(epsilon=0.1)  # doctest: +SKIP

        ``cond`` is a condition on the same frame; ``other`` a public constant.
        A missing condition counts as false.  Free.
        """
        return self._derived(elementwise.where(self._handle, cond, other))

    def mask(self: S, cond: object, other: object = float("nan")) -> S:
        """``other`` where ``cond`` holds, the values elsewhere, as ``Series.mask`` (free).

        Example:
            >>> pf["wage"].mask(pf["wage"] > 3000, 3000).mean(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(elementwise.mask(self._handle, cond, other))

    def astype(self: S, dtype: object) -> S:
        """The column as another declared kind, as ``Series.astype`` (free).

        Example:
            >>> pf["education"].astype(float).mean(epsilon=0.1)  # doctest: +SKIP

        * numbers to ``float`` (bounds kept), ``int`` (truncated toward zero, as
          pandas; a missing value stays missing), ``bool`` (``x != 0``);
        * a column with declared keys to ``str`` (each key as its text) or
          ``category`` (unchanged); text keys that are numbers to ``float``/``int``;
        * anything else is refused, saying why (a conversion must not depend on
          values nobody declared).
        """
        return self._derived(elementwise.astype(self._handle, dtype))

    def round(self: S, decimals: int = 0) -> S:
        """Each value rounded to ``decimals`` places (half to even, as pandas), free.

        Example:
            >>> pf["wage"].round(-2).mean(epsilon=0.1)  # doctest: +SKIP
        """
        return self._derived(elementwise.round_values(self._handle, decimals))

    def map(self: S, arg: object, na_action: object = None) -> S:
        """Each listed value's label, missing for any other (``pandas.Series.map`` with a dict).

        Example:
            >>> pf["region"].map({"south": "S", "west": "W"}).mode(epsilon=1)  # doctest: +SKIP

        Privacy: a public recoding of each row's value: free, nothing charged.
        """
        return self._derived(recoding.map_values(self._handle, arg, na_action))

    def replace(self: S, to_replace: object, value: object = None) -> S:
        """The listed values replaced, the others kept (``pandas.Series.replace``).

        Example:
            >>> pf["smsa"].replace({"yes": "city", "no": "town"}).mode(epsilon=1)  # doctest: +SKIP

        ``replace({old: new, ...})``, ``replace(old, new)`` or
        ``replace([old, ...], new)``.  Privacy: free (a public recoding).
        """
        return self._derived(recoding.replace_values(self._handle, to_replace, value))

    def cut(
        self,
        bins: int | Sequence[float],
        right: bool = True,
        labels: Sequence[Any] | bool | None = None,
        retbins: bool = False,
        precision: int = 3,
        include_lowest: bool = False,
        duplicates: str = "raise",
        ordered: bool = True,
    ) -> Any:
        """The column cut into public bins, as ``pandas.cut`` (free); see :func:`dpframe.cut`.

        Example:
            >>> pf["wage"].cut([0, 500, 1000, 5000]).value_counts(epsilon=0.1)  # doctest: +SKIP
        """
        found = binning.cut(
            self._handle, bins, right, labels, retbins, precision, include_lowest, duplicates,
            ordered,
        )  # fmt: skip
        return (self._derived(found[0]), found[1]) if retbins else self._derived(found)

    @fresh_aware
    def qcut(
        self,
        q: int | Sequence[float],
        labels: Sequence[Any] | bool | None = None,
        retbins: bool = False,
        precision: int = 3,
        duplicates: str = "drop",
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> Any:
        """The column cut into groups of about equal size, as ``pandas.qcut`` (charged once).

        Example:
            >>> pf["wage"].qcut(4, epsilon=0.2).value_counts(epsilon=0.1)  # doctest: +SKIP

        Privacy and Accuracy: as :func:`dpframe.qcut` (one quantile release).
        """
        found = binning.qcut(
            self._handle, q, labels, retbins, precision, duplicates,
            epsilon=epsilon, delta=delta, rho=rho, privacy=privacy,
        )  # fmt: skip
        return (self._derived(found[0]), found[1]) if retbins else self._derived(found)

    # -- numpy's protocols (the guard calls these) -------------------------------

    def _numpy_ufunc(self: S, name: str) -> S:
        """``numpy.<name>(column)`` as an expression with bounds from the column's (free)."""
        return self._derived(elementwise.apply_ufunc(self._handle, name))

    @classmethod
    def _numpy_function(cls, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``np.clip``/``np.round``/``np.where`` of a column, or None (refused by the guard)."""
        found = elementwise.numpy_function(name, args, kwargs)
        return None if found is None else _made(cls, found)
