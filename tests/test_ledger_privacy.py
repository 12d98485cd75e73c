"""What a ledger file tells whoever holds it (issue 27 part 2).

The attack: from a copy of a ledger's folder alone (no key), recover the row
count and the count of positives of a yes/no column by trying every pair with
dpframe's own digest functions.  On a schema-5 ledger it succeeds (bounded
here to n <= 400: a fraction of a second); on a schema-6 ledger every value
in the folder's files is keyed and the same search, or one with a guessed
key, finds nothing.  With the owner's key it succeeds, which shows the search
itself is sound.  Then: migration from schema 5 keeps the spend, the data is
rekeyed when next loaded, ``dpframe ledger scrub`` removes the rest, and the
key and sketch files are their owner's only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from benchmarks.ledger_file_attack import (
    folder_values,
    keyed_yes_no_digest,
    legacy_yes_no_digest,
    search,
)
from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_key import default_key_path
from dpframe.accounting.ledger_sketches import SketchStore, sketch_path
from dpframe.backends import column_digests as legacy
from dpframe.backends.data_sketch import SketchKey
from dpframe.cli import main
from tests.ledger_v5 import schema_5_ledger

N, POSITIVES, SEARCH = 300, 180, 400
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


@pytest.fixture(scope="module")
def clinic() -> pd.DataFrame:
    rng = np.random.default_rng(27)
    hiv = np.zeros(N, dtype=bool)
    hiv[rng.choice(N, POSITIVES, replace=False)] = True
    data: pd.DataFrame = pd.DataFrame({"age": rng.integers(18, 90, N), "hiv": hiv})
    return data


# -- the attacker's tools: dpframe's digest functions, and every value in a folder ------------


def _search(found: set[str], digest: Callable[[int, int], str]) -> tuple[int, int] | None:
    """Try every (n, yes) with n up to SEARCH (the benchmark's attack, at this test's size)."""
    return search(found, digest, SEARCH)[0]


def _copy_folder(source: Path, target: Path) -> Path:
    """What an attacker gets: the ledger's folder, copied (the key lives elsewhere)."""
    shutil.copytree(source, target)
    return target


# -- the attack, before and after ------------------------------------------------------------


def test_the_attack_recovers_n_and_positives_from_a_schema_5_ledger(
    tmp_path: Path, clinic: pd.DataFrame
) -> None:
    assert legacy_yes_no_digest()(7, 3) == legacy.column_digest(pd.Series([True] * 3 + [False] * 4))
    folder = tmp_path / "notebooks"
    folder.mkdir()
    schema_5_ledger(folder / "ledger.sqlite", [("clinic", clinic, 3)])
    stolen = _copy_folder(folder, tmp_path / "copy")
    start = time.perf_counter()
    assert _search(folder_values(stolen), legacy_yes_no_digest()) == (N, POSITIVES)
    assert time.perf_counter() - start < 120


def test_the_attack_finds_nothing_in_a_schema_6_ledger_folder(
    tmp_path: Path, clinic: pd.DataFrame
) -> None:
    folder = tmp_path / "notebooks"
    session = dp.Session(epsilon=1, ledger=folder / "ledger.sqlite", name="clinic")
    pf = session.private_frame(clinic, bounds={"age": (0, 100)})
    for _ in range(3):
        pf.count(epsilon=0.1)
    session._ledger.close()
    stolen = _copy_folder(folder, tmp_path / "copy")
    assert {"ledger.sqlite", "ledger.sqlite.sketches"} <= {p.name for p in stolen.iterdir()}
    assert not any("key" in p.name for p in stolen.iterdir())  # the key lives elsewhere
    values = folder_values(stolen)
    assert _search(values, legacy_yes_no_digest()) is None
    assert _search(values, keyed_yes_no_digest(SketchKey(bytes(32)))) is None  # a guessed key
    # the owner, who holds the key, can run the same search: the search is sound
    owner = SketchKey(bytes.fromhex(default_key_path().read_text().strip()))
    assert _search(values, keyed_yes_no_digest(owner)) == (N, POSITIVES)
    # and the ledger itself holds no digest or sketch at all: it can go to an auditor
    conn = sqlite3.connect(stolen / "ledger.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM unkeyed_digests").fetchone()[0] == 0
    tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert "tags" not in tables and "sketches" not in tables


# -- migration from schema 5: spend kept, rekeyed at the next load ----------------------------


def _datasets(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(d) for (d,) in conn.execute("SELECT dataset FROM releases ORDER BY id")]
    finally:
        conn.close()


