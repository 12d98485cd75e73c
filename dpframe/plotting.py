"""Plots of releases with their confidence intervals (needs matplotlib).

:func:`plot` draws a release, a released Series (``dp`` dtype: also after
``sort_values``, ``head``, arithmetic...) or a released DataFrame (each
``dp`` column as bars beside each other) with ``level`` error bars from the
cells' own intervals (free of privacy cost).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers import DPArray
from dpframe.mechanisms.answers.results import GroupedRelease, Release, ci

__all__ = ["axis_labels", "crowded", "plot"]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise DPError("Plotting needs matplotlib: pip install matplotlib.") from None
    return plt


def _title(result: pd.Series | pd.DataFrame) -> str:
    meta = result.attrs.get("dpframe")
    query = getattr(meta, "query", None)
    if isinstance(query, str):
        return query
    return str(getattr(result, "name", "") or "")


def plot(
    result: pd.Series | pd.DataFrame | Release, level: float = 0.95, ax: Any = None, **kwargs: Any
) -> Any:
    """A bar chart of released values with their ``level`` confidence intervals as error bars.

    Example:
        >>> dp.plot(pf.groupby("region")["wage"].mean(epsilon=0.5))  # doctest: +SKIP

    Free (the released values and their public noise).

    Args:
        result: a release, a released Series (one bar per key) or a released
            DataFrame (per row, one bar per ``dp`` column).
        level: the intervals' coverage.
        ax: a matplotlib ``Axes`` to draw on (default: a new figure).
        **kwargs: passed to ``Axes.bar`` (``figsize=`` makes the figure).

    Returns:
        The matplotlib ``Axes``.
    """
    plt = _pyplot()
    if isinstance(result, pd.DataFrame):
        return _plot_frame(result, level, ax, plt, **kwargs)
    if isinstance(result, Release):
        title = result.query
        low, high = result.ci(level)
        values = pd.Series([result.value], index=[result.query])
        lows, highs = pd.Series([low], index=values.index), pd.Series([high], index=values.index)
    else:
        released = isinstance(result, pd.Series) and (
            isinstance(result.array, DPArray)
            or isinstance(result.attrs.get("dpframe"), GroupedRelease)
        )
        if not released:
            raise DPError("plot() needs a release or a grouped result returned by dpframe.")
        title = _title(result)
        intervals = ci(result, level)
        values = pd.Series(result.to_numpy(dtype=float), index=result.index, name=result.name)
        lows, highs = intervals["low"], intervals["high"]
    if ax is None:
        _, ax = plt.subplots(figsize=kwargs.pop("figsize", (6, 3.5)), layout="constrained")
    labels = axis_labels(values.index)
    errors = [
        np.clip(values.to_numpy() - lows.to_numpy(), 0, None),
        np.clip(highs.to_numpy() - values.to_numpy(), 0, None),
    ]
    ax.bar(labels, values.to_numpy(), yerr=errors, capsize=4, color="#4c72b0", **kwargs)
    ax.set_ylabel(f"{values.name or 'value'} ({level:.0%} CI)")
    if values.index.name:
        ax.set_xlabel(str(values.index.name))
    _rotate_if_crowded(ax, labels)
    ax.set_title(title, fontsize=10)
    return ax


def _plot_frame(frame: pd.DataFrame, level: float, ax: Any, plt: Any, **kwargs: Any) -> Any:
    """Grouped bars: per row, one bar per ``dp`` column, each with its error bar."""
    columns = [j for j in range(len(frame.columns)) if isinstance(frame.iloc[:, j].array, DPArray)]
    if not columns:
        raise DPError("plot() needs a released DataFrame (dp columns), e.g. dp.crosstab(...).")
    if ax is None:
        _, ax = plt.subplots(figsize=kwargs.pop("figsize", (7, 3.5)), layout="constrained")
    labels = axis_labels(frame.index)
    width = 0.8 / len(columns)
    positions = np.arange(len(frame))
    for k, j in enumerate(columns):
        array = frame.iloc[:, j].array
        assert isinstance(array, DPArray)
        values = array.values
        low, high = array.intervals(level)
        errors = [np.clip(values - low, 0, None), np.clip(high - values, 0, None)]
        ax.bar(
            positions + (k - (len(columns) - 1) / 2) * width,
            values,
            width,
            yerr=errors,
            capsize=3,
            label=str(frame.columns[j]),
            **kwargs,
        )
    ax.set_xticks(positions, labels)
    ax.set_ylabel(f"value ({level:.0%} CI)")
    if frame.index.name:
        ax.set_xlabel(str(frame.index.name))
    ax.legend(title=str(frame.columns.name) if frame.columns.name else None, fontsize=8)
    _rotate_if_crowded(ax, labels)
    ax.set_title(_title(frame), fontsize=10)
    return ax


def _rotate_if_crowded(ax: Any, labels: list[str]) -> None:
    if crowded(labels, ax.get_figure().get_figwidth()):
        ax.tick_params(axis="x", labelrotation=30)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")


def axis_labels(index: pd.Index) -> list[str]:
    """Short tick labels: bins as ``0–250`` (pandas' ``[0.0, 250.0)`` is long), tuples joined."""
    labels = []
    for key in index:
        if isinstance(key, pd.Interval):
            labels.append(f"{key.left:g}–{key.right:g}")
        elif isinstance(key, tuple):
            labels.append(" / ".join(map(str, key)))
        else:
            labels.append(str(key))
    return labels


#: Characters of 10-point tick labels that fit side by side per inch of figure width,
#: with room between them (measured: at 6 inches, 7 labels of 9 characters touch).
CHARACTERS_PER_INCH = 8


def crowded(labels: list[str], width_inches: float = 6.0) -> bool:
    """True when the labels, side by side, would touch on an axis ``width_inches`` wide."""
    if not labels:
        return False
    return max(len(label) for label in labels) * len(labels) > CHARACTERS_PER_INCH * width_inches
