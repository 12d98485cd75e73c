"""``agg`` through the curator: the same shapes, costs, split and intervals as embedded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from tests.curator.support import ALICE, Server, write_catalog

BIG = 1e5

QUERIES: dict[str, Callable[[Any], Any]] = {
    "table": lambda pf: pf.agg({"wage": ["mean", "sum"], "education": "mean"}, epsilon=BIG),
    "column": lambda pf: pf["wage"].agg(["mean", "count"], epsilon=BIG),
    "grouped": lambda pf: pf.groupby("region")["wage"].agg(["mean", "count"], epsilon=BIG),
    "grouped dict": lambda pf: pf.groupby("region").agg(
        {"wage": ["mean"], "education": "sum"}, epsilon=BIG
    ),
}


PARTS = {"table": 3, "column": 2, "grouped": 2, "grouped dict": 2}


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator-agg"), alice_epsilon=1e7)


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=ALICE).open("cps")


@pytest.fixture(scope="module")
def embedded() -> Any:
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


@pytest.mark.parametrize("name", list(QUERIES))
def test_remote_agg_matches_embedded(name: str, remote: Any, embedded: Any) -> None:
    before = len(remote.session.ledger)
    far, local = QUERIES[name](remote), QUERIES[name](embedded)
    assert type(far) is type(local)
    assert list(far.index) == list(local.index)
    if isinstance(far, pd.DataFrame):
        assert list(far.columns) == list(local.columns)
    np.testing.assert_allclose(np.asarray(far, float), np.asarray(local, float), rtol=1e-3, atol=1)
    ledger = remote.session.ledger
    assert len(ledger) == before + 1 and ledger["epsilon"].iloc[-1] == BIG
    assert len(json.loads(ledger["parts"].iloc[-1])) == PARTS[name]  # one per cell
    intervals = dp.ci(far)  # the intervals cross the wire with the result
    assert intervals.shape[0] == len(far.index)


def test_remote_bad_agg_is_refused_before_the_charge(remote: Any) -> None:
    spent = remote.session.spent
    with pytest.raises(dp.DPError, match="unknown aggregate 'max'"):
        remote.agg({"wage": "max"}, epsilon=1)
    with pytest.raises(dp.DPError, match="unknown aggregate 'max'"):
        remote.groupby("region")["wage"].agg(["median", "max"], epsilon=1)
    assert remote.session.spent == spent
