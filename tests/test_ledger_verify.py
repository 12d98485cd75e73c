"""A ledger anyone can verify (issue 31, part 3): the hash chain, verify, anchors, migration.

Each case edits a real ledger file the way someone with write access could,
and checks that ``dpframe ledger verify`` names the session and the row and
exits non-zero: an edited value or cost, a deleted row, reordered rows or
links, a cut tail, and a whole tail re-hashed (caught only against an
anchor: an exported head or a curator's signed head).
"""

from __future__ import annotations

import json
import sqlite3
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting import ledger_schema
from dpframe.accounting.head_signatures import HeadSigner
from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_chain import (
    GENESIS_PREV,
    budget_digest,
    charge_digest,
    link_hash,
    state_digest,
)
from dpframe.accounting.ledger_verify import read_session, verify_file
from dpframe.cli import main
from dpframe.errors import LedgerError
from tests.ledger_v5 import schema_5_ledger

BOUNDS = {"wage": (0.0, 5000.0), "education": (0.0, 20.0)}
REGIONS = {"region": ["northeast", "midwest", "south", "west"]}


def _people(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "wage": rng.uniform(0, 5000, n),
            "education": rng.integers(0, 21, n),
            "region": rng.choice(REGIONS["region"], n),
        }
    )
    return frame


@pytest.fixture
def people() -> pd.DataFrame:
    return _people(31, 2_000)


def _releases(session: dp.Session, data: pd.DataFrame) -> list[object]:
    pf = session.private_frame(data, bounds=BOUNDS, categories=REGIONS)
    return [
        pf.count(epsilon=0.1),
        pf["wage"].mean(epsilon=0.1),
        pf.groupby("region")["wage"].mean(epsilon=0.1),
        pf["education"].quantile(0.5, epsilon=0.1),
    ]


@pytest.fixture
def ledger(ledger_path: Path, people: pd.DataFrame) -> Path:
    """A file ledger with a pure session 'ana' (4 releases) and a Gaussian DP session 'bo'."""
    _releases(dp.Session(epsilon=1.0, ledger=ledger_path, name="ana"), people)
    _releases(dp.Session(epsilon=1.0, delta=1e-6, ledger=ledger_path, name="bo"), _people(32, 900))
    return ledger_path


