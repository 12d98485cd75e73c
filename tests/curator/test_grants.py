"""A catalog grant's keys: a Gaussian DP grant may set its δ reserve; a typo is refused.

Before: a grant's unknown keys were ignored (``delta_reserve`` too, so every
remote Gaussian DP session kept δ/10, and a misspelt ``epsilom`` surfaced as
"needs epsilon > 0"), and a bad accounting or reserve failed only when the
analyst's first request built the session.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.service import Curator
from tests.curator.support import ALICE, write_catalog

ALICE_GRANT = "cps = { epsilon = 5.0, delta = 1e-6 }"


def _catalog(tmp_path: Path, grant: str) -> Path:
    path = write_catalog(tmp_path)
    text = path.read_text()
    assert ALICE_GRANT in text
    path.write_text(text.replace(ALICE_GRANT, grant))
    return path


def test_a_grant_sets_the_delta_reserve_of_the_remote_session(tmp_path: Path) -> None:
    grant = 'cps = { epsilon = 5.0, delta = 1e-6, delta_reserve = "1e-7" }'
    curator = Curator(Catalog.load(_catalog(tmp_path, grant)))
    try:
        analyst = curator.authenticate(f"Bearer {ALICE}")
        assert curator.catalog.analysts["alice"].budgets["cps"].delta_reserve == Fraction(1, 10**7)
        curator.describe(analyst, "cps")
        session = curator._seats[("alice", "cps")].session
        assert (session.accounting, session.delta_reserve) == ("gdp", Fraction(1, 10**7))
    finally:
        curator.close()


def test_without_a_reserve_the_default_is_a_tenth_of_delta(tmp_path: Path) -> None:
    curator = Curator(Catalog.load(write_catalog(tmp_path)))
    try:
        curator.describe(curator.authenticate(f"Bearer {ALICE}"), "cps")
        assert curator._seats[("alice", "cps")].session.delta_reserve == Fraction(1, 10**7)
        assert curator.catalog.analysts["alice"].budgets["cps"].delta_reserve is None
    finally:
        curator.close()


@pytest.mark.parametrize(
    ("grant", "message"),
    [
        ("cps = { epsilom = 5.0 }", r"budgets.cps has unknown keys: epsilom \(known: accounting"),
        (
            'cps = { epsilon = 5.0, delta = 1e-6, delta_reserve = "1e-5" }',
            r"\[analysts.alice\].budgets.cps: .*reserve",
        ),
        ('cps = { epsilon = 5.0, accounting = "renyi" }', r"\[analysts.alice\].budgets.cps: "),
        ("cps = { epsilon = 0 }", r"budgets.cps needs epsilon > 0"),
    ],
)
def test_a_bad_grant_is_refused_when_the_catalog_loads(
    tmp_path: Path, grant: str, message: str
) -> None:
    with pytest.raises(CatalogError, match=message):
        Catalog.load(_catalog(tmp_path, grant))
