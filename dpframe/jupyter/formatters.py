"""Results with their uncertainty on screen: IPython display formatters for released tables.

Released Series and DataFrames hold ``dp`` columns, which show ``value ±
half-width`` in any kernel on their own.  These formatters, registered by
``%load_ext dpframe``, draw them as richer tables: ``value ± half-width``
(two significant digits of the 95% half-width; counts as whole numbers)
beside the interval's ends, under a caption naming the query, its cost and
any note (groups too thin to show a value).  They work after pandas steps
too (``sort_values``, ``head``, arithmetic): every cell carries its own
interval.  A Series or DataFrame that is not a release keeps pandas' own
display.  Post-processing of released values: free.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from dpframe.engine.recorded import RECORDED_ATTR
from dpframe.errors import DPError
from dpframe.mechanisms.answers import DPArray
from dpframe.mechanisms.answers.display import LEVEL, frame_table_html, grouped_table_html
from dpframe.mechanisms.answers.results import FrameRelease, GroupedRelease, is_count

__all__ = ["frame_html", "install", "series_html", "uninstall"]


def _caption(meta: object, fallback: str, derived: bool = False, recorded: object = None) -> str:
    """The query, cost and mechanism of a release's metadata, and its notes.

    ``derived``: the values shown are post-processed from the release (sorted,
    scaled, edited): the caption says so.  ``recorded``: the note of an answer
    from the ledger (``attrs[RECORDED_ATTR]``), said last.
    """
    source = "derived from " if derived else ""
    if isinstance(meta, GroupedRelease):
        text = f"{source}{meta.query} · cost {meta.cost} · {meta.mechanism}"
        caption = " · ".join([text, *meta.notes])
    elif isinstance(meta, FrameRelease):
        caption = f"{source}{meta.query} · cost {meta.cost} · ± is the {LEVEL:.0%} half-width"
    else:
        caption = fallback
    if isinstance(recorded, str) and recorded:
        caption = f"{caption} · {recorded}, charged nothing" if caption else recorded
    return caption


def series_html(series: pd.Series) -> str | None:
    """HTML of a released Series with its intervals; None otherwise (pandas' text)."""
    array = series.array
    meta = series.attrs.get("dpframe")
    name = str(series.name) if series.name is not None else "value"
    if isinstance(array, DPArray):
        derived = isinstance(meta, GroupedRelease) and not meta.matches(series)
        caption = _caption(
            meta,
            f"released values · ± is the {LEVEL:.0%} half-width",
            derived,
            series.attrs.get(RECORDED_ATTR),
        )
        try:
            low, high = array.intervals(LEVEL)
        except DPError:  # a quantile's rank error, discovered counts: no value interval
            said = getattr(meta, "notes", ()) or series.attrs.get(RECORDED_ATTR)
            return _uncertain_html(series, caption) if said else None
        return grouped_table_html(
            array.values, low, high, series.index, name, caption, integer=array.integer
        )
    if not isinstance(meta, GroupedRelease) or not meta.matches(series):
        return None
    try:
        low, high = meta.intervals.interval(LEVEL)
    except DPError:
        return None
    return grouped_table_html(
        series.to_numpy(dtype=float),
        low,
        high,
        series.index,
        name,
        _caption(meta, "", recorded=series.attrs.get(RECORDED_ATTR)),
        integer=is_count(meta.intervals),
    )


def _uncertain_html(series: pd.Series, caption: str) -> str:
    """Pandas' own HTML of a Series without value intervals, under its caption (its notes)."""
    table: str = getattr(series.to_frame(), "_repr_html_")()  # noqa: B009 (as frame_html)
    return (
        "<div class='dpframe-grouped'>"
        f"<div style='text-align:left;color:#666'>{html.escape(caption)}</div>{table}</div>"
    )


def frame_html(frame: pd.DataFrame) -> str | None:
    """HTML of a released DataFrame with its intervals; pandas' own HTML otherwise."""
    meta = frame.attrs.get("dpframe")
    columns = range(len(frame.columns))
    released = [j for j in columns if isinstance(frame.iloc[:, j].array, DPArray)]
    if not released and not (isinstance(meta, FrameRelease) and meta.matches(frame)):
        own: str | None = getattr(frame, "_repr_html_")()  # noqa: B009 (a column to mypy)
        return own
    if not released:  # an older release's metadata (plain values that still match)
        assert isinstance(meta, FrameRelease)
        lows, highs = meta.intervals.interval(LEVEL)
    else:
        lows = np.full(frame.shape, np.nan)
        highs = np.full(frame.shape, np.nan)
        for j in released:
            array = frame.iloc[:, j].array
            assert isinstance(array, DPArray)
            try:
                lows[:, j], highs[:, j] = array.intervals(LEVEL)
            except DPError:  # a quantile's rank error: its cells show the value alone
                continue
    plain = frame.dp.raw
    integer = len(released) == len(frame.columns) and all(
        getattr(frame.iloc[:, j].array, "integer", False) for j in columns
    )
    derived = isinstance(meta, FrameRelease) and not meta.matches(frame)
    caption = _caption(
        meta,
        f"released values · ± is the {LEVEL:.0%} half-width",
        derived,
        frame.attrs.get(RECORDED_ATTR),
    )
    return frame_table_html(plain, np.asarray(lows), np.asarray(highs), caption, integer)


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
