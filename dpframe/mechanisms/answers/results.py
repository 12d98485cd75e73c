"""Releases: the differentially private answers dpframe returns.

A :class:`Release` behaves as a number and carries its cost, mechanism,
noise scale and a confidence interval computed from the known noise
distribution (post-processing: free of privacy cost).  Grouped results are
pandas Series of the ``dp`` dtype (:mod:`dpframe.mechanisms.answers`): every
cell carries its uncertainty through pandas' own steps and prints as
``value ± half-width``; their ``attrs["dpframe"]`` holds the release's
:class:`GroupedRelease` (cost, query, the rows with undeclared keys).
Released DataFrames (``describe()``, ``agg``, ``crosstab``) have ``dp``
columns and a :class:`FrameRelease`.
"""

from __future__ import annotations

import dataclasses
import functools
import html
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers import Block, DPArray, DPValue
from dpframe.mechanisms.answers.arithmetic import warn_plain
from dpframe.mechanisms.answers.display import shown_interval
from dpframe.mechanisms.answers.forms import check_level
from dpframe.mechanisms.answers.winner import statement_of
from dpframe.plan.privacy import Budget

__all__ = [
    "FrameRelease",
    "GroupedRelease",
    "Intervals",
    "NoInterval",
    "Release",
    "UndeclaredRows",
    "answer_array",
    "as_answer",
    "ci",
    "is_count",
    "released_frame",
    "undeclared_of",
]


class Intervals(Protocol):
    """Anything that computes per-cell confidence intervals from released values."""

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper ends per cell, coverage at least ``level``."""
        ...


@dataclass(frozen=True)
class NoInterval:
    """For mechanisms whose error is not additive noise (selection): ``ci()`` explains why."""

    reason: str

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Raise a :class:`DPError` with the reason."""
        raise DPError(self.reason)


def is_count(intervals: object) -> bool:
    """True when the cells are whole numbers: a count's, or quantiles chosen among integers."""
    return getattr(intervals, "statistic", None) == "count" or getattr(intervals, "integer", False)