def test_a_schema_5_ledger_is_migrated_with_its_spend(
    ledger_path: Path, clinic: pd.DataFrame, cps: pd.DataFrame
) -> None:
    prints = schema_5_ledger(ledger_path, [("clinic", clinic, 3), ("wages", cps, 2)])
    session = dp.Session(epsilon=1, ledger=ledger_path, name="clinic")
    assert session.spent == dp.Budget(0.3)
    conn = sqlite3.connect(ledger_path)
    assert (
        conn.execute("PRAGMA user_version").fetchone()[0] == 10
    )  # through 6 (issue 27), 7 (issue 32), 8-10 (issue 31)
    unkeyed = {d for (d,) in conn.execute("SELECT dataset FROM unkeyed_datasets")}
    assert unkeyed == set(prints.values())
    assert conn.execute("SELECT COUNT(*) FROM unkeyed_digests").fetchone()[0] == 2 + 7
    conn.close()
    # loading the data again renames its releases to the keyed identity, drops its digests
    session.private_frame(clinic, bounds={"age": (0, 100)}).count(epsilon=0.1)
    key = SketchKey(session._ledger.traces.key)
    identity = key.identity(prints["clinic"])
    assert _datasets(ledger_path) == [identity] * 3 + [prints["wages"]] * 2 + [identity]
    assert session.spent == dp.Budget(0.4)
    conn = sqlite3.connect(ledger_path)
    assert {d for (d,) in conn.execute("SELECT dataset FROM unkeyed_digests")} == {prints["wages"]}
    conn.close()


def test_after_migration_a_copy_under_a_new_name_still_warns(
    ledger_path: Path, cps: pd.DataFrame
) -> None:
    schema_5_ledger(ledger_path, [("wages", cps, 2)])
    subset = cps[["wage", "education"]].sample(frac=1.0, random_state=1)  # old digests match
    with pytest.warns(
        dp.BudgetResetWarning, match=r"'wages': 2 releases \(matching columns: education, wage\)"
    ):
        dp.Session(epsilon=1, ledger=ledger_path, name="fresh").private_frame(subset)
    with pytest.warns(dp.BudgetResetWarning, match=r"'wages': 2 releases \(the same data\)"):
        dp.Session(epsilon=1, ledger=ledger_path, name="other").private_frame(cps)


# -- dpframe ledger scrub ---------------------------------------------------------------------


def _bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def test_scrub_removes_every_unkeyed_trace_and_keeps_spend_and_links(
    ledger_path: Path, clinic: pd.DataFrame, cps: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    prints = schema_5_ledger(ledger_path, [("clinic", clinic, 3), ("wages", cps, 2)])
    conn = sqlite3.connect(ledger_path)
    old = [d for (d,) in conn.execute("SELECT digest FROM digests")] + list(prints.values())
    conn.close()
    assert all(value.encode() in _bytes(ledger_path) for value in old)
    assert main(["ledger", "scrub", str(ledger_path)]) == 0
    out = capsys.readouterr().out
    assert "9 unkeyed digest(s) deleted, 2 unkeyed fingerprint(s) replaced" in out
    assert not any(value.encode() in _bytes(ledger_path) for value in old)
    ledger = Ledger(ledger_path)
    key = SketchKey(ledger.traces.key)
    assert ledger.spent("clinic").epsilon == pytest.approx(0.3)
    assert ledger.spent("wages").epsilon == pytest.approx(0.2)
    assert (
        _datasets(ledger_path)
        == [key.identity(prints["clinic"])] * 3 + [key.identity(prints["wages"])] * 2
    )
    ledger.close()
    # the link is kept: the same data under another name is still recognized
    with pytest.warns(dp.BudgetResetWarning, match=r"'wages': 2 releases \(the same data\)"):
        dp.Session(epsilon=1, ledger=ledger_path, name="fresh").private_frame(cps)
    assert main(["ledger", "scrub", str(ledger_path)]) == 0
    assert "no unkeyed digests or fingerprints" in capsys.readouterr().out


def test_scrub_refuses_what_is_not_a_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "scrub", str(tmp_path / "missing.sqlite")]) == 2
    assert "There is no ledger file at" in capsys.readouterr().err
    other = tmp_path / "notes.sqlite"
    other.write_bytes(b"not a ledger" * 100)
    assert main(["ledger", "scrub", str(other)]) == 2
    assert "not a readable SQLite database" in capsys.readouterr().err
    assert other.read_bytes() == b"not a ledger" * 100


