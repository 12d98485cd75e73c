"""A data owner changes a grant in the catalog and restarts the curator (issue 31, part 4).

Before: raising an analyst's ε and restarting started the curator without a
word, then every request of that analyst failed inside the session's
registration (HTTP 500 "outside the protocol").  Now the curator compares
the catalog with its ledger when it starts, says what differs, applies a
raised or lowered grant in place (recorded and chained in the ledger, the
spend kept) and refuses a change of accounting kind; ``dpframe ledger
verify`` passes after each change and catches a budget row edited without
its genesis link.
"""

from __future__ import annotations

import logging
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.accounting.ledger_verify import verify_file
from dpframe.cli import main
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.codes import ServiceError
from dpframe.curator.service import Curator
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, release_body, write_catalog

BOB_GRANT = "cps = { epsilon = 1.0 }"
ALICE_GRANT = "cps = { epsilon = 5.0, delta = 1e-6 }"


def _grant(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _release(curator: Curator, token: str, epsilon: float = 0.1) -> None:
    who = curator.authenticate(f"Bearer {token}")
    body = release_body(lambda pf: pf.count(epsilon=epsilon))
    curator.answer(who, "cps", {**body, "fresh": True})


def _budget(curator: Curator, token: str) -> dict[str, object]:
    state = curator.budget(curator.authenticate(f"Bearer {token}"), "cps")
    return {k: decode_response(state[k]) for k in ("total", "spent", "remaining")}


def _start(catalog: Path) -> Curator:
    return Curator(Catalog.load(catalog))


def _bob_spends(tmp_path: Path, releases: int) -> Path:
    """A catalog and a ledger where bob (pure, ε = 1) spent ``releases`` × 0.1."""
    catalog = write_catalog(tmp_path)
    curator = _start(catalog)
    try:
        for _ in range(releases):
            _release(curator, BOB)
    finally:
        curator.close()
    return catalog


def _verified(catalog: Path) -> None:
    report = verify_file(tmp_ledger(catalog))
    assert report.ok, [str(p) for p in report.problems]


def tmp_ledger(catalog: Path) -> Path:
    return catalog.parent / "ledger.sqlite"


def test_a_raised_grant_is_applied_in_place_with_the_spend_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = _bob_spends(tmp_path, 3)
    _grant(catalog, BOB_GRANT, "cps = { epsilon = 2.0 }")
    with caplog.at_level(logging.WARNING, logger="dpframe.curator"):
        curator = _start(catalog)
    try:
        (change,) = curator.grant_report.changed
        assert (change.session, change.direction) == ("bob/cps", "raised")
        assert (change.before, change.after) == (dp.Budget(1), dp.Budget(2))
        assert change.spent == dp.Budget(Fraction(3, 10)) and not change.exhausted
        assert "bob/cps: grant raised from" in caplog.text  # the log line
        state = _budget(curator, BOB)  # was: HTTP 500 "outside the protocol"
        assert state["spent"] == dp.Budget(0.3)
        assert state["remaining"] == dp.Budget(1.7)
        _release(curator, BOB)  # releases go on under the new grant
        assert _budget(curator, BOB)["remaining"] == dp.Budget(1.6)
    finally:
        curator.close()
    _verified(catalog)
    again = _start(catalog)  # the same catalog again: nothing differs
    try:
        assert again.grant_report.lines() == []
    finally:
        again.close()


def test_a_lowered_grant_keeps_the_spend(tmp_path: Path) -> None:
    catalog = _bob_spends(tmp_path, 3)
    _grant(catalog, BOB_GRANT, "cps = { epsilon = 0.5 }")
    curator = _start(catalog)
    try:
        (change,) = curator.grant_report.changed
        assert change.direction == "lowered" and not change.exhausted
        assert change.remaining == dp.Budget(Fraction(2, 10))
        _release(curator, BOB)
        _release(curator, BOB)
        with pytest.raises(ServiceError, match="Requested") as refused:
            _release(curator, BOB)  # 0.5 spent: the lowered grant is used up
        assert (refused.value.status, refused.value.code) == (403, "budget_exceeded")
    finally:
        curator.close()
    _verified(catalog)


def test_a_grant_lowered_below_the_spend_leaves_the_seat_exhausted(tmp_path: Path) -> None:
    catalog = _bob_spends(tmp_path, 4)
    _grant(catalog, BOB_GRANT, "cps = { epsilon = 0.2 }")
    curator = _start(catalog)
    try:
        (change,) = curator.grant_report.changed
        assert change.exhausted and "the seat is exhausted" in str(change)
        state = _budget(curator, BOB)
        assert state["remaining"] == dp.Budget(0.0)  # never negative
        assert state["total"] == dp.Budget(0.2)
        with pytest.raises(ServiceError, match="nothing was charged") as refused:
            _release(curator, BOB, epsilon=0.01)
        assert refused.value.status == 403
    finally:
        curator.close()
    report = verify_file(tmp_ledger(catalog))  # 4 × 0.1 fitted the grant in force then
    assert report.ok, [str(p) for p in report.problems]
    raised = tmp_ledger(catalog)
    _grant(catalog, "cps = { epsilon = 0.2 }", "cps = { epsilon = 3.0 }")
    _start(catalog).close()  # and raised again: the spend is still 0.4
    assert verify_file(raised).ok
    conn = sqlite3.connect(raised)
    try:
        versions = conn.execute("SELECT epsilon FROM grants WHERE session='bob/cps' ORDER BY id")
        assert [v for (v,) in versions] == ["1", "1/5", "3"]
    finally:
        conn.close()


def test_a_gaussian_grant_raised_keeps_its_accounting_and_verifies(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    curator = _start(catalog)
    try:
        _release(curator, ALICE, epsilon=1.0)
    finally:
        curator.close()
    _grant(catalog, ALICE_GRANT, "cps = { epsilon = 8.0, delta = 1e-6 }")
    curator = _start(catalog)
    try:
        (change,) = curator.grant_report.changed
        assert (change.accounting, change.direction) == ("gdp", "raised")
        assert _budget(curator, ALICE)["total"] == dp.Budget(8.0, 1e-6)
        _release(curator, ALICE, epsilon=1.0)
    finally:
        curator.close()
    _verified(catalog)


@pytest.mark.parametrize(
    "grant",
    [
        'cps = { epsilon = 5.0, delta = 1e-6, accounting = "zcdp" }',
        "cps = { epsilon = 5.0 }",  # δ = 0 does not fit its recorded Gaussian DP accounting
    ],
)
def test_a_change_of_accounting_kind_is_refused_at_start(tmp_path: Path, grant: str) -> None:
    catalog = write_catalog(tmp_path)
    curator = _start(catalog)
    try:
        _release(curator, ALICE)
    finally:
        curator.close()
    _grant(catalog, ALICE_GRANT, grant)
    with pytest.raises(CatalogError, match=r"\[analysts.alice\].budgets.cps: .*gdp accounting"):
        _start(catalog)
    conn = sqlite3.connect(tmp_ledger(catalog))
    try:  # nothing was changed
        assert conn.execute("SELECT COUNT(*) FROM grants").fetchone()[0] == 0
        row = conn.execute("SELECT epsilon FROM budgets WHERE session='alice/cps'").fetchone()
        assert row == ("5",)
    finally:
        conn.close()


def test_serve_says_what_differs_and_refuses_a_kind_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = _bob_spends(tmp_path, 1)
    _release_alice = _start(catalog)
    try:
        _release(_release_alice, ALICE)
    finally:
        _release_alice.close()
    zcdp = 'cps = { epsilon = 5.0, delta = 1e-6, accounting = "zcdp" }'
    _grant(catalog, ALICE_GRANT, zcdp)
    assert main(["serve", "--catalog", str(catalog)]) == 2
    assert "accounting kind never changes in place" in capsys.readouterr().err
    _grant(catalog, zcdp, ALICE_GRANT)
    _grant(catalog, BOB_GRANT, "cps = { epsilon = 1.5 }")
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)  # start, say, do not serve
    assert main(["serve", "--catalog", str(catalog)]) == 0
    out = capsys.readouterr().out
    assert "dpframe curator: grant changed in place: bob/cps: grant raised from" in out
    assert out.index("grant changed") < out.index("serving")


def test_verify_reports_a_budget_row_edited_without_its_link(tmp_path: Path) -> None:
    catalog = _bob_spends(tmp_path, 2)
    _grant(catalog, BOB_GRANT, "cps = { epsilon = 2.0 }")
    _start(catalog).close()
    ledger = tmp_ledger(catalog)
    assert verify_file(ledger).ok
    conn = sqlite3.connect(ledger)
    conn.execute("UPDATE budgets SET epsilon='9' WHERE session='bob/cps'")  # no link
    conn.commit()
    conn.close()
    problems = [str(p) for p in verify_file(ledger).problems]
    assert any("the budget row differs from its genesis link" in p for p in problems)
    assert main(["ledger", "verify", str(ledger)]) == 1


def test_verify_reports_an_edited_or_deleted_grant_history(tmp_path: Path) -> None:
    catalog = _bob_spends(tmp_path, 6)
    _grant(catalog, BOB_GRANT, "cps = { epsilon = 0.7 }")
    _start(catalog).close()
    ledger = tmp_ledger(catalog)
    conn = sqlite3.connect(ledger)
    # the first version raised after the fact: 6 × 0.1 would then hide behind ε = 0.5 ...
    conn.execute("UPDATE grants SET epsilon='1/2' WHERE session='bob/cps' AND epsilon='1'")
    conn.commit()
    problems = [str(p) for p in verify_file(ledger).problems]
    assert any("the recorded grant differs from its genesis link (edited)" in p for p in problems)
    conn.execute("DELETE FROM grants")
    conn.commit()
    conn.close()
    problems = [str(p) for p in verify_file(ledger).problems]
    assert any("keeps no grant history (deleted)" in p for p in problems)


def test_a_seat_no_longer_granted_is_reported(tmp_path: Path) -> None:
    catalog = _bob_spends(tmp_path, 1)
    _grant(catalog, "budgets = { cps = { epsilon = 1.0 }, secret", "budgets = { secret")
    curator = _start(catalog)
    try:
        assert curator.grant_report.ungranted == ["bob/cps"]
        assert (
            "ledger seat 'bob/cps' is not granted in the catalog" in curator.grant_report.lines()[0]
        )
        with pytest.raises(ServiceError, match="No dataset of this name"):
            curator.budget(curator.authenticate(f"Bearer {BOB}"), "cps")
    finally:
        curator.close()


def test_a_ledger_error_opening_a_seat_is_409_ledger_not_500(tmp_path: Path) -> None:
    catalog = _bob_spends(tmp_path, 1)
    client = TestClient(create_app(Catalog.load(catalog)))
    conn = sqlite3.connect(tmp_ledger(catalog))  # changed behind the started curator
    conn.execute("UPDATE budgets SET epsilon='7' WHERE session='bob/cps'")
    conn.commit()
    conn.close()
    response = client.get("/v1/datasets/cps/budget", headers={"Authorization": f"Bearer {BOB}"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "ledger"  # was: 500 "outside the protocol"
    assert "already holds session 'bob/cps'" in response.json()["error"]["message"]


def test_a_ledger_that_cannot_be_opened_stops_the_curator_at_start(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    tmp_ledger(catalog).write_bytes(b"")  # truncated
    with pytest.raises(CatalogError, match=r"The catalog's ledger cannot be opened: .* is empty"):
        _start(catalog)
