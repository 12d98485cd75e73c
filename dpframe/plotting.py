"""Plots of releases with their confidence intervals (needs matplotlib)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.results import GroupedRelease, Release, ci, undeclared_of

__all__ = ["plot"]


def plot(result: pd.Series | Release, level: float = 0.95, ax: Any = None, **kwargs: Any) -> Any:
    """A bar chart of a grouped release (or one bar for a single release) with error bars.

    The bars are the released values; the error bars are the ``level``
    confidence intervals from :func:`dpframe.ci` (free of privacy cost).

    Returns:
        The matplotlib ``Axes``.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise DPError("Plotting needs matplotlib: pip install matplotlib.") from None
    if isinstance(result, Release):
        title = result.query
        low, high = result.ci(level)
        values = pd.Series([result.value], index=[result.query])
        lows, highs = pd.Series([low], index=values.index), pd.Series([high], index=values.index)
    else:
        meta = result.attrs.get("dpframe")
        if not isinstance(meta, GroupedRelease):
            raise DPError("plot() needs a release or a grouped result returned by dpframe.")
        title = meta.query
        intervals = ci(result, level)
        values, lows, highs = result, intervals["low"], intervals["high"]
    if ax is None:
        _, ax = plt.subplots(figsize=kwargs.pop("figsize", (6, 3.5)), layout="constrained")
    labels = axis_labels(values.index)
    errors = [(values - lows).clip(lower=0).to_numpy(), (highs - values).clip(lower=0).to_numpy()]
    ax.bar(labels, values.to_numpy(), yerr=errors, capsize=4, color="#4c72b0", **kwargs)
    ax.set_ylabel(f"{values.name or 'value'} ({level:.0%} CI)")
    if values.index.name:
        ax.set_xlabel(str(values.index.name))
    if crowded(labels, ax.get_figure().get_figwidth()):
        ax.tick_params(axis="x", labelrotation=30)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
    ax.set_title(title, fontsize=10)
    return ax


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


@pd.api.extensions.register_series_accessor("dp")
class ReleaseAccessor:
    """``result.dp.ci()`` and ``result.dp.plot()`` on grouped results and histograms.

    Registered with pandas' public accessor API when dpframe is imported; on a
    Series that dpframe did not release, every method raises :class:`DPError`.
    """

    def __init__(self, series: pd.Series) -> None:
        self._series = series

    def ci(self, level: float = 0.95) -> pd.DataFrame:
        """Per-group intervals (see :func:`dpframe.ci`)."""
        table: pd.DataFrame = ci(self._series, level)
        return table

    def plot(self, level: float = 0.95, ax: Any = None, **kwargs: Any) -> Any:
        """Bars with error bars (see :func:`dpframe.plot`)."""
        return plot(self._series, level=level, ax=ax, **kwargs)

    @property
    def undeclared(self) -> Release | None:
        """The noisy count of the rows whose key is not declared (free; None: no such cell)."""
        return undeclared_of(self._series)
