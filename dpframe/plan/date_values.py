"""Public date values: checked, normalized to naive nanosecond Timestamps, and their JSON form.

Dates are naive :class:`pandas.Timestamp` objects at nanosecond resolution
(1677-09-22 to 2262-04-11).  In JSON a date is its ISO 8601 text
(``"2010-01-01T00:00:00"``, :func:`date_to_json`).  Used by date constants in
expressions (:class:`~dpframe.plan.expressions.DateLit`) and by the declared
bounds of date columns (:mod:`dpframe.plan.temporal`).
"""

from __future__ import annotations

import datetime
import re

import numpy as np
import pandas as pd

from dpframe.errors import SchemaError

__all__ = ["as_date", "date_from_json", "date_to_json", "is_date"]

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)?")
_FIRST = pd.Timestamp.min.ceil("s")
_LAST = pd.Timestamp.max.floor("s")


def is_date(value: object) -> bool:
    """True for a date constant (not NaT).

    A :class:`pandas.Timestamp`, ``datetime.datetime``, ``datetime.date`` or
    ``numpy.datetime64``.
    """
    if isinstance(value, (datetime.date, np.datetime64)):
        return not pd.isna(value)
    return False


def as_date(value: object, what: str) -> pd.Timestamp:
    """A public date as a naive nanosecond :class:`pandas.Timestamp`; a :class:`SchemaError` if not.

    Args:
        value: a Timestamp, ``datetime.datetime``, ``datetime.date`` or ``numpy.datetime64``.
        what: how to name the value in the error.
    """
    if not is_date(value):
        shown = "a missing date (NaT)" if value is pd.NaT else f"a {type(value).__name__}"
        raise SchemaError(
            f"{what} must be a date (pd.Timestamp('2020-01-01'), datetime or date), not {shown}."
        )
    stamp = pd.Timestamp(value)  # type: ignore[arg-type]  # checked above
    if stamp.tzinfo is not None:
        raise SchemaError(
            f"{what} must be a date without a time zone; convert it with .tz_convert(None) "
            "(UTC) or .tz_localize(None) (wall time)."
        )
    if not _FIRST <= stamp <= _LAST:
        raise SchemaError(
            f"{what} must lie between {_FIRST.date()} and {_LAST.date()} (dates are stored "
            "at nanosecond resolution)."
        )
    exact: pd.Timestamp = stamp.as_unit("ns")
    return exact


def date_to_json(value: pd.Timestamp) -> str:
    """A date's JSON form: its ISO 8601 text (nanoseconds kept)."""
    text: str = value.isoformat()
    return text


def date_from_json(data: object, what: str) -> pd.Timestamp:
    """Read :func:`date_to_json`'s form strictly (a :class:`SchemaError` if malformed)."""
    if not isinstance(data, str) or _ISO.fullmatch(data) is None:
        raise SchemaError(f"{what} must be an ISO 8601 date, e.g. '2020-01-31T00:00:00'.")
    try:
        stamp = pd.Timestamp(data)
    except ValueError:
        raise SchemaError(f"{what} is not a valid date.") from None
    return as_date(stamp, what)
