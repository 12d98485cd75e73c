"""A new ``version`` of a dataset keeps its budgets (the docs and the code agree; issue 31).

The docs once said a new version is a new dataset with a new budget; the
code keeps the budget (the seat is named by analyst and dataset *name*),
the conservative choice, now documented in docs/curator.md and
docs/owners.md.  A new budget needs a new dataset name.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import dpframe as dp
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.remote.wire import decode_response
from tests.curator.support import BOB, release_body, write_catalog


def _count(catalog: Path) -> dp.Budget:
    curator = Curator(Catalog.load(catalog))
    try:
        who = curator.authenticate(f"Bearer {BOB}")
        body = release_body(lambda pf: pf.count(epsilon=0.25))
        curator.answer(who, "cps", {**body, "fresh": True})
        spent: dp.Budget = decode_response(curator.budget(who, "cps")["spent"])
        return spent
    finally:
        curator.close()


def test_a_new_version_keeps_the_budget_and_a_new_name_starts_one(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    text = catalog.read_text()
    cps = "[datasets.cps]\n"
    catalog.write_text(text.replace(cps, cps + 'version = "1988-03"\n'))
    assert _count(catalog) == dp.Budget(Fraction(1, 4))
    catalog.write_text(text.replace(cps, cps + 'version = "1988-04"\n'))
    assert _count(catalog) == dp.Budget(Fraction(1, 2))  # the same budget, spent on
    conn = sqlite3.connect(tmp_path / "ledger.sqlite")
    try:
        rows = conn.execute("SELECT session, dataset FROM releases ORDER BY id").fetchall()
    finally:
        conn.close()
    assert rows == [("bob/cps", "cps@1988-03"), ("bob/cps", "cps@1988-04")]
    renamed = text.replace(cps, "[datasets.cps2]\n").replace("{ cps = ", "{ cps2 = ")
    catalog.write_text(renamed)
    curator = Curator(Catalog.load(catalog))
    try:
        who = curator.authenticate(f"Bearer {BOB}")
        spent = decode_response(curator.budget(who, "cps2")["spent"])
        assert spent == dp.Budget(0)  # a new name: a new budget
        assert curator.grant_report.ungranted == ["bob/cps"]  # the old seat is reported
    finally:
        curator.close()
