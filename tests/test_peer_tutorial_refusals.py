"""Refusals met while doing the peers' tutorials as-is (benchmarks/peer_tutorials.py)."""

from __future__ import annotations

import pytest

import dpframe as dp
from dpframe.api.teaching import RefusedAttributeError, UnknownAttributeError
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988


@pytest.fixture
def pf() -> dp.PrivateFrame:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


def test_explode_names_the_privacy_unit_route(pf: dp.PrivateFrame) -> None:
    """Tumult's flat_map / pandas' explode: refused, saying how to load such a table."""
    with pytest.raises(UnknownAttributeError, match=r"explode.*PrivacyUnit\('id', max_rows=k\)"):
        pf.explode("region")
    assert not hasattr(pf, "explode")


@pytest.mark.parametrize("name", ["groups", "indices"])
def test_groupby_row_membership_is_refused(pf: dp.PrivateFrame, name: str) -> None:
    """``groupby(...).groups`` would list rows: refused, absent to hasattr, and charges nothing."""
    grouped = pf.groupby("region")
    with pytest.raises(RefusedAttributeError, match=r"private: pf\.groupby\(key\)\.size"):
        getattr(grouped, name)
    assert not hasattr(grouped, name)


def test_groupby_nunique_and_keys_say_what_exists(pf: dp.PrivateFrame) -> None:
    """A group-by's ``nunique`` (of declared keys) works; ``keys`` (KeySet.dataframe) teaches."""
    grouped = pf.groupby("region")
    with pytest.raises(dp.SchemaError, match=r"Select a column first.*nunique"):
        grouped.nunique(epsilon=1)
    with pytest.raises(UnknownAttributeError, match=r"keys are public.*pf\.categories"):
        grouped.keys  # noqa: B018 - the attribute access is the test
    assert grouped["smsa"].nunique(epsilon=1).to_dict() == dict.fromkeys(
        ["northeast", "midwest", "south", "west"], 2
    )  # issue 29: declared keys per group (each region has both smsa values, thousands of rows)
    assert pf["region"].nunique is not None  # a column still has its own nunique
