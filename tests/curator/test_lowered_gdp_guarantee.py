"""A Gaussian DP grant lowered below its spend: every view states the true guarantee (issue 31).

Lowering a grant changes no release already made, so the (ε, δ) guarantee of
what the analyst was shown cannot change either.  Before, the Gaussian DP
accountant reported at most the (new, lower) grant's ε, so ``session.spent``
and the budget endpoint understated the guarantee, while ``dpframe ledger
summary`` computed it uncapped: they disagreed.  Now all three agree, with
the guarantee the same releases had before the grant was lowered.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

import dpframe as dp
from dpframe.accounting.accountants import Charge
from dpframe.accounting.gdp import GaussianDPAccountant
from dpframe.cli import main
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, release_body, write_catalog

ALICE_GRANT = "cps = { epsilon = 5.0, delta = 1e-6 }"
LOWERED = "cps = { epsilon = 1.0, delta = 1e-6 }"


def _spent(curator: Curator) -> dp.Budget:
    state = curator.budget(curator.authenticate(f"Bearer {ALICE}"), "cps")
    spent: dp.Budget = decode_response(state["spent"])
    return spent


def _summary_guarantee(catalog: Path, capsys: pytest.CaptureFixture[str]) -> float:
    assert main(["ledger", "summary", str(catalog)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("alice/cps:"))
    found = re.search(r"guarantee ε=([0-9.e+-]+)", line)
    assert found is not None, line
    return float(found.group(1))


def test_a_lowered_gaussian_grant_reports_the_true_guarantee_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = write_catalog(tmp_path)
    curator = Curator(Catalog.load(catalog))
    try:
        who = curator.authenticate(f"Bearer {ALICE}")
        for _ in range(3):  # 3 of the grant's 5: within it
            body = release_body(lambda pf: pf.count(epsilon=1.0))
            curator.answer(who, "cps", {**body, "fresh": True})
        before = _spent(curator)
        seat_before = curator._seats[("alice", "cps")].session.spent
    finally:
        curator.close()
    assert 1 < before.epsilon <= 5 and seat_before == before
    text = catalog.read_text()
    assert ALICE_GRANT in text
    catalog.write_text(text.replace(ALICE_GRANT, LOWERED))
    curator = Curator(Catalog.load(catalog))
    try:
        (change,) = curator.grant_report.changed
        assert change.exhausted
        after = _spent(curator)
        curator.budget(curator.authenticate(f"Bearer {ALICE}"), "cps")  # opens the seat
        seat_after = curator._seats[("alice", "cps")].session.spent
    finally:
        curator.close()
    assert after == before == seat_after  # the same releases: the same guarantee
    assert after.epsilon > 1  # above the lowered grant's ε (was shown as 1 before the fix)
    assert _summary_guarantee(catalog, capsys) == pytest.approx(float(after.epsilon), rel=1e-3)


def test_within_the_grant_the_reported_epsilon_never_exceeds_it() -> None:
    accountant = GaussianDPAccountant(dp.Budget(1, Fraction(1, 10**6)))
    whole = Charge(epsilon=Fraction(1), rho=accountant.rho_total)
    assert accountant.spent(whole).epsilon == 1  # rounding up never shows 1.0000000001
    beyond = Charge(epsilon=Fraction(2), rho=2 * accountant.rho_total)
    doubled = GaussianDPAccountant(dp.Budget(10, Fraction(1, 10**6)))
    assert accountant.spent(beyond).epsilon > 1
    assert accountant.spent(beyond) == doubled.spent(beyond)  # the guarantee, whatever the grant
