"""``cut`` and ``qcut`` through the curator: the same keys, costs and refusals as embedded.

The curator runs in its own process with a large budget for alice, so the
remote answers can be compared with plain pandas (``pd.cut(...).value_counts()``)
as closely as the embedded ones; the bins and their interval keys travel in
the request (``{"$interval": [...]}``) and back in the response.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from tests.curator.support import ALICE, Server, write_catalog

EDGES = [0, 300, 600, 1000, 2000, 20000]
BIG = 1e4

Query = Callable[[Any], pd.Series]

QUERIES: dict[str, Query] = {
    "intervals": lambda pf: pf["wage"].cut(EDGES).value_counts(epsilon=BIG, sort=False),
    "left-closed": lambda pf: (
        pf["wage"]
        .cut(EDGES, right=False, include_lowest=True)
        .value_counts(epsilon=BIG, sort=False)
    ),
    "labels": lambda pf: (
        pf["wage"]
        .cut(EDGES, labels=["a", "b", "c", "d", "e"])
        .value_counts(epsilon=BIG, sort=False)
    ),
    "codes": lambda pf: pf["wage"].cut(EDGES, labels=False).value_counts(epsilon=BIG, sort=False),
    "bounds": lambda pf: pf["wage"].cut(4).value_counts(epsilon=BIG, sort=False),
    "groupby": lambda pf: (
        pf.assign(band=pf["education"].cut([0, 8, 12, 16, 20]))
        .groupby(["band", "region"])
        .size(epsilon=BIG)
    ),
}

PANDAS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "intervals": lambda df: pd.cut(df["wage"], EDGES).value_counts(sort=False),
    "left-closed": lambda df: pd.cut(
        df["wage"], EDGES, right=False, include_lowest=True
    ).value_counts(sort=False),
    "labels": lambda df: pd.cut(df["wage"], EDGES, labels=["a", "b", "c", "d", "e"]).value_counts(
        sort=False
    ),
    "codes": lambda df: pd.Series(pd.cut(df["wage"], EDGES, labels=False)).value_counts(),
    "bounds": lambda df: pd.cut(df["wage"], [-5.0, 1250.0, 2500.0, 3750.0, 5000.0]).value_counts(
        sort=False
    ),
    "groupby": lambda df: df.groupby(
        [pd.cut(df["education"], [0, 8, 12, 16, 20]), "region"], observed=False
    ).size(),
}


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator-cut"), alice_epsilon=1e6)


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=ALICE).open("cps")


@pytest.fixture(scope="module")
def embedded() -> Any:
    session = dp.Session(epsilon=1e6, delta=1e-6, ledger=":memory:")
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


@pytest.mark.parametrize("name", list(QUERIES))
def test_remote_cuts_match_embedded_ones_and_pandas(name: str, remote: Any, embedded: Any) -> None:
    before = len(remote.session.ledger)
    far, local = QUERIES[name](remote), QUERIES[name](embedded)
    assert far.index.equals(local.index) and far.index.name == local.index.name
    assert far.name == local.name
    assert far.attrs["dpframe"].cost == local.attrs["dpframe"].cost == dp.Budget(BIG)
    ledger = remote.session.ledger  # one row per release, at the stated ε
    assert len(ledger) == before + 1 and ledger["epsilon"].iloc[-1] == BIG
    truth = PANDAS[name](load_cps1988()).to_dict()
    for key, value in far.items():
        assert value == pytest.approx(truth[key], abs=2)


def test_remote_qcut_charges_the_quantiles_once(remote: Any, embedded: Any) -> None:
    before = len(remote.session.ledger)
    far, far_edges = remote["wage"].qcut(4, epsilon=100, retbins=True)
    local, local_edges = embedded["wage"].qcut(4, epsilon=100, retbins=True)
    ledger = remote.session.ledger
    assert len(ledger) == before + 1
    assert ledger["query"].iloc[-1] == "quantile(wage, q=[0.25, 0.5, 0.75])"
    assert ledger["epsilon"].iloc[-1] == 100
    assert len(far.categories) == len(local.categories) == 4
    assert abs(far_edges - local_edges).max() < 20
    counts = far.value_counts(epsilon=BIG, sort=False)
    truth = pd.cut(load_cps1988()["wage"], far_edges, include_lowest=True).value_counts()
    assert list(counts.index) == list(far.categories)
    for key, value in counts.items():
        assert value == pytest.approx(truth[key], abs=2)


def test_remote_explain_of_qcut_is_free(remote: Any) -> None:
    spent = remote.session.spent
    explained = remote.session.explain(lambda: remote["wage"].qcut(3, epsilon=0.5))
    assert str(explained).startswith("quantile(wage, q=[0.333333, 0.666667]): cost ε=0.5")
    assert remote.session.spent == spent


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda pf: pf["wage"].cut([0, 10, 5]), "monotonically"),
        (lambda pf: pf["region"].cut([0, 1]), "'region' is categorical"),
        (lambda pf: pf["wage"].cut([0, 1, 2], labels=["a"]), "2 bins, 1 labels"),
        (lambda pf: pf["wage"].qcut(4, labels=["a"], epsilon=1), "4 bins, 1 labels"),
    ],
)
def test_remote_refusals_match_and_charge_nothing(
    call: Callable[[Any], object], match: str, remote: Any, embedded: Any
) -> None:
    spent = remote.session.spent
    with pytest.raises(dp.SchemaError, match=match) as far:
        call(remote)
    with pytest.raises(dp.SchemaError, match=match) as local:
        call(embedded)
    assert str(far.value) == str(local.value)
    assert remote.session.spent == spent
