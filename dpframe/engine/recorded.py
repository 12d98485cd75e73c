"""Answers from the ledger, marked as such: ``from the ledger, recorded 14:02``.

A request already answered is answered again from the ledger
(:mod:`dpframe.engine.reruns`): the same values and intervals, rebuilt from
the stored answer, charged nothing.  :func:`mark` says so on the result: a
:class:`~dpframe.mechanisms.answers.results.Release` becomes a :class:`RecordedRelease`
(its repr and HTML end with the note), a released Series or DataFrame carries
the note in ``attrs[RECORDED_ATTR]`` (the notebook's caption shows it), and
releases inside a tuple, list or dict are marked one by one.  Other result
objects are returned as rebuilt; the budget meter says it for every kind.
"""

from __future__ import annotations

import dataclasses
import html
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpframe.mechanisms.answers.results import Release

__all__ = ["RECORDED_ATTR", "RecordedRelease", "mark", "recorded_note"]

#: The key of a released Series' or DataFrame's ``attrs`` that holds the note.
RECORDED_ATTR = "dpframe_recorded"


def recorded_note(recorded_at: float, now: float | None = None) -> str:
    """``from the ledger, recorded 14:02`` (local time; the date too when not today).

    Args:
        recorded_at: the original release's time (seconds since the epoch).
        now: the current time (default: now), to decide whether to show the date.
    """
    when = time.localtime(recorded_at)
    today = time.localtime(time.time() if now is None else now)
    same_day = (when.tm_year, when.tm_yday) == (today.tm_year, today.tm_yday)
    shown = time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", when)
    return f"from the ledger, recorded {shown}"


@dataclass(frozen=True, eq=False)
class RecordedRelease(Release):
    """A :class:`Release` answered again from the ledger (charged nothing this time).

    Attributes:
        recorded: the note shown with it (``from the ledger, recorded 14:02``).
            ``cost`` stays the cost the release was charged when first made.
    """

    recorded: str = ""

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, {self.recorded}: charged nothing now)"

    def _repr_html_(self) -> str:
        note = html.escape(f"{self.recorded}: charged nothing now")
        shown = super()._repr_html_()
        return shown[: -len("</div>")] + f" <i style='color:#666'>· {note}</i></div>"


def mark(result: Any, note: str, keep: bool = False) -> Any:
    """``result`` marked as answered from the ledger with ``note`` (see the module docstring).

    ``keep``: parts already marked stay as they are (a method that reshaped an
    answer the session had marked: only what lost its mark is marked again).
    """
    if isinstance(result, Release):
        if keep and isinstance(result, RecordedRelease):
            return result
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(Release)}
        return RecordedRelease(**fields, recorded=note)
    if isinstance(result, (pd.Series, pd.DataFrame)):
        if not (keep and RECORDED_ATTR in result.attrs):
            result.attrs[RECORDED_ATTR] = note
        return result
    if isinstance(result, tuple) and not hasattr(result, "_fields"):
        return tuple(mark(item, note, keep) for item in result)
    if isinstance(result, list):
        return [mark(item, note, keep) for item in result]
    if isinstance(result, dict):
        return {key: mark(value, note, keep) for key, value in result.items()}
    return result
