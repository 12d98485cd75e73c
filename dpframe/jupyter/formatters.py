"""Results with their uncertainty on screen: IPython display formatters for released tables.

Grouped results are plain pandas Series and ``describe()`` a plain DataFrame
(so everything pandas does keeps working); what marks them as released is
their ``attrs["dpframe"]`` metadata.  These formatters, registered by
``%load_ext dpframe``, draw such a result as a table of ``value ± half-width``
(two significant digits of the 95% half-width; counts as whole numbers) with
the interval's ends, under a caption naming the query and its cost.  A Series
or DataFrame that is not a release, or no longer equals the released one,
keeps pandas' own display.  Post-processing of released values: free.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.display import LEVEL, frame_table_html, grouped_table_html
from dpframe.mechanisms.results import FrameRelease, GroupedRelease, is_count

__all__ = ["frame_html", "install", "series_html", "uninstall"]


def series_html(series: pd.Series) -> str | None:
    """HTML of a released grouped Series with its intervals; None otherwise (pandas' text)."""
    meta = series.attrs.get("dpframe")
    if not isinstance(meta, GroupedRelease) or not meta.matches(series):
        return None
    try:
        low, high = meta.intervals.interval(LEVEL)
    except DPError:  # quantiles: their accuracy is a rank error, not a value interval
        return None
    caption = f"{meta.query} · cost {meta.cost} · {meta.mechanism}"
    name = str(series.name) if series.name is not None else "value"
    return grouped_table_html(
        series.to_numpy(dtype=float),
        low,
        high,
        series.index,
        name,
        caption,
        integer=is_count(meta.intervals),
    )


def frame_html(frame: pd.DataFrame) -> str | None:
    """HTML of a released DataFrame with its intervals; pandas' own HTML otherwise."""
    meta = frame.attrs.get("dpframe")
    if not isinstance(meta, FrameRelease) or not meta.matches(frame):
        own: str | None = getattr(frame, "_repr_html_")()  # noqa: B009 (a column to mypy)
        return own
    low, high = meta.intervals.interval(LEVEL)
    caption = f"{meta.query} · cost {meta.cost} · ± is the {LEVEL:.0%} half-width"
    return frame_table_html(frame, low, high, caption, integer_cells=is_count(meta.intervals))


def install(shell: Any) -> None:
    """Register the formatters in ``shell`` (remembering what they replace)."""
    html = shell.display_formatter.formatters["text/html"]
    replaced = (html.for_type(pd.Series, series_html), html.for_type(pd.DataFrame, frame_html))
    shell.__dict__.setdefault("_dpframe_replaced_html", replaced)


def uninstall(shell: Any) -> None:
    """Put back the HTML formatters that :func:`install` replaced."""
    html = shell.display_formatter.formatters["text/html"]
    series_old, frame_old = shell.__dict__.pop("_dpframe_replaced_html", (None, None))
    for cls, old in ((pd.Series, series_old), (pd.DataFrame, frame_old)):
        html.pop(cls, None)
        if old is not None:
            html.for_type(cls, old)
