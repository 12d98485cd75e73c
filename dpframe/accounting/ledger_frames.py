"""The frames a session loaded and their ID spaces (ledger schema 7, issue 32).

One row per (session, data, privacy-unit setting): the ID space (empty for
row-level data), the ID column and its row limit, and when it was first
loaded.  Public facts only: the dataset key the releases use, names and
declared limits, never a value.  :meth:`Ledger.fix_privacy_unit
<dpframe.accounting.ledger.Ledger.fix_privacy_unit>` writes the row in the
transaction that fixes the session's setting; :meth:`Ledger.frames
<dpframe.accounting.ledger.Ledger.frames>` reads them.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

import pandas as pd

__all__ = ["FRAME_COLUMNS", "FrameRecord", "read_frames", "record_frame"]

#: The columns of :func:`read_frames`' table.
FRAME_COLUMNS = ("dataset", "id_space", "unit_column", "max_rows", "time")


@dataclass(frozen=True)
class FrameRecord:
    """One loaded frame's public privacy-unit facts.

    Attributes:
        dataset: the data's key in the ledger (as its releases name it).
        id_space: the ID space ("" for row-level data).
        unit_column: the ID column ("" for row-level data).
        max_rows: the most rows one unit keeps (1 for row-level data).
    """

    dataset: str
    id_space: str = ""
    unit_column: str = ""
    max_rows: int = 1


def record_frame(conn: sqlite3.Connection, session: str, frame: FrameRecord) -> None:
    """Insert ``frame`` for ``session`` unless recorded (inside the caller's transaction)."""
    conn.execute(
        "INSERT OR IGNORE INTO frames (session, dataset, id_space, unit_column, max_rows, time)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (session, frame.dataset, frame.id_space, frame.unit_column, frame.max_rows, time.time()),
    )


def read_frames(conn: sqlite3.Connection, session: str) -> pd.DataFrame:
    """The frames recorded for ``session``, oldest first."""
    rows = conn.execute(
        "SELECT dataset, id_space, unit_column, max_rows, time FROM frames WHERE session=?"
        " ORDER BY time, rowid",
        (session,),
    ).fetchall()
    table: pd.DataFrame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    table["time"] = pd.to_datetime(table["time"], unit="s")
    return table