@dataclass(frozen=True, eq=False)
class Release:
    """One differentially private number.

    Attributes:
        value: the released value (a float on a public power-of-two grid, or
            post-processed from such floats).
        cost: the privacy budget this release was charged.
        mechanism: the noise distribution used.
        scale: the noise scale (Laplace b or Gaussian σ) of the value; for a
            mean, variance or standard deviation, an approximate error scale.
        query: a description of what was asked.
        rho: the zCDP ρ charged, in zCDP sessions (else None).
    """

    value: float
    cost: Budget
    mechanism: str
    scale: float
    query: str
    intervals: Intervals
    rho: Fraction | None = None

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """A (low, high) interval that contains the exact answer with probability ≥ ``level``.

        Computed from the noise distribution that was actually used; costs no
        privacy (it is a function of the released values and public facts).
        """
        low, high = self.intervals.interval(level)
        return float(low[0]), float(high[0])

    def __float__(self) -> float:
        return float(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __round__(self, ndigits: int | None = None) -> float:
        return round(self.value, ndigits)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @functools.cached_property
    def cell(self) -> DPValue[DPArray]:
        """This release as one ``dp`` cell (a :class:`DPValue`): its arithmetic keeps the interval.

        Built once per release, so a release combined with itself (``r - r``)
        is one noise draw, not two.  Free: post-processing of the release.
        """
        return DPValue(answer_array([self.value], self.intervals))

    def _operand(self, other: Any) -> Any:
        """``other`` for the cell's arithmetic: a release as its cell, anything else as is."""
        return other.cell if isinstance(other, Release) else other

    # + - * / keep the interval (a DPValue, as a grouped result's cell); the rest warn.
    def __add__(self, other: Any) -> Any:
        return self.cell.__add__(self._operand(other))

    def __radd__(self, other: Any) -> Any:
        return self.cell.__radd__(self._operand(other))

    def __sub__(self, other: Any) -> Any:
        return self.cell.__sub__(self._operand(other))

    def __rsub__(self, other: Any) -> Any:
        return self.cell.__rsub__(self._operand(other))

    def __mul__(self, other: Any) -> Any:
        return self.cell.__mul__(self._operand(other))

    def __rmul__(self, other: Any) -> Any:
        return self.cell.__rmul__(self._operand(other))

    def __truediv__(self, other: Any) -> Any:
        return self.cell.__truediv__(self._operand(other))

    def __rtruediv__(self, other: Any) -> Any:
        return self.cell.__rtruediv__(self._operand(other))

    def __neg__(self) -> Any:
        return -self.cell

    def __pow__(self, other: Any) -> float:
        warn_plain("**", stacklevel=3)
        return float(self.value ** float(other))

    def __rpow__(self, other: Any) -> float:
        warn_plain("**", stacklevel=3)
        return float(float(other) ** self.value)

    def __floordiv__(self, other: Any) -> float:
        warn_plain("//", stacklevel=3)
        return self.value // float(other)

    def __mod__(self, other: Any) -> float:
        warn_plain("%", stacklevel=3)
        return self.value % float(other)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The released value as a 0-d array, so numpy functions (np.sqrt, ...) accept it."""
        return np.asarray(self.value, dtype=dtype)

    def __abs__(self) -> float:
        warn_plain("abs()", stacklevel=3)
        return abs(self.value)

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

    def __hash__(self) -> int:
        return hash(self.value)

    def _shown(self) -> tuple[str, str]:
        """The value as shown (two significant digits of its uncertainty) and its accuracy."""
        if isinstance(self.intervals, NoInterval):
            if not np.isfinite(self.scale):
                return f"{self.value:.6g}", "no value interval"
            return f"{self.value:.6g}", f"95% rank error ±{self.scale:.3g}"
        low, high = self.ci()
        text, low_text, high_text = shown_interval(self.value, low, high, is_count(self.intervals))
        return text, f"95% CI [{low_text}, {high_text}]"

    def __repr__(self) -> str:
        value, accuracy = self._shown()
        return f"Release({value}, {accuracy}, cost {self.cost}, {self.mechanism})"

    def _repr_html_(self) -> str:
        value, accuracy = self._shown()
        return (
            "<div class='dpframe-release'>"
            f"<b>{html.escape(value)}</b> "
            f"<span style='color:#666'>{html.escape(accuracy)} · cost "
            f"{html.escape(str(self.cost))} · {html.escape(self.mechanism)}</span></div>"
        )


@dataclass(frozen=True, eq=False)
class UndeclaredRows:
    """The rows a group-by over declared keys left out: their noisy count, never their values.

    Attributes:
        count: the noisy number of kept rows whose keys are all present and
            not all declared (a :class:`Release`, free: ``cost`` is zero, the
            group-by's charge covers it; see :mod:`dpframe.mechanisms.moments.undeclared`).
        threshold: the noisy count above which they are clearly there (the
            noise's 1 − 10⁻⁶ quantile).
        keys: the key columns (public names).
        outside: what the rows are outside of: ``"the declared categories"``
            or ``"the bins"``.
    """

    count: Release
    threshold: float
    keys: tuple[str, ...]
    outside: str

    @property
    def clearly_present(self) -> bool:
        """True when the noisy count is above :attr:`threshold` (not explained by noise)."""
        return float(self.count.value) > self.threshold

    def message(self) -> str:
        """The warning: how many rows (rounded, noisy) and which key columns; no value."""
        what = "a " + " or ".join(self.keys)
        about = _about(float(self.count.value))
        rows = "row has" if about == "1" else "rows have"
        return (
            f"about {about} {rows} {what} outside {self.outside}; "
            "check spelling and case. They are in no group; result.dp.undeclared is their "
            "noisy count (free: part of this release)."
        )


def _about(value: float) -> str:
    """A noisy count rounded to two significant digits, with thousands separators."""
    if value < 100:
        return f"{max(round(value), 0):,}"
    digits = len(str(int(value))) - 2
    return f"{round(value, -digits):,.0f}"


@dataclass(frozen=True, eq=False)
class GroupedRelease:
    """Metadata of a grouped result (stored in the Series' ``attrs["dpframe"]``).

    ``undeclared`` holds the noisy count of the rows whose key is outside the
    declared ones (None when the group-by has no such cell: discovered keys).
    ``notes`` are said once under the result (in its caption): e.g. which
    groups were too thin to show a value.  ``released`` holds every group's
    released value, the thin ones included (``values`` and the Series show
    those as missing); None when no group was hidden.
    """

    index: pd.Index
    cost: Budget
    mechanism: str
    scales: np.ndarray
    query: str
    intervals: Intervals
    rho: Fraction | None = None
    values: np.ndarray | None = None
    undeclared: UndeclaredRows | None = None
    notes: tuple[str, ...] = ()
    released: np.ndarray | None = None

    def matches(self, series: pd.Series) -> bool:
        """True when ``series`` still holds exactly the released values and keys."""
        if self.values is None or not series.index.equals(self.index):
            return False
        return bool(np.array_equal(series.to_numpy(dtype=float), self.values, equal_nan=True))

    def ci(self, level: float = 0.95) -> pd.DataFrame:
        """Per-group (low, high) intervals with coverage ≥ ``level`` each."""
        low, high = self.intervals.interval(level)
        table: pd.DataFrame = pd.DataFrame({"low": low, "high": high}, index=self.index)
        return table

    def __deepcopy__(self, memo: dict[int, Any]) -> GroupedRelease:
        return self


@dataclass(frozen=True, eq=False)
class FrameRelease:
    """Metadata of a released DataFrame such as ``describe()`` (in ``attrs["dpframe"]``).

    ``intervals.interval(level)`` gives (low, high) arrays of the frame's
    shape; a cell without an interval (a quartile: its accuracy is a rank
    error) has NaN ends.
    """

    index: pd.Index
    columns: pd.Index
    cost: Budget
    mechanism: str
    query: str
    intervals: Intervals
    values: np.ndarray

    def matches(self, frame: pd.DataFrame) -> bool:
        """True when ``frame`` still holds exactly the released values, rows and columns."""
        if not (frame.index.equals(self.index) and frame.columns.equals(self.columns)):
            return False
        now = frame.to_numpy(dtype=object)
        if now.shape != self.values.shape:
            return False
        both_missing = pd.isna(now) & pd.isna(self.values)
        return bool(((now == self.values) | both_missing).all())

    def ci(self, level: float = 0.95) -> pd.DataFrame:
        """The frame's intervals: columns ``(column, "low" | "high")``, the same rows."""
        low, high = self.intervals.interval(level)
        parts = {}
        for j, name in enumerate(self.columns):
            parts[(name, "low")] = low[:, j]
            parts[(name, "high")] = high[:, j]
        table: pd.DataFrame = pd.DataFrame(parts, index=self.index)
        table.columns = pd.MultiIndex.from_tuples(list(parts))
        return table

    def __deepcopy__(self, memo: dict[int, Any]) -> FrameRelease:
        return self


def ci(result: Release | pd.Series | pd.DataFrame | DPArray | object, level: float = 0.95) -> Any:
    """Where the true value lies, with probability ``level``: one release's, or each cell's.

    A single number (a release, a cell taken out of a released result, or
    arithmetic on them such as ``m1 - m2``) gives ``(low, high)``.

    Example:
        >>> dp.ci(pf["wage"].mean(epsilon=0.1))  # doctest: +SKIP
        >>> dp.ci(pf.groupby("region")["wage"].mean(epsilon=0.2))  # doctest: +SKIP

    Free: computed from the released values and their public noise.  A
    release gives ``(low, high)``; a released Series a DataFrame with columns
    ``low`` and ``high``; a released DataFrame (``describe()``) the same rows
    with columns ``(column, "low" | "high")``.  A key chosen by ``mode()`` or
    ``argmax()`` has no interval: it gives, in words, how far the chosen key's
    count (sum, mean) can be from the best one's, at 95%.
    """
    if isinstance(result, (Release, DPValue)):  # one number: a release, or a cell of one
        return result.ci(level)
    chosen = statement_of(result)
    if chosen is not None:  # a key has no interval: how sure the choice is, in words
        if check_level(level) > 0.95 + 1e-12:
            raise DPError(
                f"A key chosen by mode() or argmax() states how sure the choice is at 95% "
                f"only (asked: {level:g}); a 95% statement also holds at any lower level."
            )
        return chosen
    if isinstance(result, DPArray):  # an array of released cells (qcut's edges)
        result = pd.Series(result)
    if isinstance(result, pd.Series) and isinstance(result.array, DPArray):
        low, high = result.array.intervals(level)
        table: pd.DataFrame = pd.DataFrame({"low": low, "high": high}, index=result.index)
        return table
    if isinstance(result, pd.DataFrame) and any(
        isinstance(result.iloc[:, j].array, DPArray) for j in range(len(result.columns))
    ):
        return _frame_ci(result, level)
    if isinstance(result, pd.DataFrame):
        meta = result.attrs.get("dpframe")
        if isinstance(meta, FrameRelease):
            if not meta.matches(result):
                raise DPError(
                    "This DataFrame is not the released one (its values, rows or columns "
                    "changed since), so the release's intervals do not apply to it. Take the "
                    "intervals of the result as returned, then transform both."
                )
            return meta.ci(level)
    if isinstance(result, pd.Series):
        meta = result.attrs.get("dpframe")
        if isinstance(meta, GroupedRelease):
            if not meta.matches(result):
                raise DPError(
                    "This Series is not the released one (its values or keys changed since), "
                    "so the release's intervals do not apply to it. Take the intervals of the "
                    "result as returned, then transform both."
                )
            return meta.ci(level)
    raise DPError(
        "ci() needs a dpframe release, grouped result or released table (describe()), got "
        f"{type(result).__name__}. A private copy and a fitted model have no value interval: "
        "their docstrings state their accuracy (a key chosen by mode() or argmax() gives how "
        "sure the choice is)."
    )


def undeclared_of(result: pd.Series) -> Release | None:
    """The noisy count of a group-by's rows with undeclared keys (None: no such cell).

    Raises:
        DPError: for a Series that dpframe did not release.
    """
    meta = result.attrs.get("dpframe") if isinstance(result, pd.Series) else None
    if not isinstance(meta, GroupedRelease):
        raise DPError("undeclared needs a grouped result returned by dpframe.")
    return None if meta.undeclared is None else meta.undeclared.count


def _frame_ci(frame: pd.DataFrame, level: float) -> pd.DataFrame:
    """A frame's intervals: columns ``(column, "low" | "high")`` (NaN for a non-``dp`` column)."""
    parts: dict[tuple[Any, str], np.ndarray] = {}
    for position in range(len(frame.columns)):
        array = frame.iloc[:, position].array
        if isinstance(array, DPArray):
            low, high = array.intervals(level)
        else:  # numbers and text (describe's count, top, freq): the dp cells' intervals
            low, high = np.full(len(frame), np.nan), np.full(len(frame), np.nan)
            for i, cell in enumerate(frame.iloc[:, position]):
                if isinstance(cell, DPValue):
                    low[i], high[i] = cell.ci(level)
        name = frame.columns[position]
        parts[(name, "low")] = low
        parts[(name, "high")] = high
    table: pd.DataFrame = pd.DataFrame(
        list(zip(*parts.values(), strict=True)), index=frame.index, columns=list(range(len(parts)))
    )
    table.columns = pd.MultiIndex.from_tuples(list(parts))
    return table


@dataclass(frozen=True, eq=False)
class _Column:
    """One column of a released frame's interval model (a model over its rows)."""

    model: Intervals
    column: int

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        low, high = self.model.interval(level)
        return np.asarray(low)[:, self.column], np.asarray(high)[:, self.column]


def answer_array(
    values: Any, intervals: Any, integer: bool | npt.NDArray[np.bool_] | None = None
) -> DPArray:
    """A release's cells as a ``dp`` array: each cell's own error, as its model says.

    A count's or a sum's cells (one noise per cell, :class:`IntervalModel`
    of a count or sum) carry that noise, so their combinations are exact;
    other cells carry their model's interval (a mean's, a variance's); a
    mechanism without a value interval (a quantile's rank error) gives cells
    that show their value only.
    """
    released = np.asarray(values, dtype=float)
    n = len(released)
    noise: tuple[Any, ...] = tuple(getattr(intervals, "noise", ()))
    if getattr(intervals, "statistic", None) in ("count", "sum") and len(noise) == 1:
        block = Block(n, noise=noise[0])
    elif isinstance(intervals, NoInterval):
        block = Block(n, reason=intervals.reason)
    else:
        block = Block(n, model=intervals, released=released)
    shown_integer = is_count(intervals) if integer is None else integer
    return DPArray.of_block(released, block, shown_integer)


def grouped_series(values: np.ndarray, meta: GroupedRelease, name: Hashable) -> pd.Series:
    """Build the public Series of a grouped release (``dp`` dtype, metadata in ``attrs``)."""
    released = np.asarray(values, dtype=float)
    series: pd.Series = pd.Series(
        answer_array(released, meta.intervals), index=meta.index, name=name
    )
    series.attrs["dpframe"] = dataclasses.replace(meta, values=released)
    return series


def released_frame(frame: pd.DataFrame, meta: FrameRelease) -> pd.DataFrame:
    """``frame`` with ``dp`` columns from ``meta``'s intervals, and ``meta`` in its ``attrs``.

    A column that is not all numbers (``describe(include="all")``'s ``top``)
    keeps its values as they are.
    """
    integer = is_count(meta.intervals)
    whole_cells = getattr(meta.intervals, "whole_cells", None)  # per cell (describe)
    columns: dict[int, Any] = {}
    for j in range(len(frame.columns)):
        column = frame.iloc[:, j]
        whole = integer if whole_cells is None else whole_cells(j)
        try:
            values = column.to_numpy(dtype=float)
        except (TypeError, ValueError):  # numbers and text: the numbers with an interval
            columns[j] = _mixed_cells(column.to_numpy(), _Column(meta.intervals, j), whole)
            continue
        columns[j] = answer_array(values, _Column(meta.intervals, j), whole)
    released: pd.DataFrame = pd.DataFrame(columns, index=frame.index)
    released.columns = frame.columns
    released.attrs = dict(frame.attrs)
    released.attrs["dpframe"] = meta
    return released


@dataclass(frozen=True, eq=False)
class _Cell:
    """One cell of a column's interval model."""

    model: Intervals
    row: int

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        low, high = self.model.interval(level)
        return np.asarray(low)[self.row : self.row + 1], np.asarray(high)[self.row : self.row + 1]


def _mixed_cells(values: np.ndarray, model: Intervals, whole: Any) -> np.ndarray:
    """A column of numbers and text (``describe(include="all")``'s), as cells.

    Numbers with an interval become ``dp`` cells (:class:`DPValue`); the rest
    stay as they are.
    """
    cells = np.array(values, dtype=object)
    low, high = model.interval(0.95)
    shown_whole = np.broadcast_to(np.asarray(whole, dtype=bool), (len(cells),))
    for i, value in enumerate(values):
        numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
        if numeric and np.isfinite(low[i]) and np.isfinite(high[i]):
            one = answer_array([float(value)], _Cell(model, i), bool(shown_whole[i]))
            cells[i] = DPValue(one)
    return cells


def as_answer(result: Any) -> Any:
    """A released Series or DataFrame with plain values, as ``dp`` (anything else: as is).

    Used where a release's values travelled as plain numbers (the curator's
    answers) and at the boundary of code that built a plain result.
    """
    meta = getattr(result, "attrs", {}).get("dpframe")
    if isinstance(result, pd.Series) and isinstance(meta, GroupedRelease):
        if isinstance(result.array, DPArray) or not meta.matches(result):
            return result
        return grouped_series(result.to_numpy(dtype=float), meta, result.name)
    if isinstance(result, pd.DataFrame) and isinstance(meta, FrameRelease):
        dp_columns = [isinstance(result[c].array, DPArray) for c in result.columns]
        if all(dp_columns) or not meta.matches(result):
            return result
        return released_frame(result, meta)
    return result
