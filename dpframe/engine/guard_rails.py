"""Budget guard rails of a session's frames: one privacy-unit setting, a warning on a new name.

Two ways a budget gets weaker than the analyst thinks, both checked when a
frame is loaded (before anything can be charged), against the ledger file so
that every process sharing it sees the same answer:

* **Another privacy-unit setting.**  A session's budget is a guarantee for one
  kind of neighbour: one row, or all the rows of one unit (at most k of them).
  Mixing frames of both settings in one session would let row-level releases
  (sensitivity 1) spend a budget meant per person.  The session's first frame
  fixes the setting in the ledger (:meth:`Ledger.fix_privacy_unit
  <dpframe.accounting.ledger.Ledger.fix_privacy_unit>`); a frame with another
  setting is refused (:class:`~dpframe.errors.SchemaError`) in this process or
  any other, whatever its data: a column subset or a shuffled copy cannot get
  round the check, as it could when the check was keyed by the data's
  fingerprint.
* **A fresh budget by accident.**  A session's budget is keyed by its name, so
  the same people loaded under a new name start from zero.  Each frame's
  per-column digests (:mod:`dpframe.backends.column_digests`: row order,
  dtype and column name do not change them) are recorded in the ledger; when a
  column matches one of data that another session has already spent on, a
  :class:`~dpframe.errors.BudgetResetWarning` names those sessions.  A warning, not a refusal:
  two sessions on the same data can be deliberate (a separate budget approved
  for a separate purpose).

Frames in memory only: a Dask frame would need a pass over the cluster's data
to be digested, and a curator names its data (catalog name and version) and
computes nothing from the rows outside a release.  An in-memory ledger keeps
no other session's spend, so it records no digests.
"""

from __future__ import annotations

import warnings

import pandas as pd

from dpframe.accounting.ledger import Ledger
from dpframe.backends.column_digests import column_digests
from dpframe.errors import BudgetResetWarning, SchemaError

__all__ = ["check_other_sessions", "fix_unit_setting", "unit_setting"]


def unit_setting(unit: tuple[str, int] | None) -> str:
    """The public text of a privacy-unit setting, as the ledger records it.

    Args:
        unit: the unit column and its row limit, or None for one row per person.
    """
    if unit is None:
        return "rows"
    column, max_rows = unit
    return f"unit {column!r}, at most {max_rows} rows"


def _describe(setting: str) -> str:
    return "one row per person" if setting == "rows" else f"privacy unit {setting[5:]}"


def fix_unit_setting(ledger: Ledger, session: str, unit: tuple[str, int] | None) -> None:
    """Fix ``session``'s privacy-unit setting at its first frame; refuse another one.

    Args:
        ledger: the session's ledger (the setting is recorded there).
        session: the session's name.
        unit: this frame's unit column and row limit, or None for row level.

    Raises:
        SchemaError: the session's ledger records another setting (nothing
            was loaded or charged).
    """
    asked = unit_setting(unit)
    recorded = ledger.fix_privacy_unit(session, asked)
    if recorded != asked:
        raise SchemaError(
            f"Session {session!r} protects {_describe(recorded)} (fixed by its first frame, "
            f"recorded in the ledger {ledger.path}); this frame asks for {_describe(asked)}. "
            "Mixing settings in one budget would let releases of one setting spend a budget "
            "that guarantees the other. Load the frame with the recorded setting, or use "
            "another session (name=) for data with another privacy unit."
        )


def check_other_sessions(ledger: Ledger, session: str, dataset: str, frame: pd.DataFrame) -> None:
    """Record ``frame``'s column digests; warn if other sessions spent on matching data.

    Args:
        ledger: the session's ledger.
        session: the session's name.
        dataset: the frame's dataset key in the ledger.
        frame: the private data (read here, on this machine only).

    Warns:
        BudgetResetWarning: naming the other sessions, their releases and the
            matching columns (names only, never a value).
    """
    if ledger.path == ":memory:":
        return
    digests = column_digests(frame)
    columns: dict[str, set[str]] = {}  # another session: the matching columns of this frame
    releases: dict[str, dict[str, int]] = {}  # another session: its releases per dataset
    spend: dict[str, dict[str, int]] = {}  # a matching dataset: releases per session (read once)
    for column, digest in digests.items():
        for other, _ in ledger.columns_with_digest(digest):
            if other not in spend:
                spend[other] = ledger.spend_by_session(other)
            for name, count in spend[other].items():
                if name != session:
                    columns.setdefault(name, set()).add(column)
                    releases.setdefault(name, {})[other] = count
    if ledger.digests(dataset) != digests:  # a reload of the same data writes nothing
        ledger.record_digests(dataset, digests)
    if not columns:
        return
    shown = "; ".join(
        f"{name!r}: {_releases(sum(releases[name].values()))} (matching columns: "
        f"{', '.join(sorted(columns[name]))})"
        for name in sorted(columns)
    )
    warnings.warn(
        f"This ledger already records spend on data with the same columns under another "
        f"session name: {shown}. A budget belongs to a session name, so session {session!r} "
        "starts a separate budget for the same people. To go on with the budget already "
        "spent, open the session by its recorded name (dp.Session(..., name=...)).",
        BudgetResetWarning,
        stacklevel=4,
    )


def _releases(count: int) -> str:
    return f"{count} release" + ("" if count == 1 else "s")
