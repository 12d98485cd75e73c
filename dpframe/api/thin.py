"""The "too thin to read" warning of a release with many outputs, from public values only.

A budget split over many cells can leave each cell so little that its 95%
interval is wider than the value itself ("std 340 ± 500"): the number says
nothing.  :func:`warn_if_thin` looks at a released Series or DataFrame after
the release (post-processing: it reads the released values and their public
noise, never the data) and warns once, in one line, saying how many cells are
too thin and about which ε would bring them under the bar:

* a cell is too thin when its 95% interval reaches 0: the ± shown (the larger
  distance to an end) is at least its value's magnitude (a cell with no
  interval, e.g. a quantile's, is not judged);
* a correlation entry is too thin when its 95% interval spans more than half
  of [−1, 1] (the diagonal, always 1, is not judged).

Every release method with more than one output passes its result through it
(:func:`dpframe.api.fresh.fresh_aware`, and ``agg``, ``pivot_table`` and
``dp.crosstab`` directly).  It lives in the facade so that a curator's answer
warns in the analyst's kernel as an embedded one does.  ``session.explain``
says the same before anything is spent (:mod:`dpframe.mechanisms.core.explanations`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from dpframe.errors import DPError, caller_stacklevel
from dpframe.mechanisms.answers.array import DPArray
from dpframe.mechanisms.core.explanations import plain_number
from dpframe.mechanisms.moments.moments_family import MomentIntervals

__all__ = ["ThinCells", "thin_cells", "thin_message", "warn_if_thin"]

T = TypeVar("T")

#: Beyond this many times less noise, no ε is advised (cells reading near 0 stay thin).
_MOST_FACTOR = 1e4


@dataclass(frozen=True)
class ThinCells:
    """The cells of a release too thin to read (public: released values and noise only).

    Attributes:
        thin: how many cells are too thin.
        judged: how many cells were judged (those with a value and an interval).
        example: the thinnest cell, as ``label: value ± half-width``.
        factor: how many times less noise would bring every thin cell that does
            not read 0 under the bar (None: more than ten thousand times, or every
            thin cell reads 0).
        zeros: how many thin cells read 0 (a bound's clamp, or a value near 0): no
            ε brings those under a bar proportional to their value.
        hidden: cells shown ``<NA>`` because their group was too thin to show a
            value (the result's caption says so); counted in ``thin``.
        correlation: the bar is half of [−1, 1] (a correlation matrix).
        widest: the widest correlation interval (correlations only).
    """

    thin: int
    judged: int
    example: str
    factor: float | None
    zeros: int = 0
    hidden: int = 0
    correlation: bool = False
    widest: float = 0.0


def _label(key: Any) -> str:
    return ", ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def _columns(result: pd.Series | pd.DataFrame) -> list[tuple[str, pd.Series]]:
    """The released columns of ``result`` with their labels ("" for a Series)."""
    if isinstance(result, pd.Series):
        return [("", result)]
    return [(_label(name), result.iloc[:, j]) for j, name in enumerate(result.columns)]


@dataclass(frozen=True)
class _Judged:
    """The judged cells of a result: where each is, its value and 95% half-width."""

    # per column: its label ("" for a Series), its keys and the positions of the kept
    # ones (None: every cell of the column was kept, the common case)
    places: list[tuple[str, pd.Index, np.ndarray | None]]
    values: np.ndarray
    halves: np.ndarray  # infinite: no bound
    missing: int  # cells with no value

    def label(self, i: int) -> str:
        """Cell ``i``'s label (built for the one cell a message names)."""
        for prefix, keys, kept in self.places:
            size = len(keys) if kept is None else len(kept)
            if i < size:
                key = keys[i if kept is None else int(kept[i])]
                return f"({_label(key)}, {prefix})" if prefix else _label(key)
            i -= size
        raise IndexError(i)


def _cells(result: pd.Series | pd.DataFrame) -> _Judged:
    """Every judged cell (a cell with no value or no interval, e.g. a quantile's, is not)."""
    places: list[tuple[str, pd.Index, np.ndarray | None]] = []
    values: list[np.ndarray] = []
    halves: list[np.ndarray] = []
    missing = 0
    for prefix, column in _columns(result):
        array = column.array
        if not isinstance(array, DPArray):
            continue
        try:
            low, high = array.intervals(0.95)
        except DPError:  # a quantile's cells: a rank error, no value interval to judge
            continue
        except (ArithmeticError, ValueError):  # never lose a charged release to the check
            continue
        value = np.asarray(array.values, dtype=float)
        # The ± shown: the larger distance to an end (an interval clamped to a mean's
        # bounds is asymmetric: "100 ± 100" for [0, 100], whose half-width is 50).
        half = value - np.asarray(low, dtype=float)
        np.maximum(half, np.asarray(high, dtype=float) - value, out=half)
        np.maximum(half, 0.0, out=half)
        # Every cell judged (no value missing), the common case, read off two sums: a
        # finite sum has no NaN or infinite term, a sum that is not NaN no NaN term.
        if np.isfinite(value.sum()) and not np.isnan(half.sum()):
            places.append((prefix, column.index, None))
            values.append(value)
            halves.append(half)
            continue
        keep = np.isfinite(value) & ~np.isnan(half)
        if keep.all():  # every cell judged (a sum too large for a float): nothing to select
            places.append((prefix, column.index, None))
            values.append(value)
            halves.append(half)
            continue
        missing += int(np.isnan(value).sum())
        places.append((prefix, column.index, np.flatnonzero(keep)))
        values.append(value[keep])
        halves.append(half[keep])
    if not values:
        return _Judged([], np.zeros(0), np.zeros(0), missing)
    if len(values) == 1:  # a Series, or a table of one column: no copy
        return _Judged(places, values[0], halves[0], missing)
    return _Judged(places, np.concatenate(values), np.concatenate(halves), missing)


def _correlation(intervals: MomentIntervals) -> ThinCells | None:
    """The entries of a correlation matrix whose 95% interval spans over half of [−1, 1]."""

    def widths(factor: float) -> np.ndarray:
        low, high = intervals.boxes(0.95, factor)
        upper = np.triu_indices(low.shape[0], 1)
        return np.asarray(high - low, dtype=float)[upper]

    def readable(factor: float) -> bool:
        return float(np.max(widths(factor))) <= 1.0

    now = widths(1.0)
    thin = int(np.sum(now > 1.0))
    if thin == 0:
        return None
    factor: float | None = None
    low, high = 1.0, 2.0
    while factor is None and high <= _MOST_FACTOR:
        if readable(high):
            for _ in range(12):  # bisect: the least factor that brings the widest under 1
                middle = (low + high) / 2
                low, high = (low, middle) if readable(middle) else (middle, high)
            factor = high
        else:
            low, high = high, high * 2
    widest = float(np.max(now))
    return ThinCells(thin, len(now), "", factor, correlation=True, widest=widest)


def thin_cells(result: object) -> ThinCells | None:
    """The too-thin cells of a released Series or DataFrame; None when none is (or one cell)."""
    if not isinstance(result, (pd.Series, pd.DataFrame)):
        return None
    intervals = getattr(result.attrs.get("dpframe"), "intervals", None)
    if isinstance(intervals, MomentIntervals) and intervals.statistic == "corr":
        return _correlation(intervals)
    judged = _cells(result)
    values, halves, missing = judged.values, judged.halves, judged.missing
    notes = getattr(result.attrs.get("dpframe"), "notes", ()) or ()
    hidden = missing if any("too thin" in str(note) for note in notes) else 0
    if len(values) + hidden < 2:
        return None
    # The interval reaches 0 (or beyond): it cannot tell the value from nothing.
    magnitude = np.abs(values)
    thin = (halves >= magnitude) & (halves > 0)
    if not thin.any():
        if not hidden:
            return None
        return ThinCells(hidden, len(values) + hidden, "", None, hidden=hidden)
    zero = thin & (magnitude == 0)
    readable = thin & (magnitude != 0)  # thin cells that do not read 0 (values are not NaN)
    ratio = np.zeros(len(values))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(halves, magnitude, out=ratio, where=readable)
    worst = int(np.argmax(ratio)) if readable.any() else int(np.argmax(zero))
    example = (
        f"{judged.label(worst)}: {plain_number(float(values[worst]))} "
        f"± {plain_number(float(halves[worst]))}"
    )
    most = float(ratio[worst])
    # A little more than the ratio: at exactly the ratio the interval still reaches 0.
    factor = most * 1.05 if 1.0 <= most <= _MOST_FACTOR else None
    count, total = int(thin.sum()) + hidden, len(values) + hidden
    return ThinCells(count, total, example, factor, int(zero.sum()), hidden)


def _rounded_up(value: float) -> float:
    """``value`` rounded up to two significant digits.

    The advice must not read as the ε just spent: a cell barely over the bar
    needs ε × 1.0005, which two digits rounded to nearest showed as that ε.
    """
    step = 10.0 ** (math.floor(math.log10(value)) - 1)
    units = value / step
    return math.ceil(units - 1e-9 * units) * step


def _advice(cells: ThinCells, cost: Any, under: str) -> str:
    """Which ε (pure DP) or how much less noise would bring the thin cells under the bar."""
    zeros = (
        f"; {cells.zeros} read 0, too thin at any ε unless their truth is far from 0"
        if cells.zeros
        else ""
    )
    if cells.hidden:
        zeros += f"; {cells.hidden} shown <NA>, too thin to show a value"
    if cells.factor is None:
        return zeros + "; a much larger ε, fewer cells or tighter bounds would be needed"
    them = "it" if cells.thin - cells.zeros - cells.hidden == 1 else "them"
    others = " the others" if cells.zeros else ""
    epsilon = getattr(cost, "epsilon", None)
    if epsilon and getattr(cost, "delta", 1) == 0:
        scaled = plain_number(_rounded_up(float(epsilon) * cells.factor))
        return f"; about ε={scaled} would bring{others or ' ' + them} {under}{zeros}"
    factor = plain_number(_rounded_up(cells.factor))
    return (
        f"; about {factor} times less noise (a larger ε, fewer cells or "
        f"tighter bounds) would bring{others or ' ' + them} {under}{zeros}"
    )


def thin_message(result: object) -> str | None:
    """The one-line "too thin to read" warning for ``result``; None when no cell is too thin."""
    cells = thin_cells(result)
    if cells is None:
        return None
    cost = getattr(getattr(result, "attrs", {}).get("dpframe"), "cost", None)
    if cells.correlation:
        return (
            f"Too thin to read: a correlation's 95% interval spans {cells.widest:.2f} of "
            f"[−1, 1] at this ε ({cells.thin} of {cells.judged} entries span over half)"
            f"{_advice(cells, cost, 'under half')} (dp.ci gives every entry's interval)."
        )
    verb = "has" if cells.thin == 1 else "have"
    thinnest = f" (thinnest: {cells.example})" if cells.example else ""
    return (
        f"Too thin to read: {cells.thin} of {cells.judged} cells {verb} a 95% interval wider "
        f"than the value{thinnest}{_advice(cells, cost, 'under that bar')} "
        "(dp.ci gives every interval)."
    )


def warn_if_thin(result: T) -> T:
    """Warn once (a ``UserWarning``) when cells of ``result`` are too thin; return it unchanged."""
    message = thin_message(result)
    if message is not None:
        warnings.warn(message, UserWarning, stacklevel=caller_stacklevel())
    return result
