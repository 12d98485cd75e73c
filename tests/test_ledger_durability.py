"""The ledger's journal: WAL with one synchronous commit per release, private files, fallback.

* The charge is committed with ``synchronous=FULL`` in WAL mode before
  :meth:`Ledger.charge` returns: the row is in the ``-wal`` file (a copy of the
  ledger with its WAL holds it; the ledger file alone does not yet), and
  under ``strace`` the WAL is ``fdatasync``-ed between the call and its return.
* The completion is written without a sync (``synchronous=NORMAL`` in WAL).
* A new ledger and its ``-wal`` and ``-shm`` files have mode 0600; an existing
  file keeps its mode.
* Where WAL does not work (a VFS without shared memory), the ledger keeps the
  rollback journal and works as before; ``:memory:`` works.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting import Charge, Ledger, ledger_schema

TENTH = Charge(epsilon=Fraction(1, 10))
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes and VFS")


def _accept(spent: Charge) -> None:
    return None


def _rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT id, status FROM releases ORDER BY id").fetchall()
    finally:
        conn.close()


def test_charge_is_committed_to_the_wal_with_full_sync_before_it_returns(
    ledger_path: Path, tmp_path: Path
) -> None:
    ledger = Ledger(ledger_path)
    assert ledger.journal_mode == "wal"
    in_force: list[tuple[Any, ...]] = []

    def check(spent: Charge) -> None:  # runs inside the charge's transaction
        conn = ledger._conn
        in_force.append(
            (
                conn.execute("PRAGMA journal_mode").fetchone()[0],
                conn.execute("PRAGMA synchronous").fetchone()[0],
            )
        )

    release_id = ledger.charge("s", "d", TENTH, check, "q", "m")
    assert in_force == [("wal", 2)]  # 2: FULL, the WAL is synced at COMMIT

    # Right after charge returns (no completion yet), the row is in the WAL:
    # a copy of the ledger with its -wal file holds it, the ledger file alone not yet.
    with_wal, alone = tmp_path / "with-wal", tmp_path / "alone"
    for folder in (with_wal, alone):
        folder.mkdir()
        shutil.copy(ledger_path, folder / ledger_path.name)
    shutil.copy(f"{ledger_path}-wal", with_wal / f"{ledger_path.name}-wal")
    assert _rows(with_wal / ledger_path.name) == [(release_id, "charged")]
    assert _rows(alone / ledger_path.name) == []
    # ...and another connection (as another process would) sees it committed.
    assert _rows(ledger_path) == [(release_id, "charged")]


def test_completion_is_written_without_a_sync_and_restores_full(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)
    release_id = ledger.charge("s", "d", TENTH, _accept, "q", "m")
    seen: list[str] = []
    ledger._conn.set_trace_callback(seen.append)
    ledger.complete(release_id, "12")
    ledger._conn.set_trace_callback(None)
    # one transaction: the row's outcome and its link in the hash chain (issue 31)
    assert seen[:3] == [
        "PRAGMA synchronous=NORMAL",
        "BEGIN IMMEDIATE",
        f"UPDATE releases SET status='released', value='12', noise=NULL WHERE id={release_id}",
    ]
    assert seen[-2:] == ["COMMIT", "PRAGMA synchronous=FULL"]
    assert [s for s in seen if s.startswith("INSERT INTO chain")] == [seen[-3]]
    assert ledger._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    assert _rows(ledger_path) == [(release_id, "released")]


_SYNC_CHILD = textwrap.dedent(
    """
    import os, sys
    from fractions import Fraction
    from dpframe.accounting import Charge, Ledger

    ledger = Ledger(sys.argv[1])
    for _ in range(4):
        os.write(1, b"charging\\n")
        rid = ledger.charge("s", "d", Charge(epsilon=Fraction(1, 10)), lambda s: None, "q", "m")
        os.write(1, b"charged\\n")
        ledger.complete(rid, "1")
        os.write(1, b"completed\\n")
    """
)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_one_synchronous_commit_per_release_under_strace(ledger_path: Path, tmp_path: Path) -> None:
    script, trace = tmp_path / "child.py", tmp_path / "trace.txt"
    script.write_text(_SYNC_CHILD)
    env = dict(os.environ, PYTHONPATH=str(Path(dp.__file__).resolve().parents[1]))
    done = subprocess.run(
        [
            *("strace", "-f", "-y", "-e", "trace=fsync,fdatasync,write", "-o", str(trace)),
            *(sys.executable, str(script), str(ledger_path)),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr[-2000:]
    # Per release: the syscalls between the markers the child writes.
    phases: list[list[str]] = [[]]
    for line in trace.read_text().splitlines():
        if any(f'"{mark}\\n"' in line for mark in ("charging", "charged", "completed")):
            phases.append([])
        elif "sync(" in line:
            phases[-1].append(line)
    charges, completions = phases[1::3], phases[2::3]
    assert len(charges) == len(completions) == 4
    for syncs in charges:  # the WAL is synced before charge returns
        assert any("-wal>" in line for line in syncs), syncs
    for syncs in charges[1:]:  # once the WAL exists: exactly one sync per release
        assert len(syncs) == 1, syncs
    assert completions == [[]] * 4  # the completion syncs nothing


@POSIX
def test_new_ledger_and_its_wal_and_shm_are_private(ledger_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        ledger = Ledger(ledger_path)
        ledger.charge("s", "d", TENTH, _accept, "q", "m")
        for path in (ledger_path, Path(f"{ledger_path}-wal"), Path(f"{ledger_path}-shm")):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        ledger.close()
    finally:
        os.umask(old_umask)
    assert [p.name for p in ledger_path.parent.iterdir() if ".probe" in p.name] == []


@POSIX
def test_existing_ledger_open_to_others_is_made_private(ledger_path: Path) -> None:
    # Issue 16: a ledger holds every release, so it is its owner's only (was: kept 0640).
    Ledger(ledger_path).close()
    ledger_path.chmod(0o640)
    with pytest.warns(RuntimeWarning, match="was readable by others; it is now 0600"):
        ledger = Ledger(ledger_path)
    ledger.charge("s", "d", TENTH, _accept, "q", "m")
    assert stat.S_IMODE(ledger_path.stat().st_mode) == 0o600
    # SQLite gives the WAL the ledger file's mode.
    assert stat.S_IMODE(Path(f"{ledger_path}-wal").stat().st_mode) == 0o600


def _without_shared_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Open every ledger connection through SQLite's dot-file VFS, which has no shared memory."""
    real = ledger_schema.connect

    def connect(path: str) -> sqlite3.Connection:
        if path == ":memory:":
            return real(path)
        return sqlite3.connect(
            f"file:{path}?vfs=unix-dotfile",
            uri=True,
            timeout=60.0,
            isolation_level=None,
            check_same_thread=False,
        )

    monkeypatch.setattr(ledger_schema, "connect", connect)


