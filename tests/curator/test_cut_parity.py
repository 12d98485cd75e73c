"""``cut`` and ``qcut`` through the curator: the same keys, costs and refusals as embedded.

The curator runs in its own process with a large budget for alice, so the
remote answers can be compared with plain pandas (``pd.cut(...).value_counts()``)
as closely as the embedded ones; the bins and their interval keys travel in
the request (``{"$interval": [...]}``) and back in the response.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, SENTINEL_TEXT, Server, write_catalog

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
    assert str(explained).startswith("quantile(wage, q=[0.333333, 0.666667]) = a value whose")
    assert "; cost ε=0.5; " in explained.plain()
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


# -- fuzzing: binned and recoded expressions sent by hand --------------------------------

COLUMNS = ["wage", "education", "person_id", "region", "note", "smsa"]
VALID_LABELS = [
    "a",
    "b",
    3,
    2.5,
    False,
    "south",
    "ordinary",
    {"$interval": [0, 500, "right"]},
    {"$interval": [500.0, 5000, "left"]},
    {"$interval": [-1, 0, "both"]},
]
REFUSED_LABELS = [None, {"$interval": [1, 0, "up"]}, {"$interval": [0, 1]}, [1]]
LABELS = st.sampled_from(VALID_LABELS * 4 + REFUSED_LABELS)
SOURCES = st.sampled_from(["south", "yes", "ordinary", 0, 1, 2, 2.5, True] * 3 + [None, [1], {}])


def _expression(draw: st.DrawFn) -> dict[str, Any]:
    operand: dict[str, Any] = {"op": "col", "name": draw(st.sampled_from(COLUMNS))}
    if draw(st.booleans()):
        edges = draw(
            st.lists(
                st.one_of(st.integers(-10, 6000), st.floats(-1e4, 1e4), st.sampled_from([1e300])),
                min_size=1,
                max_size=6,
            )
        )
        if draw(st.integers(0, 4)):
            edges = sorted(set(edges))
        flags = st.one_of(st.booleans(), st.sampled_from([1, None]))
        operand = {
            "op": "bin",
            "operand": operand,
            "edges": edges,
            "right": draw(flags),
            "include_lowest": draw(flags),
        }
    if draw(st.booleans()):
        size = draw(st.integers(0, 4))
        sources = draw(st.lists(SOURCES, min_size=size, max_size=size, unique_by=repr))
        if operand["op"] == "bin" and draw(st.booleans()):
            sources = list(range(size))
        operand = {
            "op": "recode",
            "operand": operand,
            "source": sources,
            "target": draw(st.lists(LABELS, min_size=size, max_size=size)),
            "keep": draw(st.booleans()),
            "ordered": draw(st.booleans()),
        }
    return operand


@st.composite
def binned_calls(draw: st.DrawFn) -> dict[str, Any]:
    expr = _expression(draw)
    categories = draw(st.lists(LABELS.filter(lambda v: v is not None), min_size=1, max_size=4))
    categories = [c for i, c in enumerate(categories) if c not in categories[:i]]
    use = draw(st.sampled_from(["key", "assign", "filter", "value"]))
    plan: list[dict[str, Any]] = []
    key_expr: dict[str, Any] = {"op": "col", "name": "region"}
    key_categories: list[Any] = ["south", "west"]
    statistic, value, bounds = "count", None, None
    if use == "key":
        key_expr, key_categories = expr, categories
    elif use == "assign":
        plan = [{"assign": ["band", expr]}]
        key_expr, key_categories = {"op": "col", "name": "band"}, categories
    elif use == "filter":
        right = {"op": "lit", "value": draw(st.sampled_from(["a", 1, 2.5]))}
        plan = [
            {
                "filter": {
                    "op": draw(st.sampled_from(["==", "!=", "<"])),
                    "left": expr,
                    "right": right,
                }
            }
        ]
    else:
        statistic, value, bounds = "sum", expr, [0.0, 10.0]
    return {
        "v": 1,
        "node": {
            "type": "aggregate",
            "plan": plan,
            "privacy": {"epsilon": "1/10", "delta": "0", "rho": None},
            "statistic": statistic,
            "expr": value,
            "bounds": bounds,
            "by": [{"name": "k", "expr": key_expr, "categories": key_categories}],
            "label": "fuzzed cut",
            "undeclared": draw(st.booleans()),
        },
        "explain": draw(st.booleans()) and draw(st.booleans()),
    }


def test_fuzzed_cuts_never_fail_the_curator_or_charge_without_a_release(
    tmp_path: Path,
) -> None:
    curator = Curator(Catalog.load(write_catalog(tmp_path)))
    client = TestClient(create_app(curator))
    headers = {"Authorization": f"Bearer {ALICE}"}
    outcomes: dict[int, int] = {}

    def rows() -> int:
        body = client.get("/v1/datasets/sentinel/ledger", headers=headers).json()
        return len(decode_response(body["ledger"]))

    @given(call=binned_calls())
    @settings(
        max_examples=int(os.environ.get("DPFRAME_FUZZ_EXAMPLES", "150")),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(call: dict[str, Any]) -> None:
        before = rows()
        fresh = {**call, "fresh": True}  # each call a new release (issue 31)
        answer = client.post("/v1/datasets/sentinel/query", json=fresh, headers=headers)
        outcomes[answer.status_code] = outcomes.get(answer.status_code, 0) + 1
        assert answer.status_code < 500, answer.text
        assert SENTINEL_TEXT not in answer.text and "4321.123" not in answer.text
        released = answer.status_code == 200 and not call.get("explain")
        assert rows() == before + released, answer.text
        assert curator.unexpected_errors == 0

    run()
    print(f"\nfuzzed cuts: {dict(sorted(outcomes.items()))}")
    assert outcomes.get(200, 0) > 10 and sum(v for k, v in outcomes.items() if k >= 400) > 10
