"""``.dp`` on released Series and DataFrames: intervals, plain values, plots, rolling sums.

Registered with pandas' public accessor API when dpframe is imported.
``result.dp.ci(level)`` gives every cell's interval (also after
``sort_values``, ``head``, arithmetic and ``cumsum``: the cells carry their
uncertainty, :mod:`dpframe.mechanisms.answers`); ``.dp.raw`` the plain
values; ``.dp.plot()`` bars with error bars; ``.dp.rolling(w).sum()`` and
``.mean()`` rolling windows that keep the intervals (pandas' own
``rolling`` turns the values into plain floats); ``.dp.undeclared`` the
noisy count of a group-by's rows with undeclared keys.  On a Series or
DataFrame that dpframe did not release, each raises :class:`DPError`.
Everything here is post-processing: free of privacy cost.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers import DPArray
from dpframe.mechanisms.answers.results import Release, ci, undeclared_of
from dpframe.plotting import plot

__all__ = ["FrameAccessor", "Rolling", "SeriesAccessor"]


class Rolling:
    """Rolling windows of a released Series that keep each window's interval."""

    def __init__(self, series: pd.Series, window: int) -> None:
        array = series.array
        if not isinstance(array, DPArray):
            raise DPError(".dp.rolling needs a released Series (dp dtype).")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise DPError("rolling(window): a whole number of cells, at least 1.")
        self._series, self._array, self._window = series, array, window

    def sum(self) -> pd.Series:
        """The sum of each window of ``window`` cells ending at each cell (NaN before)."""
        sums: pd.Series = pd.Series(
            self._array.rolling_sums(self._window), index=self._series.index, name=self._series.name
        )
        return sums

    def mean(self) -> pd.Series:
        """The mean of each window (its sum over the public window size)."""
        means: pd.Series = self.sum() / float(self._window)
        return means


@pd.api.extensions.register_series_accessor("dp")
class SeriesAccessor:
    """``series.dp``: see the module docstring."""

    def __init__(self, series: pd.Series) -> None:
        self._series = series

    def ci(self, level: float = 0.95) -> pd.DataFrame:
        """Per-cell intervals: a DataFrame with ``low`` and ``high`` (see :func:`dpframe.ci`)."""
        table: pd.DataFrame = ci(self._series, level)
        return table

    @property
    def raw(self) -> pd.Series:
        """The plain released values (float64), for code that wants numbers only."""
        values: pd.Series = pd.Series(
            self._series.to_numpy(dtype=float), index=self._series.index, name=self._series.name
        )
        return values

    def plot(self, level: float = 0.95, ax: Any = None, **kwargs: Any) -> Any:
        """Bars with error bars (see :func:`dpframe.plot`)."""
        return plot(self._series, level=level, ax=ax, **kwargs)

    def rolling(self, window: int) -> Rolling:
        """Rolling windows that keep their intervals: ``.dp.rolling(3).sum()`` / ``.mean()``."""
        return Rolling(self._series, window)

    @property
    def undeclared(self) -> Release | None:
        """The noisy count of the rows whose key is not declared (free; None: no such cell)."""
        return undeclared_of(self._series)


@pd.api.extensions.register_dataframe_accessor("dp")
class FrameAccessor:
    """``frame.dp``: intervals, plain values and plots of a released DataFrame."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def ci(self, level: float = 0.95) -> pd.DataFrame:
        """Every cell's interval: columns ``(column, "low" | "high")`` (see :func:`dpframe.ci`)."""
        table: pd.DataFrame = ci(self._frame, level)
        return table

    @property
    def raw(self) -> pd.DataFrame:
        """The plain values: every ``dp`` column as float64."""
        columns = {
            j: (
                self._frame.iloc[:, j].to_numpy(dtype=float)
                if isinstance(self._frame.iloc[:, j].array, DPArray)
                else self._frame.iloc[:, j].to_numpy()
            )
            for j in range(len(self._frame.columns))
        }
        plain: pd.DataFrame = pd.DataFrame(columns, index=self._frame.index)
        plain.columns = self._frame.columns
        return plain

    def plot(self, level: float = 0.95, ax: Any = None, **kwargs: Any) -> Any:
        """Grouped bars with error bars (see :func:`dpframe.plot`)."""
        return plot(self._frame, level=level, ax=ax, **kwargs)
