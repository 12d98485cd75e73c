"""``PrivateSeries``: one column (or column expression) of a private frame.

A thin shell over a :class:`~dpframe.api.handle.SeriesHandle`, in three parts:
this module (what the column is: its public facts, its guard, ``.dt`` and
``.str``), :mod:`dpframe.api.column_expressions` (operators and element-wise
verbs: free) and :mod:`dpframe.api.column_releases` (``count``, ``sum``,
``mean``, quantiles, histograms and the rest: charged to the session).
"""

from __future__ import annotations

from typing import Any, NoReturn

from dpframe.api.accessors import DatetimeAccessor, StringAccessor
from dpframe.api.column_expressions import ColumnExpressions
from dpframe.api.column_releases import ColumnReleases
from dpframe.api.guard import RowGuard
from dpframe.api.handle import SeriesHandle
from dpframe.api.keywords import column_label
from dpframe.api.verbs.columns import is_column
from dpframe.errors import PrivacyViolationError, SchemaError
from dpframe.plan.expressions import Expr

__all__ = ["PrivateSeries", "series_of"]


def series_of(handle: SeriesHandle) -> PrivateSeries:
    """The :class:`PrivateSeries` of a handle."""
    series = object.__new__(PrivateSeries)
    object.__setattr__(series, "_handle", handle)
    return series


class PrivateSeries(ColumnExpressions, ColumnReleases, RowGuard):
    """A column expression over a private frame; never yields raw values."""

    __slots__ = ("_handle",)

    _handle: SeriesHandle

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise SchemaError("Get a PrivateSeries by indexing a PrivateFrame: pf['column'].")

    def __setattr__(self, name: str, value: Any) -> None:
        raise SchemaError("A PrivateSeries is immutable.")

    def __getattr__(self, name: str) -> Any:
        raise self._missing(name)

    def __getitem__(self, key: object) -> NoReturn:
        """``pf['x'][condition]`` is refused, naming the frame's form; ``pf['x'][3]`` reveals a row.

        Rows are selected on the frame: ``pf[condition]['x']`` or
        ``pf.loc[condition, 'x']`` (free).  Nothing is charged either way.
        """
        name = column_label(self)
        if is_column(key) or isinstance(key, Expr):
            raise SchemaError(
                f"pf[{name}][condition]: select the rows on the frame, then the column: "
                f"pf[condition][{name}] or pf.loc[condition, {name}] (a filter, free), "
                "then an aggregate with epsilon=. Nothing was charged."
            )
        raise PrivacyViolationError(
            f"pf[{name}][{type(key).__name__}] picks values by position or label, which would "
            "reveal private rows, so dpframe refuses it. Instead: filter rows with "
            f"pf[condition][{name}] (free), then an aggregate with epsilon=."
        )

    def __dpframe__(self) -> SeriesHandle:
        """The column's handle (frame, expression, public facts): the protocol verbs read."""
        return self._handle

    # -- public facts --------------------------------------------------------

    @property
    def name(self) -> str:
        """The column name (or the expression, for derived series)."""
        return self._handle.info.name

    @property
    def dtype(self) -> str:
        """The dtype name (public)."""
        return self._handle.info.dtype

    @property
    def bounds(self) -> tuple[float, float] | None:
        """Declared or derived clamping bounds."""
        return self._handle.info.bounds

    @property
    def categories(self) -> tuple[Any, ...] | None:
        """Declared public keys."""
        return self._handle.info.categories

    @property
    def expr(self) -> Expr:
        """The expression tree of this series."""
        return self._handle.expr

    def __repr__(self) -> str:
        extra = f", bounds={self.bounds}" if self.bounds is not None else ""
        return f"PrivateSeries({self._handle.expr}, dtype={self.dtype}{extra}; values private)"

    # -- accessors (last: a property named ``str`` hides the builtin in later annotations) --

    def __dir__(self) -> list[str]:
        """What works on this column: ``dt`` only on dates, ``str`` only on text (as pandas)."""
        hidden = set()
        kind = self._handle.info.kind
        if kind != "datetime":
            hidden.add("dt")
        if kind not in ("text", "categorical"):
            hidden.add("str")
        return [name for name in super().__dir__() if name not in hidden]

    @property
    def dt(self) -> DatetimeAccessor:
        """Calendar fields and periods of a date column, as ``Series.dt`` (free)."""
        return DatetimeAccessor(self._handle, series_of)

    @property
    def str(self) -> StringAccessor:
        """Text methods of a text column, as ``Series.str`` (free)."""
        return StringAccessor(self._handle, series_of)
