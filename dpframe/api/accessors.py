"""``.dt`` and ``.str``: pandas' date and text accessors on private columns (free).

``pf["date"].dt.year`` and ``pf["name"].str.lower()`` take pandas' names and
arguments and give derived columns (expressions, see
:mod:`dpframe.plan.temporal` and :mod:`dpframe.plan.text`) that can be
filtered on, assigned, grouped by and aggregated like any other column.
Building them is free and reads no data; every release made from them is
charged as usual.  Their public keys follow from declarations: the years of
``.dt.year`` and the periods of ``.dt.to_period`` from the date column's
bounds, the keys of ``.str.upper()`` from the text column's categories, the
bounds of ``.str.len()`` from its declared maximum length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dpframe.api.handle import SeriesHandle
from dpframe.api.teaching import missing_attribute
from dpframe.api.text_splits import SplitText, split_text
from dpframe.api.verbs.columns import wrap
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.temporal import DtField, PeriodOf
from dpframe.plan.text import StrLen, StrMap, StrMatch, StrReplace

if TYPE_CHECKING:
    from dpframe.api.series import PrivateSeries

#: How an accessor turns a derived column's handle into the analyst's object.
Make = Callable[[SeriesHandle], "PrivateSeries"]

__all__ = ["DatetimeAccessor", "StringAccessor"]


def _no_flags(flags: object, method: str) -> None:
    if flags != 0:
        raise SchemaError(
            f"{method}() takes flags=0 only; use case=False, or inline flags such as (?s) in "
            "a regular expression (regex=True)."
        )


def _bool(value: object, name: str, method: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(f"{method}({name}=...) takes True or False.")
    return value


#: pandas text methods that make a list or a piece per row.
_PER_ROW_PIECES = frozenset({"partition", "rpartition", "extract", "extractall", "findall", "get"})
_SPLITTING = (
    " A list or a piece per row has no declared keys to group by: take one part with "
    ".str.split(sep).str[i], test for the part you want with .str.contains/startswith/"
    "endswith, or split the column before loading and declare the new columns' categories."
)


def _offered(accessor: object) -> str:
    """The public methods and properties of an accessor, in the order they are defined."""
    return ", ".join(n for n in vars(type(accessor)) if not n.startswith("_"))


class DatetimeAccessor:
    """``series.dt``: calendar fields and periods of a date column (as ``Series.dt``).

    Every field is a numeric column (``int32`` in pandas) whose public keys
    are the field's whole range (``month`` 1..12, ``day_of_week`` 0..6 with
    Monday 0, ``hour`` 0..23, ...) or, for ``year``, the years between the
    column's declared bounds; ``to_period(freq)`` gives :class:`pandas.Period`
    keys between the bounds.  A date outside the bounds keeps its own year and
    period (not a key: it counts in no declared group); a missing date gives a
    missing value.

    On a column that is not a date, every field refuses with a
    :class:`~dpframe.SchemaError` saying how to declare dates.

    Example:
        >>> by_year = pf.assign(year=pf["date"].dt.year).groupby("year")  # doctest: +SKIP
        >>> by_year.size(epsilon=0.1)  # one noisy count per declared year  # doctest: +SKIP
        >>> pf["date"].dt.to_period("M").value_counts(epsilon=0.1)  # doctest: +SKIP
    """

    __slots__ = ("_make", "_series")

    def __init__(self, series: SeriesHandle, make: Make) -> None:
        self._series = series
        self._make = make

    def __repr__(self) -> str:
        return f"<.dt of {self._series.info.name!r}>"

    def __getattr__(self, name: str) -> Any:
        raise missing_attribute(".dt", name, f" Date parts here: {_offered(self)}.")

    def _checked(self) -> SeriesHandle:
        info = self._series.info
        if info.kind != "datetime":
            raise SchemaError(
                f".dt needs a date column; {info.name!r} is {info.kind}. Declare dates with "
                f"bounds={{{info.name!r}: (pd.Timestamp('2000-01-01'), pd.Timestamp("
                f"'2020-12-31'))}} or dtypes={{{info.name!r}: 'datetime'}}."
            )
        return self._series

    def _derived(self, expr: Expr) -> PrivateSeries:
        return self._make(wrap(self._series, expr))

    def _field(self, field: str) -> PrivateSeries:
        return self._derived(DtField(self._checked().expr, field))

    @property
    def year(self) -> PrivateSeries:
        """The year; keys: the years between the declared bounds."""
        return self._field("year")

    @property
    def quarter(self) -> PrivateSeries:
        """The quarter, 1..4."""
        return self._field("quarter")

    @property
    def month(self) -> PrivateSeries:
        """The month, 1..12."""
        return self._field("month")

    @property
    def day(self) -> PrivateSeries:
        """The day of the month, 1..31."""
        return self._field("day")

    @property
    def day_of_week(self) -> PrivateSeries:
        """The day of the week, Monday 0 .. Sunday 6 (also ``dayofweek``, ``weekday``)."""
        return self._field("day_of_week")

    dayofweek = day_of_week  # pandas' older names
    weekday = day_of_week

    @property
    def day_of_year(self) -> PrivateSeries:
        """The day of the year, 1..366 (also ``dayofyear``)."""
        return self._field("day_of_year")

    dayofyear = day_of_year

    @property
    def hour(self) -> PrivateSeries:
        """The hour, 0..23."""
        return self._field("hour")

    @property
    def minute(self) -> PrivateSeries:
        """The minute, 0..59."""
        return self._field("minute")

    @property
    def second(self) -> PrivateSeries:
        """The second, 0..59."""
        return self._field("second")

    def to_period(self, freq: str) -> PrivateSeries:
        """The period holding each date (``"Y"``, ``"Q"``, ``"M"``, ``"W"``, ``"D"``, ``"h"``).

        Its keys are the :class:`pandas.Period` objects from the one holding
        the low bound to the one holding the high bound.
        """
        return self._derived(PeriodOf(self._checked().expr, freq))


class StringAccessor:
    """``series.str``: text methods of a text column (as ``Series.str`` on ``object`` text).

    ``lower``, ``upper``, ``strip``, ``lstrip``, ``rstrip`` and ``replace``
    give text columns (keyed by the column's categories mapped, when it has
    some); ``contains``, ``startswith`` and ``endswith`` give booleans; ``len``
    a number with bounds ``(0, max_length)``.  Values are truncated to the
    column's declared maximum length (``dtypes={"name": "text(40)"}``);
    ``len`` and a ``replace`` that can lengthen values need it.
    ``regex=True`` needs RE2 (``pip install 'dpframe[regex]'``) unless the
    pattern is plain text.  On a column that is not text, every method
    refuses with a :class:`~dpframe.SchemaError`.  See :mod:`dpframe.plan.text`.

    Example:
        >>> pf["region"].str.upper().value_counts(epsilon=0.1)  # doctest: +SKIP
        >>> pf[pf["name"].str.contains("smith", case=False)].count(epsilon=0.1)  # doctest: +SKIP
        >>> pf["name"].str.len().mean(epsilon=0.1)  # doctest: +SKIP
    """

    __slots__ = ("_make", "_series")

    def __init__(self, series: SeriesHandle, make: Make) -> None:
        self._series = series
        self._make = make

    def __repr__(self) -> str:
        return f"<.str of {self._series.info.name!r}>"

    def __getattr__(self, name: str) -> Any:
        hint = _SPLITTING if name in _PER_ROW_PIECES else ""
        raise missing_attribute(".str", name, f"{hint} Text methods here: {_offered(self)}.")

    def _checked(self) -> SeriesHandle:
        info = self._series.info
        if info.kind not in ("text", "categorical"):
            raise SchemaError(
                f".str needs a text column; {info.name!r} is {info.kind}. Declare text with "
                f"dtypes={{{info.name!r}: 'text'}} (or 'text(40)' with a maximum length)."
            )
        return self._series

    def _derived(self, expr: Expr) -> PrivateSeries:
        return self._make(wrap(self._series, expr))

    def _map(self, method: str, chars: str | None = None) -> PrivateSeries:
        series = self._checked()
        return self._derived(StrMap(series.expr, method, chars, series.info.max_length))

    def lower(self) -> PrivateSeries:
        """Lower case (``str.lower``)."""
        return self._map("lower")

    def upper(self) -> PrivateSeries:
        """Upper case (``str.upper``)."""
        return self._map("upper")

    def strip(self, to_strip: str | None = None) -> PrivateSeries:
        """Without leading and trailing whitespace (or the characters ``to_strip``)."""
        return self._map("strip", to_strip)

    def lstrip(self, to_strip: str | None = None) -> PrivateSeries:
        """Without leading whitespace (or the characters ``to_strip``)."""
        return self._map("lstrip", to_strip)

    def rstrip(self, to_strip: str | None = None) -> PrivateSeries:
        """Without trailing whitespace (or the characters ``to_strip``)."""
        return self._map("rstrip", to_strip)

    def len(self) -> PrivateSeries:
        """The number of characters; bounds ``(0, max_length)`` (needs a declared max length)."""
        return self._derived(StrLen(self._checked().expr))

    def contains(
        self,
        pat: str,
        case: bool = True,
        flags: int = 0,
        na: bool | None = None,
        regex: bool = True,
    ) -> PrivateSeries:
        """True where ``pat`` occurs (a regular expression with ``regex=True``, pandas' default).

        A pattern without metacharacters is matched as plain text; any other
        regular expression runs on RE2 (``pip install 'dpframe[regex]'``) and
        is refused without it, before anything is charged.  ``na`` fills
        missing values (None: missing).
        """
        series = self._checked()
        _no_flags(flags, "contains")
        node = StrMatch(
            series.expr,
            "contains",
            (pat,),
            _bool(case, "case", "contains"),
            _bool(regex, "regex", "contains"),
            na,
        )
        return self._derived(node)

    def startswith(self, pat: str | tuple[str, ...], na: bool | None = None) -> PrivateSeries:
        """True where the value starts with ``pat`` (or one of a tuple of prefixes)."""
        series, pats = self._checked(), pat if isinstance(pat, tuple) else (pat,)
        return self._derived(StrMatch(series.expr, "startswith", pats, na=na))

    def endswith(self, pat: str | tuple[str, ...], na: bool | None = None) -> PrivateSeries:
        """True where the value ends with ``pat`` (or one of a tuple of suffixes)."""
        series, pats = self._checked(), pat if isinstance(pat, tuple) else (pat,)
        return self._derived(StrMatch(series.expr, "endswith", pats, na=na))

    def split(
        self,
        pat: str | None = None,
        *,
        n: int | None = -1,
        expand: bool = False,
        regex: bool | None = None,
    ) -> SplitText:
        """The parts of each value, read one at a time: ``s.str.split(" ").str[0]`` (free).

        As pandas (``n``: at most that many splits; no ``pat``: runs of
        whitespace); ``.str[i]`` is a text column keyed by the parts of the
        column's categories, when it has some.  See :mod:`dpframe.api.text_splits`.
        """
        return split_text(self._checked(), self._make, pat, n, expand, regex, reverse=False)

    def rsplit(
        self, pat: str | None = None, *, n: int | None = -1, expand: bool = False
    ) -> SplitText:
        """As :meth:`split`, the splits counted from the end (``n``), as pandas."""
        return split_text(self._checked(), self._make, pat, n, expand, None, reverse=True)

    def replace(
        self,
        pat: str,
        repl: str,
        n: int = -1,
        case: bool | None = None,
        flags: int = 0,
        regex: bool = False,
    ) -> PrivateSeries:
        r"""Each occurrence of ``pat`` replaced by ``repl`` (the first ``n`` with ``n >= 0``).

        As pandas: a regular expression with ``regex=True`` (RE2; ``repl`` may
        refer to groups, ``\1`` or ``\g<name>``), plain text otherwise;
        ``case=False`` matches either case.  Values stay within the column's
        maximum length (truncated); a replacement that can lengthen values
        needs it declared.
        """
        series = self._checked()
        _no_flags(flags, "replace")
        if callable(repl):
            raise SchemaError("replace() takes a replacement string, not a function.")
        node = StrReplace(
            series.expr,
            pat,
            repl,
            n,
            True if case is None else _bool(case, "case", "replace"),
            _bool(regex, "regex", "replace"),
            series.info.max_length,
        )
        return self._derived(node)
