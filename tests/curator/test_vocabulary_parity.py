"""numpy functions, fillna/where/astype, lookup merges, corr/cov and isna through the curator.

The new expressions (``ufunc``, ``where``, and the ``recode`` of a merge)
travel in the request; the answers, costs and refusals match the embedded
ones.  The curator runs in its own process with a large budget for alice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from tests.curator.support import ALICE, Server, write_catalog

BIG = 1e6
ALLOWED = pd.DataFrame({"region": ["south", "west"], "ethnicity": ["afam", "cauc"]})
REGIONS = pd.DataFrame({"region": ["south", "west"], "pop_m": [126.3, 78.6]})

QUERIES: dict[str, Callable[[Any], Any]] = {
    "log1p": lambda pf: np.log1p(pf["wage"]).mean(epsilon=BIG),
    "sqrt by region": lambda pf: (
        pf.assign(r=np.sqrt(pf["wage"])).groupby("region")["r"].mean(epsilon=BIG)
    ),
    "where": lambda pf: pf["wage"].where(pf["education"] >= 12, 0).sum(epsilon=BIG),
    "fillna": lambda pf: pf["wage"].mask(pf["region"] == "south").fillna(1.5).sum(epsilon=BIG),
    "astype": lambda pf: pf["experience"].astype(bool).sum(epsilon=BIG),
    "merge": lambda pf: pf.merge(REGIONS, on="region")["pop_m"].mean(epsilon=BIG),
    "merge keys": lambda pf: pf.merge(REGIONS.assign(big=["yes", "no"]), on="region", how="inner")[
        "big"
    ].value_counts(epsilon=BIG, sort=False),
    "corr": lambda pf: pf[["wage", "education"]].corr(epsilon=BIG),
    "isna": lambda pf: pf.isna().sum(epsilon=BIG),
    "keys": lambda pf: pf.groupby(["region", "ethnicity"], keys=ALLOWED)["wage"].mean(epsilon=BIG),
}
PARTS = {"corr": 6, "isna": 7}


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator-vocab"), alice_epsilon=1e8)


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=ALICE).open("cps")


@pytest.fixture(scope="module")
def embedded() -> Any:
    session = dp.Session(epsilon=1e8, delta=1e-6, ledger=":memory:")
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


@pytest.mark.filterwarnings("ignore:about .* rows have a region:UserWarning")
@pytest.mark.parametrize("name", list(QUERIES))
def test_remote_answers_match_embedded(name: str, remote: Any, embedded: Any) -> None:
    before = len(remote.session.ledger)
    far, local = QUERIES[name](remote), QUERIES[name](embedded)
    assert type(far) is type(local)
    if isinstance(far, (pd.Series, pd.DataFrame)):
        assert list(far.index) == list(local.index)
    np.testing.assert_allclose(np.asarray(far, float), np.asarray(local, float), rtol=1e-3, atol=1)
    ledger = remote.session.ledger
    assert len(ledger) == before + 1 and ledger["epsilon"].iloc[-1] == BIG
    if name in PARTS:
        assert ledger["parts"].iloc[-1].count('"name"') == PARTS[name]


@pytest.mark.filterwarnings("ignore:about .* rows have a region:UserWarning")
def test_remote_discovers_combinations_as_embedded(remote: Any, embedded: Any) -> None:
    far = remote.discover_keys(["region", "ethnicity"], epsilon=1.0, delta=1e-7)
    local = embedded.discover_keys(["region", "ethnicity"], epsilon=1.0, delta=1e-7)
    assert far.equals(local) and len(far) == 8  # every combination has hundreds of rows
    sizes = remote.groupby(["region", "ethnicity"], keys=far).size(epsilon=BIG)
    assert sizes.index.names == ["region", "ethnicity"] and len(sizes) == 8


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda pf: np.tan(pf["wage"]), r"np\.tan\(\).*cannot be given public bounds"),
        (
            lambda pf: pf.merge(pd.concat([REGIONS, REGIONS]), on="region", validate="m:1"),
            "repeats",
        ),
        (lambda pf: pf.merge(pf, on="region"), "has no ID space .* cannot be joined privately"),
        (lambda pf: pf["wage"].fillna("x"), "mix numbers and text"),
        (lambda pf: pf[["wage", "region"]].corr(epsilon=1), "at least two numeric"),
    ],
)
def test_remote_refusals_match_and_charge_nothing(
    call: Callable[[Any], object], match: str, remote: Any, embedded: Any
) -> None:
    spent = remote.session.spent
    with pytest.raises(dp.DPError, match=match) as far:
        call(remote)
    with pytest.raises(dp.DPError, match=match) as local:
        call(embedded)
    assert str(far.value) == str(local.value)
    assert remote.session.spent == spent


def test_a_public_table_whose_key_repeats_is_refused_remotely_and_charges_nothing(
    remote: Any,
) -> None:
    """Embedded, such a merge multiplies the stability (tests/test_public_repeats.py); a
    curator does not take the table in this version: refused in the client, nothing sent."""
    spent = remote.session.spent
    with pytest.raises(dp.DPError, match="A curator does not take such a table"):
        remote.merge(pd.concat([REGIONS, REGIONS]), on="region")
    assert remote.session.spent == spent
