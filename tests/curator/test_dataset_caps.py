"""Many analysts, one dataset: the catalog's dataset cap and per-release cap (issue 31, part 2).

Both are checked in the SQLite transaction that charges the analyst's seat,
after the seat's own filter: a refusal is 409 ``dataset_cap`` or
``release_cap`` with Requested / Remaining / Difference, records nothing and
reads no data.  Under Gaussian DP a pure ε release enters the cap as μ(ε).
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpframe.accounting.accountants import Charge
from dpframe.accounting.gdp import rho_total_gdp
from dpframe.accounting.ledger import PendingCharge
from dpframe.accounting.ledger_caps import cap_cost
from dpframe.accounting.ledger_verify import verify_file
from dpframe.cli import main
from dpframe.curator.caps import Cap, CapGuard, SeatCaps
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.codes import ServiceError
from dpframe.curator.seats import SeatLedger
from dpframe.curator.service import Curator
from dpframe.mechanisms.calibration.gdp_curves import mu_of_epsilon
from dpframe.plan.privacy import Budget
from tests.curator.support import ALICE, BOB, release_body, write_catalog

ALICE_GRANTS = "budgets = { cps = { epsilon = 5.0, delta = 1e-6 }, sentinel"


def _catalog(tmp_path: Path, caps: str, *, alice: bool = True) -> Path:
    path = write_catalog(tmp_path)
    text = path.read_text().replace("[datasets.sentinel]", f"{caps}\n\n[datasets.sentinel]")
    if not alice:  # bob alone on cps (pure)
        text = text.replace(ALICE_GRANTS, "budgets = { sentinel")
    path.write_text(text)
    return path


def _release(curator: Curator, token: str, epsilon: float) -> dict[str, object]:
    body = release_body(lambda pf: pf.count(epsilon=epsilon))
    return curator.answer(curator.authenticate(f"Bearer {token}"), "cps", {**body, "fresh": True})


def _rows(catalog: Path) -> int:
    conn = sqlite3.connect(catalog.parent / "ledger.sqlite")
    try:
        return int(conn.execute("SELECT COUNT(*) FROM releases").fetchone()[0])
    finally:
        conn.close()


def test_a_pure_cap_admits_exactly_its_total_over_all_analysts(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, "cap = { epsilon = 0.35 }", alice=False)
    curator = Curator(Catalog.load(catalog))
    try:
        for _ in range(3):
            _release(curator, BOB, 0.1)
        with pytest.raises(ServiceError, match="over the data owner's cap on all") as refused:
            _release(curator, BOB, 0.1)
        assert (refused.value.status, refused.value.code) == (409, "dataset_cap")
        message = refused.value.message
        assert "Requested:  ε=0.1\n  Remaining:  ε=0.05\n  Difference: ε=0.05" in message
        assert "nothing was charged and no data was read" in message
        assert _rows(catalog) == 3  # the refusal recorded nothing
        _release(curator, BOB, 0.05)  # what is left is still admitted, exactly
        with pytest.raises(ServiceError, match="Remaining:  ε=0\n"):
            _release(curator, BOB, 0.01)
    finally:
        curator.close()
    assert verify_file(catalog.parent / "ledger.sqlite").ok


def test_a_gaussian_cap_takes_pure_releases_as_mu_of_epsilon(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, "cap = { epsilon = 1.0, delta = 1e-6 }")
    rho_total = rho_total_gdp(Fraction(1), Fraction(9, 10**7))  # δ − δ/10 reserve
    curator = Curator(Catalog.load(catalog))
    admitted: list[Charge] = []
    try:
        refusal: ServiceError | None = None
        for turn in range(200):
            token, kind = (BOB, "pure") if turn % 2 else (ALICE, "gdp")
            try:
                _release(curator, token, 0.05 if kind == "pure" else 0.02)
            except ServiceError as exc:
                refusal = exc
                break
        assert refusal is not None, "the cap never refused"
        assert refusal.code == "dataset_cap", refusal.message
        assert "μ²=" in refusal.message and "Difference: μ²=" in refusal.message
    finally:
        curator.close()
    conn = sqlite3.connect(catalog.parent / "ledger.sqlite")
    try:
        for session, eps, dlt, rho in conn.execute(
            "SELECT session, epsilon, delta, rho FROM releases ORDER BY id"
        ):
            kind = "pure" if session.startswith("bob") else "gdp"
            charge = Charge(Fraction(eps), Fraction(dlt), Fraction(rho))
            admitted.append(cap_cost(charge, kind, "gdp"))
    finally:
        conn.close()
    used = sum((c.rho for c in admitted), Fraction(0))
    assert used <= rho_total  # exactly, in rational arithmetic
    largest = max(c.rho for c in admitted)
    assert used > rho_total - largest  # the last refusal came when little was left
    bob = Charge(epsilon=Fraction(1, 5))
    mu = mu_of_epsilon(Fraction(1, 5))
    assert cap_cost(bob, "pure", "gdp") == Charge(rho=mu * mu / 2)


def test_a_release_cap_refuses_one_large_release(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, "release_cap = { epsilon = 0.2 }", alice=False)
    curator = Curator(Catalog.load(catalog))
    try:
        with pytest.raises(ServiceError, match="cap on any one release") as refused:
            _release(curator, BOB, 0.25)
        assert (refused.value.status, refused.value.code) == (409, "release_cap")
        assert "Requested:  ε=0.25\n  Remaining:  ε=0.2\n  Difference: ε=0.05" in (
            refused.value.message
        )
        assert _rows(catalog) == 0
        _release(curator, BOB, 0.2)
        assert _rows(catalog) == 1
    finally:
        curator.close()


@pytest.mark.parametrize(
    ("caps", "alice", "message"),
    [
        ("cap = { epsilon = 1.0 }", True, r"analyst 'alice' uses gdp accounting.*'pure'"),
        ("cap = { epsilom = 1.0 }", False, r"\[datasets.cps\].cap has unknown keys: epsilom"),
        ("cap = 3", False, r"\[datasets.cps\].cap must be a table"),
        ("cap = { epsilon = 0 }", False, r"\[datasets.cps\].cap needs epsilon > 0"),
        (
            "cap = { epsilon = 1.0, delta = 1e-6 }\n"
            'release_cap = { epsilon = 0.1, accounting = "pure" }',
            False,
            r"cap \(gdp\) and release_cap \(pure\) must use one accounting",
        ),
    ],
)
def test_a_cap_that_does_not_fit_is_refused_when_the_catalog_loads(
    tmp_path: Path, caps: str, alice: bool, message: str
) -> None:
    with pytest.raises(CatalogError, match=message):
        Catalog.load(_catalog(tmp_path, caps, alice=alice))


def test_the_owners_summary_shows_cap_use_grants_and_guarantees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = _catalog(tmp_path, "cap = { epsilon = 0.5 }", alice=False)
    curator = Curator(Catalog.load(catalog))
    try:
        _release(curator, BOB, 0.1)
        _release(curator, BOB, 0.15)
    finally:
        curator.close()
    assert main(["ledger", "summary", str(catalog)]) == 0
    out = capsys.readouterr().out
    assert "dataset cps\n  cap: ε=0.5 (pure); used by all analysts: 50.0% of the cap" in out
    assert (
        "bob/cps: grant ε=1 (pure); 2 release(s), spent 25.0% of the grant; guarantee ε=0.25" in out
    )
    assert "alice/sentinel: granted, not used yet" in out
    assert main(["ledger", "summary", str(catalog.parent / "ledger.sqlite")]) == 0
    assert "cap: not known from the ledger alone" in capsys.readouterr().out
    assert main(["ledger", "summary", str(tmp_path / "missing.sqlite")]) == 2
    assert "No ledger file" in capsys.readouterr().err


def test_a_batch_is_one_request_for_the_caps_and_all_or_none() -> None:
    ledger = SeatLedger(":memory:")
    ledger.register("bob/cps", "pure", Budget(1))
    guard = CapGuard("cps", "pure", Cap(Budget(Fraction(3, 10)), "pure"), None)
    ledger.caps = SeatCaps("cps", {"cps": guard})
    tenth = Charge(epsilon=Fraction(1, 10))
    items = [PendingCharge(tenth, "count()", "discrete Laplace") for _ in range(2)]
    assert len(ledger.charge_many("bob/cps", "cps", items, lambda spent: None)) == 2
    with pytest.raises(ServiceError, match=r"Requested:  ε=0\.2\n  Remaining:  ε=0\.1\n"):
        ledger.charge_many("bob/cps", "cps", items, lambda spent: None)
    assert ledger.count("bob/cps") == 2  # neither item was recorded
    guard = CapGuard("cps", "pure", None, Cap(Budget(Fraction(15, 100)), "pure"))
    ledger.caps = SeatCaps("cps", {"cps": guard})
    with pytest.raises(ServiceError, match="cap on any one release") as refused:
        ledger.charge_many("bob/cps", "cps", items, lambda spent: None)  # 0.2 in one request
    assert refused.value.code == "release_cap"
    ledger.close()
