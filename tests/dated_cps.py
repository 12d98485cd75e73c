"""A test frame with dates and free text: the bundled CPS rows plus synthetic columns.

The CPS 1988 data has no dates and no free text, so :func:`dated_cps` adds,
deterministically:

* ``date``: ISO 8601 text (as a CSV holds it) of a time between 2005 and
  2014 at a random minute; the declared bounds (:data:`DATE_BOUNDS`) are
  2006-01-01 .. 2013-12-31 23:59, so about a fifth of the dates lie outside
  them; 1% are missing and 1% are not ISO dates ("31/12/2010", "soon");
* ``comment``: short free text built from the row's region and ethnicity,
  in random case with stray spaces, some longer than :data:`MAX_LENGTH` (they
  are truncated when read), 2% missing.

:func:`truth` gives the same frame as pandas reads it after the declared
conversion (dates parsed, text truncated), for comparing released answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988

__all__ = ["BOUNDS", "CATEGORIES", "DATE_BOUNDS", "DTYPES", "MAX_LENGTH", "dated_cps", "truth"]

DATE_BOUNDS = (pd.Timestamp("2006-01-01"), pd.Timestamp("2013-12-31 23:59"))
MAX_LENGTH = 36
BOUNDS: dict[str, Any] = {**CPS1988_BOUNDS, "date": DATE_BOUNDS}
CATEGORIES: dict[str, Any] = dict(CPS1988_CATEGORIES)
DTYPES = {"comment": f"text({MAX_LENGTH})"}

_WORDS = ["Steady", "part-time", "NIGHT shift", "seasonal", "union"]


def dated_cps() -> pd.DataFrame:
    """The CPS rows with ``date`` (ISO text) and ``comment`` (free text) columns."""
    data = load_cps1988().copy()
    rng = np.random.default_rng(15)
    n = len(data)
    start = pd.Timestamp("2005-01-01").value // 60_000_000_000
    end = pd.Timestamp("2014-12-31 23:59").value // 60_000_000_000
    minutes = rng.integers(start, end + 1, n)
    stamps = pd.to_datetime(minutes * 60_000_000_000)
    text = pd.Series(stamps.strftime("%Y-%m-%dT%H:%M:%S"), index=data.index, dtype=object)
    text[stamps.second == 0] = stamps[stamps.second == 0].strftime("%Y-%m-%dT%H:%M")
    odd = rng.random(n)
    text[odd < 0.01] = None
    text[(odd >= 0.01) & (odd < 0.015)] = "31/12/2010"
    text[(odd >= 0.015) & (odd < 0.02)] = "soon"
    data["date"] = text
    word = np.asarray(_WORDS, dtype=object)[rng.integers(0, len(_WORDS), n)]
    comment = word + " worker in the " + data["region"].astype(object)
    comment = comment.where(
        rng.random(n) < 0.8, comment + " (" + data["ethnicity"].astype(object) + " family)"
    )
    case = rng.random(n)
    comment = comment.where(case >= 0.2, comment.str.upper())
    comment = comment.where((case < 0.2) | (case >= 0.4), "  " + comment.str.lower() + " ")
    comment[rng.random(n) < 0.02] = None
    data["comment"] = comment
    frame: pd.DataFrame = data
    return frame


def truth(data: pd.DataFrame) -> pd.DataFrame:
    """``data`` as it is read with :data:`BOUNDS` and :data:`DTYPES` (dates parsed, text cut)."""
    out: pd.DataFrame = data.copy()
    out["date"] = pd.to_datetime(out["date"], format="ISO8601", errors="coerce")
    out["comment"] = out["comment"].astype(object).str.slice(0, MAX_LENGTH)
    return out
