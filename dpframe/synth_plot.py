"""A heat map of a synthetic copy's pair errors, from its utility report (needs matplotlib).

Free: it reads only the released marginals
(:func:`~dpframe.mechanisms.synth.synth_report.synth_report`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.synth.synth_report import SynthInfo, synth_report

__all__ = ["pair_errors", "synth_heatmap"]


def pair_errors(copy: pd.DataFrame | SynthInfo, level: float = 0.95) -> pd.DataFrame:
    """A columns x columns table of error bars: each marginal's noise at ``level`` plus its fit.

    The diagonal holds each column's 1-way marginal, the other cells each
    measured pair (or a pair inside a measured triple): its ``tv_error_bar``
    (the total variation its noise reaches at ``level``) plus its ``tv_fit``
    (how far the fitted model is from the measurement; a pair inside a
    triple has none of its own).  By the triangle inequality the model's
    marginal is within that total variation of the truth (with the
    probability ``level``).  A pair never measured is NaN: nothing released
    bounds its error.
    """
    report = synth_report(copy, level)
    info = copy.attrs.get("dpframe_synth") if isinstance(copy, pd.DataFrame) else copy
    assert isinstance(info, SynthInfo)
    names = list(info.columns)
    where = {name: i for i, name in enumerate(names)}
    grid = np.full((len(names), len(names)), np.nan)
    for row in report.itertuples(index=False):
        bar = float(row.tv_error_bar)  # type: ignore[arg-type]
        if math.isnan(bar) or row.kind == "3-way":
            continue
        fit = float(row.tv_fit)  # type: ignore[arg-type]
        value = bar + (0.0 if math.isnan(fit) else fit)
        parts = str(row.marginal).split(" × ")
        a, b = where[parts[0]], where[parts[-1]]
        for x, y in ((a, b), (b, a)):
            grid[x, y] = value if math.isnan(grid[x, y]) else min(grid[x, y], value)
    table: pd.DataFrame = pd.DataFrame(grid, index=pd.Index(names), columns=pd.Index(names))
    return table


def synth_heatmap(
    copy: pd.DataFrame | SynthInfo, level: float = 0.95, ax: Any = None, **kwargs: Any
) -> Any:
    """A heat map of how close a synthetic copy is, pair of columns by pair (free).

    Example:
        >>> copy = pf[["region", "parttime", "smsa"]].synthesize(epsilon=1.0)  # doctest: +SKIP
        >>> dp.synth_heatmap(copy)  # doctest: +SKIP

    The values are :func:`pair_errors`: measured pairs coloured, the others
    marked.  A cell shows the total variation error bar of that 1-way or 2-way
    marginal; a pair the model never measured is hatched and marked "not
    measured" (its error is not known without spending budget on it:
    ``dp.crosstab(pf[a], pf[b], epsilon=...)`` measures it).

    Returns:
        The matplotlib ``Axes``.
    """
    try:
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:
        raise DPError("Plotting needs matplotlib: pip install matplotlib.") from None
    table = pair_errors(copy, level)
    names = list(table.columns)
    d = len(names)
    grid = table.to_numpy(dtype=np.float64)
    if ax is None:
        size = max(4.0, 0.7 * d + 2.0)
        _, ax = plt.subplots(
            figsize=kwargs.pop("figsize", (size + 1.0, size)), layout="constrained"
        )
    values = np.ma.masked_invalid(grid)
    image = ax.imshow(values, cmap=kwargs.pop("cmap", "Reds"), vmin=0.0, **kwargs)
    ax.figure.colorbar(image, ax=ax, label=f"TV error bar ({level:.0%}): noise + fit")
    for i in range(d):
        for j in range(d):
            value = float(grid[i, j])
            if math.isnan(value):
                ax.add_patch(
                    Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor="0.75")
                )
                ax.text(j, i, "not\nmeasured", ha="center", va="center", fontsize=6, color="0.4")
            else:
                dark = value > 0.6 * float(values.max())
                colour = "white" if dark else "black"
                ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=7, color=colour)
    ax.set_xticks(range(d), names, rotation=45, ha="right")
    ax.set_yticks(range(d), names)
    info = copy.attrs.get("dpframe_synth") if isinstance(copy, pd.DataFrame) else copy
    method = info.method if isinstance(info, SynthInfo) else "copy"
    ax.set_title(f"{method}: error bars of the measured marginals", fontsize=10)
    return ax