def _sql(path: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()


def _ids(path: Path, session: str) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT id FROM releases WHERE session=? ORDER BY id", (session,))
        return [int(i) for (i,) in rows]
    finally:
        conn.close()


def rehash(path: Path, session: str) -> None:
    """What a forger with write access and this code does: recompute the session's links."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        _, budget, rows = read_session(conn, session)
        by_id = {int(r["id"]): r for r in rows}
        links = conn.execute(
            "SELECT seq, kind, release_id, digest FROM chain WHERE session=? ORDER BY seq",
            (session,),
        ).fetchall()
        last = {(r, k): seq for seq, k, r, _ in links}
        prev = GENESIS_PREV
        for position, (seq, kind, release, digest) in enumerate(links):
            row = by_id.get(release)
            if kind == "genesis" and budget is not None:
                digest = budget_digest(budget)
            elif row is not None and last[release, kind] == seq:  # the row's current link
                if kind == "charge":
                    digest = charge_digest(row)
                else:
                    body = row["body"]
                    digest = state_digest(release, row["status"], row["value"], row["noise"], body)
            hashed = link_hash(prev, position, kind, release, digest)
            conn.execute(
                "UPDATE chain SET n=?, digest=?, hash=? WHERE seq=?",
                (position, digest, hashed, seq),
            )
            prev = hashed
    finally:
        conn.close()


def _verify(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    status = main(["ledger", "verify", str(path), *extra])
    return status, capsys.readouterr().out


# -- intact ------------------------------------------------------------------------------


def test_an_intact_ledger_verifies_with_every_spend_recomputed(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = verify_file(ledger)
    assert report.ok, report.problems
    sessions = {s.session: s for s in report.sessions}
    assert set(sessions) == {"ana", "bo"}
    ana = Ledger(ledger)
    assert sessions["ana"].spent == dp.Session(epsilon=1.0, ledger=ledger, name="ana").spent
    assert sessions["ana"].spent == dp.Budget(0.4)
    assert sessions["ana"].releases == 4
    assert sessions["ana"].calibrations > 4  # every additive release recorded its calibration
    assert sessions["bo"].accounting == "gdp"
    head = ana.head("ana")
    assert head is not None and sessions["ana"].head == head
    assert head.n == 8  # genesis, then a charge and a state link per release
    status, out = _verify(ledger, capsys)
    assert status == 0
    assert "OK: every chain, spend and noise calibration checks." in out
    assert "Released values are not verified" in out
    assert "no anchor given" in out


def test_the_head_is_shown_on_the_session_and_moves_with_each_release(
    ledger_path: Path, people: pd.DataFrame
) -> None:
    session = dp.Session(epsilon=1.0, ledger=ledger_path, name="ana")
    first = session.ledger_head
    assert first is not None and first.n == 0
    assert f"ledger head {first}" in repr(session)
    pf = session.private_frame(people, bounds=BOUNDS)
    pf.count(epsilon=0.1)
    after = session.ledger_head
    assert after is not None and after.n == 2 and after.hash != first.hash
    pf.count(epsilon=0.1)  # answered from the ledger: nothing recorded, the head stays
    assert session.ledger_head == after


# -- edited, deleted, reordered ----------------------------------------------------------


def test_an_edited_value_is_named_by_session_and_row(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second = _ids(ledger, "ana")[1]
    _sql(ledger, ("UPDATE releases SET value='2500.0' WHERE id=?", (second,)))
    status, out = _verify(ledger, capsys)
    assert status == 1
    assert f"session 'ana', release {second}: its outcome" in out and "(edited)" in out


def test_an_edited_cost_is_caught(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _ids(ledger, "bo")[0]
    _sql(ledger, ("UPDATE releases SET epsilon='1/100' WHERE id=?", (first,)))
    status, out = _verify(ledger, capsys)
    assert status == 1
    assert f"session 'bo', release {first}: its charge differs from its chain link" in out


def test_an_edited_stored_answer_is_caught(ledger: Path) -> None:
    first = _ids(ledger, "ana")[0]
    _sql(ledger, ("UPDATE answers SET body=x'00' WHERE release_id=?", (first,)))
    problems = [str(p) for p in verify_file(ledger).problems]
    assert problems == [
        f"session 'ana', release {first}: its outcome (status, value, noise or stored answer) "
        "differs from its chain link (edited)"
    ]


def test_a_deleted_row_is_caught(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    third = _ids(ledger, "ana")[2]
    _sql(
        ledger,
        ("DELETE FROM answers WHERE release_id=?", (third,)),
        ("DELETE FROM releases WHERE id=?", (third,)),
    )
    status, out = _verify(ledger, capsys)
    assert status == 1
    assert f"session 'ana', release {third}: the row is in the chain but not in the ledger" in out


def test_an_inserted_row_is_caught(ledger: Path) -> None:
    _sql(
        ledger,
        (
            "INSERT INTO releases (session, dataset, time, query, mechanism, epsilon, delta,"
            " rho, status, value, currency) VALUES ('ana', 'd', 0.0, 'count()', 'm', '1/10',"
            " '0', '0', 'released', '1', 'pure')",
            (),
        ),
    )
    problems = [str(p) for p in verify_file(ledger).problems]
    assert len(problems) == 2 and "the row is not in the chain (inserted)" in problems[0]


def test_reordered_rows_are_caught(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _ids(ledger, "ana")[:2]
    _sql(  # swap the two rows' ids (answers follow their rows)
        ledger,
        ("UPDATE releases SET id=-1 WHERE id=?", (first,)),
        ("UPDATE releases SET id=? WHERE id=?", (first, second)),
        ("UPDATE releases SET id=? WHERE id=-1", (second,)),
        ("UPDATE answers SET release_id=-1 WHERE release_id=?", (first,)),
        ("UPDATE answers SET release_id=? WHERE release_id=?", (first, second)),
        ("UPDATE answers SET release_id=? WHERE release_id=-1", (second,)),
    )
    status, out = _verify(ledger, capsys)
    assert status == 1
    assert f"session 'ana', release {first}: its charge differs" in out
    assert f"session 'ana', release {second}: its charge differs" in out


def test_reordered_links_are_caught(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conn = sqlite3.connect(ledger)
    seqs = [s for (s,) in conn.execute("SELECT seq FROM chain WHERE session='ana' ORDER BY seq")]
    conn.close()
    a, b = seqs[3], seqs[5]
    _sql(
        ledger,
        ("UPDATE chain SET seq=-1 WHERE seq=?", (a,)),
        ("UPDATE chain SET seq=? WHERE seq=?", (a, b)),
        ("UPDATE chain SET seq=? WHERE seq=-1", (b,)),
    )
    status, out = _verify(ledger, capsys)
    assert status == 1
    assert "session 'ana', link 3" in out and "deleted or reordered" in out


# -- truncated and re-hashed: caught only against an anchor ------------------------------


def _cut_last(path: Path, session: str) -> None:
    last = _ids(path, session)[-1]
    _sql(
        path,
        ("DELETE FROM chain WHERE release_id=?", (last,)),
        ("DELETE FROM answers WHERE release_id=?", (last,)),
        ("DELETE FROM releases WHERE id=?", (last,)),
    )


def test_a_cut_tail_needs_an_anchor_and_is_caught_with_one(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    anchor = tmp_path / "head.json"
    head = Ledger(ledger).head("ana")
    assert head is not None
    anchor.write_text(json.dumps(head.to_dict()))
    _cut_last(ledger, "ana")
    assert verify_file(ledger).ok  # the chain alone cannot see a cut tail: say so
    status, out = _verify(ledger, capsys, "--anchor", str(anchor))
    assert status == 1
    assert f"session 'ana', anchor {head}: the chain has 7 link(s)" in out
    assert "its tail was cut" in out


def test_a_rehashed_ledger_passes_alone_and_fails_against_an_exported_head(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "export", str(ledger), "--session", "ana", "--out", str(tmp_path)]) == 0
    second = _ids(ledger, "ana")[1]
    _sql(ledger, ("UPDATE releases SET value='2500.0' WHERE id=?", (second,)))
    rehash(ledger, "ana")
    capsys.readouterr()
    status, out = _verify(ledger, capsys)
    assert status == 0  # consistent again: only an anchor tells
    status, out = _verify(ledger, capsys, "--anchor", str(tmp_path / "bundle.json"))
    assert status == 1
    assert "session 'ana', anchor 8:" in out and "(re-hashed)" in out


def test_a_rehashed_ledger_fails_against_a_signed_curator_head(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signer = HeadSigner(tmp_path / "curator.ed25519")
    assert (tmp_path / "curator.ed25519").stat().st_mode & 0o777 == 0o600
    head = Ledger(ledger).head("bo")
    assert head is not None
    signed = tmp_path / "signed.json"
    signed.write_text(json.dumps(signer.sign(head)))
    key = ["--public-key", signer.public_key]
    assert _verify(ledger, capsys, "--anchor", str(signed), *key)[0] == 0
    first = _ids(ledger, "bo")[0]
    _sql(ledger, ("UPDATE releases SET value='0' WHERE id=?", (first,)))
    rehash(ledger, "bo")
    status, out = _verify(ledger, capsys, "--anchor", str(signed), *key)
    assert status == 1 and "session 'bo', anchor 8:" in out and "(re-hashed)" in out
    # a signed head changed after signing, or under another key, is no anchor
    forged = {**signer.sign(head), "hash": "0" * 64}
    signed.write_text(json.dumps(forged))
    status = main(["ledger", "verify", str(ledger), "--anchor", str(signed), *key])
    assert status == 2
    assert "does not verify" in capsys.readouterr().err
    other = HeadSigner(tmp_path / "other.ed25519")
    signed.write_text(json.dumps(other.sign(head)))
    assert main(["ledger", "verify", str(ledger), "--anchor", str(signed), *key]) == 2
    assert "signed by another key" in capsys.readouterr().err


def test_a_rehashed_overspend_or_understated_noise_is_caught_without_an_anchor(
    ledger: Path,
) -> None:
    first, second, third = _ids(ledger, "ana")[:3]
    _sql(ledger, ("UPDATE releases SET epsilon='9/10' WHERE id=?", (first,)))  # 0.9 + 0.1 + 0.1
    conn = sqlite3.connect(ledger)
    noise = json.loads(
        conn.execute("SELECT noise FROM releases WHERE id=?", (second,)).fetchone()[0]
    )
    conn.close()
    noise[0]["parameter"] = str(Fraction(noise[0]["parameter"]) / 2)  # half the noise claimed
    _sql(ledger, ("UPDATE releases SET noise=? WHERE id=?", (json.dumps(noise), second)))
    rehash(ledger, "ana")
    problems = [str(p) for p in verify_file(ledger).problems]
    assert any(
        p.startswith(f"session 'ana', release {third}: ") and "did not fit" in p for p in problems
    )
    assert any(
        p.startswith(f"session 'ana', release {second}: noise calibration 0:")
        and "is not what the mechanism calibrates" in p
        for p in problems
    )


# -- migration ---------------------------------------------------------------------------


def _schema_8_ledger(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema-8 ledger as dpframe wrote it: two sessions, released, failed and charged rows."""
    with monkeypatch.context() as patch:
        patch.setattr(ledger_schema, "MIGRATIONS", ledger_schema.MIGRATIONS[:8])
        ledger_schema.create_file(path)
    now = time.time()
    statements: list[tuple[str, tuple[object, ...]]] = []
    for session in ("old", "older"):
        statements.append(
            (
                "INSERT INTO budgets (session, dataset, accounting, epsilon, delta, created,"
                " delta_reserve, privacy_unit) VALUES (?, '*', 'pure', '1', '0', ?, NULL, 'rows')",
                (session, now),
            )
        )
        for i, status in enumerate(("released", "failed", "released", "charged")):
            value = {"released": "12", "failed": "", "charged": None}[status]
            statements.append(
                (
                    "INSERT INTO releases (session, dataset, time, query, mechanism, epsilon,"
                    " delta, rho, status, value, currency, request) VALUES (?, 'd', ?, 'count()',"
                    " 'discrete Laplace', '1/10', '0', '0', ?, ?, 'pure', ?)",
                    (session, now + i, status, value, f"key{i}"),
                )
            )
    statements.append(
        ("INSERT INTO answers (release_id, body, time) VALUES (1, x'0102', ?)", (now,))
    )
    _sql(path, *statements)


def test_a_schema_8_ledger_gets_genesis_links_and_verifies(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _schema_8_ledger(ledger_path, monkeypatch)
    with pytest.raises(LedgerError, match="before the hash chain"):
        verify_file(ledger_path)  # read only: never migrated by the verifier
    ledger = Ledger(ledger_path)
    conn = sqlite3.connect(ledger_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 10
    kinds = [k for (k,) in conn.execute("SELECT kind FROM chain WHERE session='old' ORDER BY seq")]
    conn.close()
    assert kinds == ["genesis"] + ["charge", "state"] * 3 + ["charge"]  # the charged row: no state
    head = ledger.head("old")
    assert head is not None and head.n == 7
    assert ledger.spent("old").epsilon == Fraction(4, 10)
    status, out = _verify(ledger_path, capsys)
    assert status == 0 and "session 'old' (pure): 4 release(s), spent ε=0.4" in out
    # the pending row completes later: its state link is appended
    ledger.complete(_ids(ledger_path, "old")[-1], "7")
    assert verify_file(ledger_path).ok
    _sql(ledger_path, ("UPDATE releases SET value='13' WHERE id=1", ()))
    assert [str(p) for p in verify_file(ledger_path).problems] == [
        "session 'old', release 1: its outcome (status, value, noise or stored answer) differs "
        "from its chain link (edited)"
    ]


def test_a_schema_5_ledger_rekeyed_at_its_next_load_still_verifies(
    ledger_path: Path, people: pd.DataFrame
) -> None:
    schema_5_ledger(ledger_path, [("clinic", people, 3)])
    session = dp.Session(epsilon=1, ledger=ledger_path, name="clinic")
    session.private_frame(people, bounds=BOUNDS).count(epsilon=0.1)  # renames its 3 releases
    report = verify_file(ledger_path)
    assert report.ok, report.problems
    assert report.sessions[0].spent == dp.Budget(0.4)


def test_verify_refuses_a_missing_or_foreign_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "verify", str(tmp_path / "none.sqlite")]) == 2
    assert "No ledger file" in capsys.readouterr().err
    foreign = tmp_path / "foreign.sqlite"
    _sql(foreign, ("CREATE TABLE t (x)", ()))
    assert main(["ledger", "verify", str(foreign)]) == 2
    assert "before the hash chain" in capsys.readouterr().err
