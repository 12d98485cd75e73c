"""How releases read on screen: each number with two significant digits of its uncertainty.

A released value is shown to the decimal place of the second significant
digit of its 95% half-width (``607 ± 12``, ``13.057 ± 0.034``,
``28,250 ± 600``), so no digit on screen is pure noise; counts are whole
numbers.  Only the display rounds: ``.value`` and the Series' values are
unchanged.  Everything here is post-processing of released values and public
noise parameters (free of privacy cost).
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "decimals_for",
    "frame_table_html",
    "grouped_table_html",
    "shown",
    "shown_bounded",
    "shown_interval",
]

#: The level of the intervals shown by default.
LEVEL = 0.95


def decimals_for(half_width: float, integer: bool = False) -> int:
    """Decimal places that keep two significant digits of ``half_width`` (negative: tens, ...).

    A non-finite or zero half-width gives 6 (0 for counts); counts never show decimals.
    """
    if not math.isfinite(half_width) or half_width <= 0:
        return 0 if integer else 6
    rounded = float(f"{half_width:.2g}")  # 99.6 -> 100: count digits after rounding
    places = 1 - math.floor(math.log10(rounded))
    return min(places, 0) if integer else places


def _number(value: float, places: int) -> str:
    if not math.isfinite(value):
        return f"{value:g}"
    if places < 0:
        value = round(value, places)
        places = 0
    text = f"{value:,.{places}f}"
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text


def shown(value: float, half_width: float, integer: bool = False) -> str:
    """``value ± half_width`` as a person reads it (see the module docstring)."""
    if not math.isfinite(half_width):
        return f"{value:.6g}"
    if half_width <= 0:  # no noise (an exact public value): plain
        return f"{value:,.0f}" if integer else f"{value:.6g}"
    places = decimals_for(half_width, integer)
    return f"{_number(value, places)} ± {_number(float(f'{half_width:.2g}'), max(places, 0))}"


def shown_interval(value: float, low: float, high: float, integer: bool = False) -> tuple[str, ...]:
    """(``value ± half``, low, high) strings for an interval that may be asymmetric.

    The half-width shown is the larger distance to an end, so the ± never
    understates the interval.
    """
    half = max(value - low, high - value, 0.0)
    places = decimals_for(half, integer)
    return shown(value, half, integer), _number(low, places), _number(high, places)


def grouped_table_html(
    values: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    index: pd.Index,
    name: str,
    caption: str,
    integer: bool = False,
) -> str:
    """An HTML table: keys, ``value ± half-width``, and the interval's ends."""
    names = [str(n) for n in index.names] if any(n is not None for n in index.names) else [""]
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    head += f"<th>{html.escape(name)}</th><th>{LEVEL:.0%} low</th><th>{LEVEL:.0%} high</th>"
    rows = []
    for key, value, low, high in zip(index, values, lows, highs, strict=True):
        keys = key if isinstance(key, tuple) else (key,)
        cells = "".join(f"<th>{html.escape(str(k))}</th>" for k in keys)
        _, low_text, high_text = shown_interval(float(value), float(low), float(high), integer)
        text = shown_bounded(float(value), float(low), float(high), integer)
        cells += f"<td>{text}</td><td>{low_text}</td><td>{high_text}</td>"
        rows.append(f"<tr>{cells}</tr>")
    return (
        "<div class='dpframe-grouped'><table class='dataframe'>"
        f"<caption style='caption-side:top;text-align:left;color:#666'>{html.escape(caption)}"
        f"</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _column_text(label: object) -> str:
    """A column label for a header: ``("wage", "mean")`` as ``wage · mean``."""
    return " · ".join(map(str, label)) if isinstance(label, tuple) else str(label)


def _is_count_label(label: object) -> bool:
    """A row or column of counts (``count``, ``freq``, ``(column, "count")``): whole numbers."""
    last = label[-1] if isinstance(label, tuple) and label else label
    return str(last) in ("count", "freq", "unique", "size")


def shown_bounded(value: float, low: float, high: float, integer: bool = False) -> str:
    """A cell's text: ``value ± half``, or ``value [low, high]`` when the interval is one-sided.

    An interval cut at zero (a count made non-negative) is not symmetric
    around its value: ``0 ± 12`` would suggest negative counts, so such a
    cell shows its ends instead (``0 [0, 12]``).
    """
    if low == 0.0 and high - value > 2 * (value - low):
        places = decimals_for(high - low, integer)
        return f"{_number(value, places)} [{_number(low, places)}, {_number(high, places)}]"
    return shown_interval(value, low, high, integer)[0]


def frame_table_html(
    frame: pd.DataFrame,
    lows: np.ndarray,
    highs: np.ndarray,
    caption: str,
    integer_cells: bool = False,
) -> str:
    """A released DataFrame (e.g. ``describe()``) with ``value ± half-width`` in every cell.

    Cells without an interval (NaN ends, such as quartiles) show the value alone;
    an interval cut at zero shows its ends (:func:`shown_bounded`).
    ``integer_cells``: every cell is a count (a cross table), shown whole.
    """
    corner = html.escape(str(frame.index.name)) if frame.index.name is not None else ""
    head = f"<th>{corner}</th>" + "".join(
        f"<th>{html.escape(_column_text(c))}</th>" for c in frame.columns
    )
    rows = []
    values = frame.to_numpy(dtype=object)
    counts = [_is_count_label(c) for c in frame.columns]
    for i, label in enumerate(frame.index):
        cells = f"<th>{html.escape(str(label))}</th>"
        for j in range(frame.shape[1]):
            integer = integer_cells or _is_count_label(label) or counts[j]
            cell: Any = values[i, j]
            low, high = float(lows[i, j]), float(highs[i, j])
            if not isinstance(cell, (int, float, np.number)) or isinstance(cell, bool):
                cells += f"<td>{html.escape(str(cell))}</td>"  # a key (top) as it is
                continue
            value = float(cell)
            if math.isnan(value):
                cells += "<td></td>"
                continue
            if math.isnan(low) or math.isnan(high):
                text = f"{value:,.0f}" if integer and value == round(value) else f"{value:.4g}"
                cells += f"<td>{text}</td>"
            else:
                cells += f"<td>{shown_bounded(value, low, high, integer)}</td>"
        rows.append(f"<tr>{cells}</tr>")
    return (
        "<div class='dpframe-frame'><table class='dataframe'>"
        f"<caption style='caption-side:top;text-align:left;color:#666'>{html.escape(caption)}"
        f"</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
