"""``s.str.split(sep)`` and ``s.str.rsplit(sep)``: a list per row, read one part at a time.

A private column cannot hold lists, so ``split`` gives a :class:`SplitText`,
which only reads one part per row: ``.str[i]`` or ``.str.get(i)`` (as pandas
reads a list column), a derived text column
(:class:`~dpframe.plan.text_parts.StrPart`) that is free and can be filtered
on, grouped by and aggregated.  ``expand=True`` (a frame with one column per
part) is refused: the number of parts is a private fact of the rows;
``pf.assign(first=s.str.split(" ").str[0], last=s.str.split(" ").str[-1])``
does the same.

Example:
    >>> first = pf["name"].str.split(" ").str[0]  # doctest: +SKIP
    >>> first.value_counts(epsilon=0.5)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dpframe.api.handle import SeriesHandle
from dpframe.api.teaching import missing_attribute
from dpframe.api.verbs.columns import wrap
from dpframe.errors import SchemaError
from dpframe.plan.text import plain_pattern
from dpframe.plan.text_parts import StrPart

if TYPE_CHECKING:
    from dpframe.api.series import PrivateSeries

__all__ = ["SplitText", "split_text"]

_READ = (
    "A split makes a list per row; read one part with .str[i] or .str.get(i) (the i-th part, "
    "missing where a value has fewer parts), e.g. pf['name'].str.split(' ').str[0]."
)


def split_text(
    series: SeriesHandle,
    make: Callable[[SeriesHandle], PrivateSeries],
    pat: str | None,
    n: int | None,
    expand: bool,
    regex: bool | None,
    reverse: bool,
) -> SplitText:
    """``series.str.split(pat, n=n)`` (``rsplit`` with ``reverse``), checked before it runs."""
    method = "rsplit" if reverse else "split"
    if not isinstance(expand, bool):
        raise SchemaError(f"{method}(expand=...) takes True or False.")
    if expand:
        raise SchemaError(
            f"{method}(expand=True) would make one column per part, and how many parts there "
            "are is a private fact of the rows. Take the parts you want as columns instead: "
            "pf.assign(first=s.str.split(' ').str[0], last=s.str.split(' ').str[-1])."
        )
    if regex is True and pat is not None:
        raise SchemaError(
            f"{method}(regex=True): splitting on a regular expression is not available; "
            "split on plain text (regex=False) or on whitespace (no separator)."
        )
    if n is None or n == 0:  # pandas: None, 0 and -1 all split at every separator
        n = -1
    # pandas reads a separator of two or more characters as a regular expression unless
    # regex=False; one without metacharacters splits the same either way
    if regex is None and pat is not None and len(pat) > 1 and not plain_pattern(pat):
        raise SchemaError(
            f"{method}({pat!r}) is a regular expression in pandas (two or more characters "
            "with metacharacters), and splitting on one is not available here; "
            f"{method}({pat!r}, regex=False) splits on the text itself."
        )
    return SplitText(series, make, pat, n, reverse)


class SplitText:
    """The parts of each value of a text column (see the module); read with ``.str[i]``."""

    __slots__ = ("_make", "_n", "_reverse", "_sep", "_series")

    def __init__(
        self,
        series: SeriesHandle,
        make: Callable[[SeriesHandle], PrivateSeries],
        sep: str | None,
        n: int,
        reverse: bool,
    ) -> None:
        self._series = series
        self._make = make
        self._sep = sep
        self._n = n
        self._reverse = reverse
        StrPart(series.expr, sep, n, 0, reverse, series.info.max_length)  # checks the arguments

    def __repr__(self) -> str:
        method = "rsplit" if self._reverse else "split"
        return f"<{self._series.info.name!r}.str.{method}({self._sep!r}): read with .str[i]>"

    def __getattr__(self, name: str) -> Any:
        raise missing_attribute("a split", name, " " + _READ)

    @property
    def str(self) -> SplitParts:
        """The parts' accessor: ``.str[i]`` and ``.str.get(i)``."""
        return SplitParts(self)

    def part(self, index: int) -> PrivateSeries:
        """The ``index``-th part of each value (negative: from the end); missing if none."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise SchemaError(
                "A split's .str[i] takes one whole number i (slices and lists of parts are not "
                "available: take each part as its own column)."
            )
        node = StrPart(
            self._series.expr,
            self._sep,
            self._n,
            index,
            self._reverse,
            self._series.info.max_length,
        )
        return self._make(wrap(self._series, node))


class SplitParts:
    """``split(...).str``: reads one part per row (``[i]`` or ``get(i)``)."""

    __slots__ = ("_split",)

    def __init__(self, split: SplitText) -> None:
        self._split = split

    def __getitem__(self, index: int) -> PrivateSeries:
        return self._split.part(index)

    def get(self, i: int) -> PrivateSeries:
        """The ``i``-th part of each value, as pandas' ``.str.get(i)`` on a list column."""
        return self._split.part(i)

    def __getattr__(self, name: str) -> Any:
        raise missing_attribute("a split's .str", name, " " + _READ)
