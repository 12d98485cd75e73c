"""The chain links written without reading rows back equal those over the rows as stored.

A charge's link and a completion's link are computed from the values bound to
the INSERT and UPDATE (issue 35: fewer statements per release); ``dpframe
ledger verify`` recomputes every digest from the stored rows, so the two must
agree for every kind of row: with and without a request key, parts, privacy
unit, a looked-up currency, a kept answer, a failed release.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpframe.accounting.accountants import Charge
from dpframe.accounting.ledger import Ledger, PendingCharge
from dpframe.accounting.ledger_chain import CHARGE_FIELDS, charge_digest, state_digest
from dpframe.accounting.ledger_rows import charge_fields, row_statement
from dpframe.accounting.ledger_verify import verify_file
from dpframe.plan.privacy import Budget


def _ok(spent: Charge) -> None:
    del spent


def _stored_digests(path: Path) -> list[tuple[str, int, str, str]]:
    """(kind, release id, digest in the chain, digest recomputed from the stored row)."""
    conn = sqlite3.connect(path)
    try:
        out = []
        links = conn.execute(
            "SELECT kind, release_id, digest FROM chain WHERE kind != 'genesis' ORDER BY seq"
        ).fetchall()
        for kind, release_id, digest in links:
            if kind == "charge":
                values = conn.execute(
                    f"SELECT {', '.join(CHARGE_FIELDS)} FROM releases WHERE id=?", (release_id,)
                ).fetchone()
                again = charge_digest(dict(zip(CHARGE_FIELDS, values, strict=True)))
            else:
                status, value, noise, body = conn.execute(
                    "SELECT r.status, r.value, r.noise, a.body FROM releases AS r LEFT JOIN"
                    " answers AS a ON a.release_id = r.id WHERE r.id=?",
                    (release_id,),
                ).fetchone()
                again = state_digest(release_id, str(status), value, noise, body)
            out.append((kind, int(release_id), str(digest), again))
        return out
    finally:
        conn.close()


def test_every_kind_of_row_links_as_it_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(path)
    ledger.register("s", "pure", Budget(Fraction(100)))
    one = Charge(Fraction(1, 3))
    parts = [("a", Charge(Fraction(1, 6))), ("b", Charge(Fraction(1, 6)))]
    first = ledger.charge("s", "d" * 64, one, _ok, "count()", "discrete Laplace", request="k1")
    second = ledger.charge(
        "s", "d" * 64, one, _ok, "describe() … é\x00x", "m", parts=parts, privacy_unit="u: 3"
    )
    third = ledger.charge("s", "d" * 64, one, _ok, "q", "m", currency="pure", request="k3")
    pending = [PendingCharge(one, "x", "m"), PendingCharge(one, "y", "m", request="k")]
    batch = ledger.charge_many("s", "d" * 64, pending, _ok)
    ledger.complete(first, "12.5", answer=b'{"result": 1}', noise="[]")
    ledger.complete(second, "", status="failed")
    ledger.complete(third, "3", answer=b"{}")
    ledger.complete(batch[0], "x", answer=b"\x00\xff")
    ledger.complete(batch[1], "y")
    ledger.close()
    found = _stored_digests(path)
    assert len(found) == 10
    assert all(chain == again for _, _, chain, again in found), found
    assert verify_file(path).ok


def test_a_session_charged_through_another_ledger_object_is_linked_as_stored(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite"
    first = Ledger(path)
    first.register("s", "pure", Budget(Fraction(10)))
    release_id = first.charge("s", "d", Charge(Fraction(1)), _ok, "count()", "m", request="k")
    second = Ledger(path)  # knows nothing of the row: reads it back
    second.complete(release_id, "1", answer=b"{}")
    # not registered through this object: the INSERT reads the currency from budgets
    looked_up = second.charge("s", "d", Charge(Fraction(1)), _ok, "sum()", "m", request="k2")
    second.complete(looked_up, "2", answer=b"{}")
    first.close()
    second.close()
    assert all(chain == again for _, _, chain, again in _stored_digests(path))
    assert verify_file(path).ok


@pytest.mark.parametrize("currency", [None, "pure"])
def test_charge_fields_are_the_bound_values_or_none_when_sql_reads_one(
    currency: str | None,
) -> None:
    row = row_statement(
        ("s", "d", 1.5), Charge(Fraction(1)), "q", "m", None, None, currency, None, "k"
    )
    fields = charge_fields(row)
    if currency is None:  # looked up from the budgets row by the INSERT itself
        assert fields is None
    else:
        assert fields == {
            "session": "s",
            "dataset": "d",
            "time": 1.5,
            "query": "q",
            "mechanism": "m",
            "epsilon": "1",
            "delta": "0",
            "rho": "0",
            "privacy_unit": None,
            "parts": None,
            "request": "k",
            "currency": "pure",
        }