@POSIX
def test_without_shared_memory_the_ledger_keeps_the_rollback_journal(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_shared_memory(monkeypatch)
    assert not ledger_schema._wal_works(ledger_path)
    first, second = Ledger(ledger_path), Ledger(ledger_path)
    assert first.journal_mode == second.journal_mode == "delete"
    ids = [writer.charge("s", "d", TENTH, _accept, "q", "m") for writer in (first, second)]
    first.complete(ids[0], "1")
    second.complete(ids[1], "2", status="failed")
    assert first.spent("s").epsilon == second.spent("s").epsilon == Fraction(2, 10)
    assert list(first.releases("s")["status"]) == ["released", "failed"]
    assert not Path(f"{ledger_path}-wal").exists()
    assert [p.name for p in ledger_path.parent.iterdir() if ".probe" in p.name] == []
    monkeypatch.undo()
    conn = sqlite3.connect(ledger_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # never switched
    conn.close()


def test_wal_that_fails_after_the_switch_is_never_set_on_the_ledger(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Some file systems accept journal_mode=WAL and fail at the first read; the
    # scratch database finds that, and the ledger stays on the rollback journal.
    monkeypatch.setattr(ledger_schema, "_wal_works", lambda file: False)
    ledger = Ledger(ledger_path)
    assert ledger.journal_mode == "delete"
    release_id = ledger.charge("s", "d", TENTH, _accept, "q", "m")
    seen: list[str] = []
    ledger._conn.set_trace_callback(seen.append)
    ledger.complete(release_id, "3")
    assert not any("synchronous" in sql for sql in seen)  # stays FULL: two durable commits
    assert _rows(ledger_path) == [(release_id, "released")]


def test_wal_probe_works_in_an_ordinary_folder(ledger_path: Path) -> None:
    assert ledger_schema._wal_works(ledger_path)
    assert list(ledger_path.parent.iterdir()) == []


def test_memory_ledger_still_works() -> None:
    ledger = Ledger(":memory:")
    assert ledger.journal_mode == "memory"
    release_id = ledger.charge("s", "d", TENTH, _accept, "q", "m")
    ledger.complete(release_id, "5")
    assert ledger.spent("s") == TENTH
    assert list(ledger.releases("s")["value"]) == ["5"]


@pytest.mark.fresh_releases
def test_sessions_on_a_wal_ledger_share_the_spend(ledger_path: Path) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    first = dp.Session(epsilon=1, ledger=ledger_path, name="shared")
    second = dp.Session(epsilon=1, ledger=ledger_path, name="shared")
    first.private_frame(frame).count(epsilon=0.25)
    second.private_frame(frame).count(epsilon=0.25)
    assert first.spent == second.spent == dp.Budget(0.5)
    assert set(first.ledger["status"]) == {"released"}
