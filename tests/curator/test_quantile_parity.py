"""Grouped quantiles and quantile candidates through the curator: the same shapes, values
(at a large ε), costs and refusals as embedded; the nodes travel as JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.quantiles.quantiles import QUANTILE_BINS
from tests.curator.support import ALICE, Server, write_catalog

BIG = 1e5
WIDTH = 5000 / QUANTILE_BINS

QUERIES: dict[str, Callable[[Any], Any]] = {
    "grouped median": lambda pf: pf.groupby("region")["wage"].median(epsilon=BIG),
    "grouped quantiles": lambda pf: pf.groupby(["region", "smsa"])["wage"].quantile(
        [0.25, 0.75], epsilon=BIG
    ),
    "grouped candidates": lambda pf: pf.groupby("region")["education"].median(
        epsilon=BIG, candidates=range(21)
    ),
    "candidates": lambda pf: pf["education"].quantile(
        [0.25, 0.5, 0.9], epsilon=BIG, candidates=range(21)
    ),
    "grouped agg median": lambda pf: pf.groupby("region")["wage"].agg(
        ["mean", "median"], epsilon=BIG
    ),
}


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator-quantiles"), alice_epsilon=1e7)


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
def test_remote_quantiles_match_embedded(name: str, remote: Any, embedded: Any) -> None:
    before = len(remote.session.ledger)
    far, local = QUERIES[name](remote), QUERIES[name](embedded)
    assert type(far) is type(local) and isinstance(far, (pd.Series, pd.DataFrame))
    assert list(far.index) == list(local.index)
    assert list(far.index.names) == list(local.index.names)
    np.testing.assert_allclose(np.asarray(far, float), np.asarray(local, float), atol=4 * WIDTH)
    ledger = remote.session.ledger
    assert len(ledger) == before + 1 and ledger["epsilon"].iloc[-1] == BIG
    assert ledger["query"].iloc[-1] == embedded.session.ledger["query"].iloc[-1]


def test_remote_integer_candidates_answer_with_pandas_integers(remote: Any) -> None:
    got = remote.groupby("region")["education"].median(epsilon=BIG, candidates=range(21))
    assert got.to_dict() == load_cps1988().groupby("region")["education"].median().to_dict()


def test_remote_explain_states_the_rank_error(remote: Any) -> None:
    text = remote.session.explain(
        lambda: remote.groupby("region")["wage"].median(epsilon=1)
    ).plain()
    assert "in each of 4 groups" in text and "rank in its group" in text


def test_remote_bad_quantiles_are_refused_before_the_charge(remote: Any) -> None:
    spent = remote.session.spent
    with pytest.raises(dp.DPError, match="sorted in increasing order"):
        remote.groupby("region")["wage"].median(epsilon=1, candidates=[3, 2])
    with pytest.raises(dp.DPError, match=r"within the column's bounds"):
        remote["wage"].median(epsilon=1, candidates=[-5, 2])
    with pytest.raises(dp.DPError, match="Select a column first"):
        remote.groupby("region").median(epsilon=1)
    assert remote.session.spent == spent
