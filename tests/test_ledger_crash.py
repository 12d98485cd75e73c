"""The ledger under crashes, concurrent processes, and files that are not sound ledgers.

* SIGKILL in the middle of a loop of releases: after a restart, every release
  the killed process returned is in the recorded spend, the file passes
  SQLite's integrity check, and at most one charged-but-unreturned row exists.
* Four processes releasing against one ledger (2,000 releases of ε = 0.001
  into a total of ε = 2): exactly the total is admitted, never more.
* Damaged or foreign files raise :class:`dp.LedgerError` and are left
  byte-for-byte unchanged (never a silent reset).
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting import Charge, Ledger
from dpframe.accounting.ledger import APPLICATION_ID, SCHEMA_VERSION

# A child process: release counts in a loop, printing after each returned release.
_CHILD = textwrap.dedent(
    """
    import sys
    import pandas as pd
    import dpframe as dp

    path, name, total, cost, limit = sys.argv[1:6]
    session = dp.Session(epsilon=total, name=name, ledger=path)
    pf = session.private_frame(pd.DataFrame({"x": [1.0, 2.0, 3.0]}))
    print("ready", flush=True)
    done = 0
    try:
        while done < int(limit):
            pf.count(epsilon=float(cost), fresh=True)  # a new release each time
            done += 1
            print("released", flush=True)
    except dp.BudgetExceededError:
        print("refused", flush=True)
    print(f"done {done}", flush=True)
    """
)


def _child(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    if not script.exists():
        script.write_text(_CHILD)
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


# -- SIGKILL in the middle of a loop -------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_loop_keeps_every_returned_release(ledger_path: Path, tmp_path: Path) -> None:
    cost = Fraction(1, 100)
    printed_total = 0
    chooser = random.Random(20240601)  # kill timing only; no privacy noise here
    for _round in range(3):
        proc = _child(tmp_path, str(ledger_path), "crash", "1000", "0.01", "100000")
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        wanted = chooser.randint(20, 60)
        for _ in range(wanted):
            assert proc.stdout.readline().strip() == "released"
        time.sleep(chooser.random() * 0.05)  # land anywhere in a release, also in a commit
        os.kill(proc.pid, signal.SIGKILL)
        # The rest through the same reader: readline() may have read lines ahead into its
        # buffer, which communicate() (reading the raw pipes) would never see.
        rest = proc.stdout.read()
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        printed = wanted + rest.split().count("released")  # every release the child returned
        printed_total += printed

        # restart: the file opens cleanly and covers every returned release
        assert _integrity(ledger_path) == "ok"
        resumed = dp.Session(epsilon=1000, name="crash", ledger=ledger_path)
        rows = resumed.ledger
        assert printed_total <= len(rows) <= printed_total + 1  # + the release in flight
        assert resumed.spent == dp.Budget(cost * len(rows))
        assert resumed.spent.epsilon >= cost * printed_total
        # only a release killed before it returned may be left 'charged'
        unfinished = rows[rows["status"] != "released"]
        assert set(unfinished["status"]) <= {"charged"}
        assert len(unfinished) <= _round + 1
        del resumed
        printed_total = len(rows)  # the next round starts from what is recorded


# -- four processes against one ledger -----------------------------------------


@pytest.mark.slow
def test_four_processes_never_exceed_the_total(ledger_path: Path, tmp_path: Path) -> None:
    # The ledger file does not exist yet: the four processes also race to create it.
    procs = [_child(tmp_path, str(ledger_path), "shared", "2", "0.001", "100000") for _ in range(4)]
    admitted = 0
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        lines = out.split("\n")
        assert "refused" in lines  # every process ran until the budget refused it
        admitted += int(next(line for line in lines if line.startswith("done")).split()[1])
    assert admitted == 2000  # 2 / 0.001, exactly: never more, and nothing lost
    check = dp.Session(epsilon=2, name="shared", ledger=ledger_path)
    assert check.spent == dp.Budget(2)
    assert check.remaining == dp.Budget(0)
    rows = check.ledger
    assert len(rows) == 2000
    assert set(rows["status"]) == {"released"}
    assert _integrity(ledger_path) == "ok"


# -- files that are not sound ledgers ------------------------------------------


def _ledger_with_rows(path: Path, rows: int) -> None:
    ledger = Ledger(path)

    def accept(spent: Charge) -> None:
        return None

    for i in range(rows):
        ledger.charge("s", "d" * 40, Charge(epsilon=Fraction(1, 100)), accept, f"q{i}" * 20, "m")
    ledger.close()


def _foreign_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE customers (id INTEGER, name TEXT); INSERT INTO customers VALUES (1, 'a');"
    )
    conn.close()


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(8192))


def _truncated_half(path: Path) -> None:
    _ledger_with_rows(path, 400)
    data = path.read_bytes()
    assert len(data) > 8 * 4096  # several pages, so half of it loses table pages
    path.write_bytes(data[: len(data) // 2])


def _truncated_to_header(path: Path) -> None:
    _ledger_with_rows(path, 3)
    path.write_bytes(path.read_bytes()[:60])


def _truncated_to_nothing(path: Path) -> None:
    _ledger_with_rows(path, 3)
    path.write_bytes(b"")


def _newer_schema(path: Path) -> None:
    _ledger_with_rows(path, 3)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()


def _other_application(path: Path) -> None:
    _ledger_with_rows(path, 3)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id=1234")
    conn.close()


def _ledger_tables_in_foreign_db(path: Path) -> None:
    _ledger_with_rows(path, 3)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id=0")
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.close()


def _damaged_page(path: Path) -> None:
    _ledger_with_rows(path, 400)
    data = bytearray(path.read_bytes())
    page = 4096 * 3
    data[page : page + 200] = bytes(range(200))  # overwrite a b-tree page header
    path.write_bytes(bytes(data))


BAD_FILES = {
    "random bytes": (_random_bytes, "not a readable SQLite database"),
    "SQLite DB with other tables": (_foreign_database, "not a dpframe ledger"),
    "ledger tables inside another DB": (_ledger_tables_in_foreign_db, "not a dpframe ledger"),
    "truncated to half": (_truncated_half, "damaged"),
    "truncated to 60 bytes": (_truncated_to_header, "not a readable SQLite database"),
    "truncated to 0 bytes": (_truncated_to_nothing, "is empty"),
    "damaged b-tree page": (_damaged_page, "damaged"),
    "newer schema version": (_newer_schema, "newer dpframe"),
    "another application's id": (_other_application, "another application"),
}


@pytest.mark.parametrize("case", list(BAD_FILES), ids=list(BAD_FILES))
def test_bad_ledger_file_is_refused_and_left_alone(ledger_path: Path, case: str) -> None:
    make, expected = BAD_FILES[case]
    make(ledger_path)
    before = _digest(ledger_path)
    with pytest.raises(dp.LedgerError, match=expected) as info:
        dp.Session(epsilon=1, ledger=ledger_path)
    assert "reset" in str(info.value) or "Upgrade" in str(info.value)
    with pytest.raises(dp.LedgerError, match=expected):
        Ledger(ledger_path)
    assert _digest(ledger_path) == before  # never rewritten, never reset


def test_new_ledger_is_stamped_and_never_empty(ledger_path: Path) -> None:
    Ledger(ledger_path).close()
    assert ledger_path.stat().st_size > 0
    conn = sqlite3.connect(ledger_path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    assert [p.name for p in ledger_path.parent.iterdir() if p.name.endswith(".new")] == []


def test_unstamped_ledger_from_an_older_dpframe_is_adopted(
    ledger_path: Path, cps: pd.DataFrame
) -> None:
    first = dp.Session(epsilon=1, ledger=ledger_path, name="old")
    first.private_frame(cps).count(epsilon=0.25)
    first._ledger.close()
    del first
    conn = sqlite3.connect(ledger_path)
    conn.execute("PRAGMA application_id=0")
    conn.execute("PRAGMA user_version=0")
    conn.close()
    resumed = dp.Session(epsilon=1, ledger=ledger_path, name="old")
    assert resumed.spent == dp.Budget(0.25)
    conn = sqlite3.connect(ledger_path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()


def test_ledger_path_that_is_a_folder(tmp_path: Path) -> None:
    with pytest.raises(dp.LedgerError, match="folder"):
        dp.Session(epsilon=1, ledger=tmp_path)


def test_sqlite_failure_during_a_charge_is_a_ledger_error(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)
    ledger._conn.close()  # a connection that fails, as a damaged file would mid-work

    def accept(spent: Charge) -> None:
        return None

    with pytest.raises(dp.LedgerError, match="failed"):
        ledger.charge("s", "d", Charge(epsilon=Fraction(1)), accept, "q", "m")
    with pytest.raises(dp.LedgerError, match="Cannot operate on a closed database"):
        ledger.spent("s")
