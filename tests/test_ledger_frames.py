"""Ledger schema 7 (issue 32): the frames a session loaded and their ID spaces."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting import ledger_schema
from dpframe.accounting.ledger import Ledger


def _unit(column: str, rows: int, space: str = "persons") -> dp.PrivacyUnit:
    return dp.PrivacyUnit(column, max_rows=rows, id_space=space)


def test_the_frames_and_their_id_spaces_are_recorded(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    session = dp.Session(epsilon=1, ledger=ledger, name="study")
    session.private_frame(
        pd.DataFrame({"pid": [1, 1, 2], "x": [1.0, 2.0, 3.0]}), privacy_unit=_unit("pid", 5)
    )
    session.private_frame(
        pd.DataFrame({"id": [1, 2], "y": [1.0, 2.0]}), privacy_unit=_unit("id", 1)
    )
    session.private_frame(
        pd.DataFrame({"hh": [7], "z": [1.0]}), privacy_unit=_unit("hh", 2, "households")
    )
    frames = session.frames
    assert list(frames.columns) == ["dataset", "id_space", "unit_column", "max_rows", "time"]
    assert frames[["id_space", "unit_column", "max_rows"]].values.tolist() == [
        ["persons", "pid", 5],
        ["persons", "id", 1],
        ["households", "hh", 2],
    ]
    # another process reading the same file sees them; a reload records nothing new
    assert len(dp.Session(epsilon=1, ledger=ledger, name="study").frames) == 3
    session.private_frame(
        pd.DataFrame({"id": [1, 2], "y": [1.0, 2.0]}), privacy_unit=_unit("id", 1)
    )
    assert len(Ledger(ledger).frames("study")) == 3


def test_a_refused_frame_is_not_recorded_and_row_level_frames_are() -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    session.private_frame(pd.DataFrame({"x": [1.0, 2.0]}))
    with pytest.raises(dp.SchemaError, match="protects one row per person"):
        session.private_frame(pd.DataFrame({"pid": [1], "x": [1.0]}), privacy_unit=_unit("pid", 2))
    assert session.frames[["id_space", "unit_column", "max_rows"]].values.tolist() == [["", "", 1]]


def test_a_version_6_file_gains_the_frames_table(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    old = dp.Session(epsilon=1, ledger=path, name="s")
    old.private_frame(pd.DataFrame({"x": [1.0, 2.0]})).count(epsilon=0.25)
    del old
    with sqlite3.connect(path) as conn:  # the file as a version-6 dpframe left it
        conn.execute("DROP TABLE frames")
        conn.execute("DROP INDEX releases_by_request")  # and version 8's request keys
        conn.execute("ALTER TABLE releases DROP COLUMN request")
        conn.execute("DROP TABLE chain")  # and version 9's hash chain
        conn.execute("ALTER TABLE releases DROP COLUMN noise")
        conn.execute("DROP TABLE grants")  # and version 10's grant history
        conn.execute("PRAGMA user_version=6")
    assert [m.version for m in ledger_schema.MIGRATIONS][6] == 7
    resumed = dp.Session(epsilon=1, ledger=path, name="s")
    assert resumed.spent == dp.Budget(0.25)
    assert resumed.frames.empty  # frames loaded before version 7 were not recorded
    resumed.private_frame(pd.DataFrame({"x": [3.0]}))
    assert len(resumed.frames) == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == ledger_schema.SCHEMA_VERSION
