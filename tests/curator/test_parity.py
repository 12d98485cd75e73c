"""The same queries in embedded and curator mode give the same kinds of answers and errors.

The curator runs in its own process; the analyst's frames come from
``dp.connect(...).open("cps")``.  Noise differs from run to run, so answers
are compared by type, keys, cost, mechanism and (loosely) by value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.answers.results import NoInterval
from tests.curator.support import ALICE, BOB, Server

Query = Callable[[Any], Any]

QUERIES: dict[str, Query] = {
    "count": lambda pf: pf.count(epsilon=0.05),
    "sum": lambda pf: pf["wage"].sum(epsilon=0.05),
    "mean": lambda pf: pf["wage"].mean(epsilon=0.05),
    "var": lambda pf: pf["education"].var(epsilon=0.05),
    "std": lambda pf: pf["education"].std(epsilon=0.05),
    "series count": lambda pf: pf["wage"].count(epsilon=0.05),
    "filtered mean": lambda pf: pf[pf["education"] >= 12]["wage"].mean(epsilon=0.05),
    "derived column": lambda pf: pf.assign(w=pf["wage"] / 100)["w"].mean(epsilon=0.05),
    "expression sum": lambda pf: pf["wage"].clip(0, 1000).sum(epsilon=0.05),
    "declared bounds": lambda pf: pf.with_bounds(wage=(0, 2000))["wage"].mean(epsilon=0.05),
    "quantile": lambda pf: pf["wage"].quantile(0.5, epsilon=0.05),
    "quantiles": lambda pf: pf["wage"].quantile([0.25, 0.75], epsilon=0.05),
    "median": lambda pf: pf["education"].median(epsilon=0.05),
    "mode": lambda pf: pf["region"].mode(epsilon=0.05),
    "value_counts": lambda pf: pf["region"].value_counts(epsilon=0.05),
    "hist": lambda pf: pf["wage"].hist(bins=8, epsilon=0.05),
    "groupby count": lambda pf: pf.groupby("region").count(epsilon=0.05),
    "groupby size": lambda pf: pf.groupby(["region", "smsa"]).size(epsilon=0.05),
    "groupby sum": lambda pf: pf.groupby("region")["wage"].sum(epsilon=0.05),
    "groupby mean": lambda pf: pf.groupby("region")["wage"].mean(epsilon=0.05),
    "groupby var": lambda pf: pf.groupby("smsa")["education"].var(epsilon=0.05),
    "groupby std": lambda pf: pf.groupby("smsa")["education"].std(epsilon=0.05),
    "argmax": lambda pf: pf.groupby("region").argmax(epsilon=0.05),
    "above_threshold": lambda pf: pf.above_threshold(
        {"high": pf["wage"] > 1000, "rare": pf["wage"] > 4900}, 500, epsilon=0.05
    ),
    "discover_keys": lambda pf: pf.discover_keys("region", epsilon=0.05, delta=1e-9),
    "discovered groupby": lambda pf: pf.groupby("education")["wage"].mean(epsilon=0.05, delta=1e-9),
    "describe": lambda pf: pf.describe(epsilon=0.3),
    "randomized_response": lambda pf: pf["region"].randomized_response(epsilon=0.05),
    "laplace_copy": lambda pf: pf["education"].laplace_copy(epsilon=0.05),
    "kde": lambda pf: pf["wage"].kde(bandwidth=200, epsilon=0.05, grid=16),
    "approx_bounds": lambda pf: pf["wage"].approx_bounds(epsilon=0.05),
    "linear_regression": lambda pf: pf.linear_regression(
        ["education", "experience"], "wage", epsilon=0.05
    ),
}

#: Queries whose index is itself noisy (discovered keys, copies of noisy length).
NOISY_KEYS = {"discovered groupby", "randomized_response", "laplace_copy"}

BAD: dict[str, Query] = {
    "unknown column": lambda pf: pf["salary"].mean(epsilon=0.1),
    "no epsilon": lambda pf: pf["wage"].mean(),
    "negative epsilon": lambda pf: pf.count(epsilon=-1),
    "over budget": lambda pf: pf.count(epsilon=1000),
    "text mean": lambda pf: pf["region"].mean(epsilon=0.1),
    "text approx_bounds": lambda pf: pf["region"].approx_bounds(epsilon=0.1),
    "bad quantile": lambda pf: pf["wage"].quantile(1.5, epsilon=0.1),
    "undeclared value_counts": lambda pf: pf.assign(x=pf["wage"] > 3)["wage"].value_counts(
        epsilon=0.1
    ),
}
# What each refusal says, on both sides.
BAD_MATCH: dict[str, str] = {
    "unknown column": "Unknown column 'salary'",
    "no epsilon": r"Give the privacy cost of a query as epsilon=\.\.\.",
    "negative epsilon": "epsilon must be > 0, got -1",
    "over budget": r"Requested:  ε=1000\n",
    "text mean": r"mean\(\) needs a numeric column; 'region' is categorical",
    "text approx_bounds": r"approx_bounds\(\) needs a numeric column; 'region' is categorical",
    "bad quantile": r"A quantile must be in \[0, 1\], got 1\.5",
    "undeclared value_counts": r"value_counts\(\) needs the public keys of 'wage'",
}


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=ALICE).open("cps")


@pytest.fixture(scope="module")
def embedded() -> Any:
    session = dp.Session(epsilon=5.0, delta=1e-6, ledger=":memory:")
    numeric = dict.fromkeys(CPS1988_BOUNDS, "numeric")  # the kinds the catalog declares
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, dtypes=numeric
    )


def _any(value: Any) -> Any:
    return value  # a Release's value is a float, or a key (argmax, mode)


def _same_shape(local: Any, far: Any, exact_keys: bool = True) -> None:
    assert type(local) is type(far)
    if isinstance(local, dp.Release):
        assert far.mechanism == local.mechanism
        assert far.cost == local.cost
        assert far.query == local.query
        if isinstance(local.intervals, NoInterval):
            assert type(far.value) is type(local.value)
            assert isinstance(far.intervals, NoInterval)
        elif not isinstance(_any(local.value), str):
            scale = max(local.scale, far.scale, 1e-9)
            assert abs(float(far) - float(local)) < 60 * scale + 1e-6 * abs(float(local))
            low, high = far.ci(0.9)
            assert low <= float(far) <= high
        else:
            assert isinstance(far.value, type(local.value))
    elif isinstance(local, pd.Series):
        if exact_keys:
            assert far.index.equals(local.index)
        else:  # privately discovered keys differ from run to run
            assert far.index.name == local.index.name
        assert far.name == local.name
        meta_local, meta_far = local.attrs.get("dpframe"), far.attrs.get("dpframe")
        assert type(meta_far) is type(meta_local)
        if isinstance(meta_local, dp.GroupedRelease):
            assert isinstance(meta_far, dp.GroupedRelease)
            assert meta_far.cost == meta_local.cost
            # The undeclared cell (group-bys over declared keys, histograms) crosses the wire.
            assert (meta_far.undeclared is None) == (meta_local.undeclared is None)
            if meta_local.undeclared is not None:
                assert far.dp.undeclared.scale == local.dp.undeclared.scale
            if not isinstance(meta_local.intervals, NoInterval):
                assert dp.ci(far).shape == (len(far), 2)
                assert list(dp.ci(far).columns) == list(dp.ci(local).columns)
    elif isinstance(local, pd.DataFrame):
        assert far.shape == local.shape
        assert far.index.equals(local.index)
        assert list(far.columns) == list(local.columns)
        for column in local.columns:  # which cells show whole numbers (describe: count, quartiles)
            if str(local[column].dtype) == "dp":
                assert far[column].array.whole.tolist() == local[column].array.whole.tolist()
    elif isinstance(local, tuple):  # approx_bounds: (low, high) on the public bin edges
        assert len(far) == len(local) == 2
        assert all(isinstance(x, float) for x in (*far, *local))
        assert far[0] <= far[1]
    elif isinstance(local, list):
        assert all(isinstance(x, type(y)) for x, y in zip(far, local, strict=False))
    elif hasattr(local, "coef_"):
        assert far.coef_.shape == local.coef_.shape
        assert far.cost == local.cost
        assert far.predict(np.array([[12.0, 10.0]])).shape == (1,)
    else:
        assert far == local


@pytest.mark.parametrize("name", list(QUERIES))
def test_remote_answers_match_embedded_ones(name: str, remote: Any, embedded: Any) -> None:
    query = QUERIES[name]
    _same_shape(query(embedded), query(remote), exact_keys=name not in NOISY_KEYS)


@pytest.mark.parametrize("name", list(BAD))
def test_remote_errors_match_embedded_ones_and_charge_nothing(
    name: str, remote: Any, embedded: Any
) -> None:
    query = QUERIES.get(name) or BAD[name]
    with pytest.raises(dp.DPError, match=BAD_MATCH[name]) as local_error:
        query(embedded)
    before = remote.session.spent
    with pytest.raises(dp.DPError, match=BAD_MATCH[name]) as far_error:
        query(remote)
    assert type(far_error.value) is type(local_error.value)
    assert str(far_error.value) == str(local_error.value)
    assert remote.session.spent == before


def test_explain_is_free_and_matches(remote: Any, embedded: Any) -> None:
    before = remote.session.spent
    far = remote.session.explain(lambda: remote["wage"].mean(epsilon=0.2))
    local = embedded.session.explain(lambda: embedded["wage"].mean(epsilon=0.2))
    assert str(far).splitlines()[:3] == str(local).splitlines()[:3]
    assert remote.session.spent == before


def test_meter_follows_the_curators_figures(remote: Any) -> None:
    from dpframe.jupyter.meter import BudgetMeter

    meter = BudgetMeter(remote.session)
    before = meter.fraction
    remote.count(epsilon=0.1)
    assert meter.fraction > before
    assert meter.remaining == remote.session.remaining
    meter.close()


def test_budget_and_ledger_come_from_the_curator(server: Server) -> None:
    pf = dp.connect(server.url, token=BOB).open("cps")
    assert pf.session.total == dp.Budget(1)
    pf["wage"].mean(epsilon=0.25)
    assert pf.session.spent == dp.Budget(0.25)
    assert pf.session.remaining == dp.Budget(0.75)
    ledger = pf.session.ledger
    assert list(ledger["query"]) == ["mean(wage)"]
    with pytest.raises(dp.BudgetExceededError, match=r"Requested:  ε=0\.8\n"):
        pf.count(epsilon=0.8)
    assert pf.session.spent == dp.Budget(0.25)


def test_wrong_token_and_unreachable_curator(server: Server) -> None:
    with pytest.raises(dp.DPError, match="Missing or unknown token"):
        dp.connect(server.url, token="not-a-token")
    with pytest.raises(dp.DPError, match="Cannot reach"):
        dp.connect("http://127.0.0.1:9", token=ALICE, timeout=2)
    with pytest.raises(dp.DPError, match="not an http"):
        dp.connect("ftp://x", token=ALICE)


def test_remote_frames_still_refuse_raw_rows(remote: Any) -> None:
    for action, match in (
        (lambda: len(remote), r"len\(\) \(the exact row count is private\) would reveal"),
        (lambda: remote.head(), r"PrivateFrame\.head would reveal private rows"),
        (lambda: list(remote["wage"]), "Iteration would reveal private rows"),
    ):
        with pytest.raises(dp.PrivacyViolationError, match=match):
            action()