def test_scrub_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="0"):
        main(["ledger", "scrub", "--help"])
    text = capsys.readouterr().out
    assert "usage: dpframe ledger scrub" in text
    assert "rekeyed when it is next loaded" in " ".join(text.split())


# -- the key and the sketch file ---------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@posix_only
def test_the_key_and_sketch_files_are_their_owners_only(
    tmp_path: Path, ledger_path: Path, cps: pd.DataFrame
) -> None:
    old = os.umask(0o022)
    try:
        dp.Session(epsilon=1, ledger=":memory:").private_frame(cps)
        assert not default_key_path().exists()  # an in-memory ledger reads no key file
        dp.Session(epsilon=1, ledger=ledger_path).private_frame(cps)
    finally:
        os.umask(old)
    key = default_key_path()
    assert key == tmp_path / "config" / "dpframe" / "key"
    assert (_mode(key), _mode(key.parent)) == (0o600, 0o700)
    assert len(bytes.fromhex(key.read_text().strip())) == 32
    assert _mode(sketch_path(ledger_path)) == 0o600
    assert key.parent != ledger_path.parent


@posix_only
def test_a_key_file_open_to_others_is_made_0600(ledger_path: Path, cps: pd.DataFrame) -> None:
    dp.Session(epsilon=1, ledger=ledger_path).private_frame(cps)
    os.chmod(default_key_path(), 0o644)
    with pytest.warns(RuntimeWarning, match=r"key file .* was readable by others; it is now 0600"):
        dp.Session(epsilon=1, ledger=ledger_path, name="b").private_frame(cps.iloc[:50])
    assert _mode(default_key_path()) == 0o600


def test_a_damaged_key_file_is_refused_unchanged(ledger_path: Path, cps: pd.DataFrame) -> None:
    key = default_key_path()
    key.parent.mkdir(parents=True)
    key.write_text("not a key\n")
    with pytest.raises(
        dp.LedgerError, match=r"Cannot read dpframe's key file .* \(not hexadecimal text\)"
    ):
        dp.Session(epsilon=1, ledger=ledger_path).private_frame(cps)
    key.write_text("ab" * 16 + "\n")
    with pytest.raises(dp.LedgerError, match=r"holds 16 bytes, not 32"):
        dp.Session(epsilon=1, ledger=ledger_path).private_frame(cps)
    assert key.read_text() == "ab" * 16 + "\n"


def test_a_key_in_the_ledgers_folder_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cps: pd.DataFrame
) -> None:
    monkeypatch.setenv("DPFRAME_KEY", str(tmp_path / "state" / "key"))
    with pytest.warns(RuntimeWarning, match=r"key file .* is in the folder of the ledger"):
        dp.Session(epsilon=1, ledger=tmp_path / "state" / "ledger.sqlite").private_frame(cps)


def test_two_processes_making_the_key_at_once_agree(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from dpframe.accounting.ledger_key import load_key

    path = tmp_path / "cfg" / "key"
    with ThreadPoolExecutor(4) as pool:
        keys = set(pool.map(lambda _: load_key(path), range(8)))
    assert len(keys) == 1


def test_a_sketch_file_that_cannot_be_used_does_not_stop_a_load(
    ledger_path: Path, cps: pd.DataFrame
) -> None:
    ledger_path.parent.mkdir(parents=True, exist_ok=True)
    sketch_path(ledger_path).write_bytes(b"x" * 4096)
    with pytest.warns(RuntimeWarning, match=r"The sketch file .* cannot be used"):
        pf = dp.Session(epsilon=1, ledger=ledger_path).private_frame(cps)
    pf.count(epsilon=0.1)
    assert sketch_path(ledger_path).read_bytes() == b"x" * 4096


def _only(warned: Iterable[warnings.WarningMessage], kind: type[Warning]) -> list[str]:
    return [str(w.message) for w in warned if issubclass(w.category, kind)]


def test_a_reload_of_the_same_data_writes_no_sketch(
    ledger_path: Path, cps: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    dp.Session(epsilon=1, ledger=ledger_path, name="a").private_frame(cps)

    def no_write(*args: object, **kwargs: object) -> None:
        raise AssertionError("a reload of the same data rewrote its sketch")

    monkeypatch.setattr(SketchStore, "record", no_write)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        dp.Session(epsilon=1, ledger=ledger_path, name="a").private_frame(cps)
    assert _only(warned, dp.BudgetResetWarning) == []
    assert _only(warned, RuntimeWarning) == []
