"""The wire format of release nodes: every node type round-trips exactly; the decoder is strict."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpframe.plan.codec import (
    MAX_ITEMS,
    NodeFormatError,
    decode_exact,
    decode_node,
    encode_exact,
    encode_node,
)
from dpframe.plan.expressions import Bucket, Col, Lit
from dpframe.plan.nodes import Aggregate, Assign, Filter, GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import (
    ArgMax,
    Describe,
    DiscoverKeys,
    DiscoverThenAggregate,
    KernelDensity,
    Mode,
    Quantile,
    Regression,
    SanitizedCopy,
    SparseVector,
)

SOURCE = Source("d")
PLAN = Assign(Filter(SOURCE, Col("age") > 30), "x", Col("wage") / 40)
EPS = PrivacyRequest(epsilon=0.1)
REGION = GroupKey("region", Col("region"), ("north", "south", "", 3, 2.5, True))

NODES = [
    Aggregate(PLAN, "mean", Col("x"), (0.0, 125.0), (REGION,), "mean(x) by region", EPS),
    Aggregate(SOURCE, "count", None, None, (), "count()", PrivacyRequest(rho=Fraction(1, 3))),
    Aggregate(
        SOURCE,
        "count",
        Col("wage"),
        None,
        (GroupKey("wage", Bucket(Col("wage"), (0.0, 10.0, 20.0)), (0, 1)),),
        "hist",
        EPS,
    ),
    Quantile(
        plan=PLAN,
        privacy=EPS,
        expr=Col("wage"),
        bounds=(0.0, 5000.0),
        levels=(Fraction(1, 4), Fraction(1, 2)),
        scalar=False,
    ),
    Mode(plan=PLAN, privacy=EPS, group=REGION),
    ArgMax(
        plan=SOURCE,
        privacy=EPS,
        keys=(REGION,),
        agg="mean",
        expr=Col("wage"),
        column="wage",
        bounds=(0.0, 10.0),
    ),
    SparseVector(
        plan=SOURCE,
        privacy=EPS,
        conditions=(("old", Col("age") > 60),),
        threshold=100.0,
        max_hits=2,
        numeric=True,
    ),
    DiscoverKeys(plan=SOURCE, privacy=PrivacyRequest(epsilon=1, delta=1e-8), column="region"),
    DiscoverThenAggregate(
        plan=SOURCE,
        privacy=PrivacyRequest(epsilon=1, delta=1e-8),
        column="region",
        statistic="sum",
        value=Col("wage"),
        bounds=(0.0, 10.0),
    ),
    Describe(plan=PLAN, privacy=EPS, columns=(("wage", Col("wage"), (0.0, 5000.0)),)),
    SanitizedCopy(
        plan=SOURCE,
        privacy=EPS,
        expr=Col("region"),
        name="region",
        kind="rr",
        length_share=Fraction(1, 20),
        categories=("north", "south"),
    ),
    SanitizedCopy(
        plan=SOURCE,
        privacy=EPS,
        expr=Col("wage"),
        name="wage",
        kind="laplace",
        length_share=Fraction(1, 20),
        bounds=(0.0, 10.0),
    ),
    KernelDensity(
        plan=SOURCE,
        privacy=EPS,
        expr=Col("wage"),
        bounds=(0.0, 10.0),
        bandwidth=0.5,
        points=(1.0, 2.0),
    ),
    Regression(
        plan=SOURCE,
        privacy=PrivacyRequest(epsilon=1, delta=1e-6),
        loss="squared",
        features=("age",),
        feature_bounds=((18.0, 70.0),),
        target="wage",
        target_bounds=(0.0, 5000.0),
        progress=False,
    ),
]


def _wire(node: Any) -> Any:
    return json.loads(json.dumps(encode_node(node), allow_nan=False))


@pytest.mark.parametrize("node", NODES, ids=[type(n).__name__ for n in NODES])
def test_every_node_type_round_trips_through_json(node: Any) -> None:
    decoded = decode_node(_wire(node), SOURCE)
    assert decoded == node
    assert decoded.key() == node.key()
    assert decoded.label == node.label


def test_the_decoder_puts_nodes_on_the_curators_own_source() -> None:
    units = Source("d", unit_rows=3, view="unit:person:3:ab", unit_column="person", unit_groups=2)
    decoded = decode_node(_wire(NODES[0]), units)
    assert decoded.plan.child.child == units  # type: ignore[union-attr]


def _with(path: list[Any], value: Any, node: Any = None) -> Any:
    data = _wire(node if node is not None else NODES[0])
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return data


BAD = [
    (_with(["v"], 2), "version"),
    (_with(["v"], True), "version"),
    (_with(["node", "type"], "__class__"), "node.type must be one of"),
    (_with(["node", "source"], {"unit_rows": 1}), "unknown: source"),
    (_with(["node", "privacy", "epsilon"], 0.1), "decimal string"),
    (_with(["node", "privacy", "epsilon"], "1" * 41), "40 significant digits"),
    (_with(["node", "privacy", "epsilon"], "1e-400"), "exponent"),
    (_with(["node", "privacy", "epsilon"], f"1/{2**64}"), "below 2\\*\\*64"),
    (_with(["node", "privacy", "epsilon"], "-1"), "decimal string"),
    (_with(["node", "bounds"], [0, "x"]), "must be a number"),
    (_with(["node", "bounds"], [0, True]), "must be a number"),
    (_with(["node", "statistic"], "median"), "must be one of"),
    (_with(["node", "expr"], {"op": "exec", "code": "x"}), "expression"),
    (_with(["node", "plan"], [{"drop": "x"}]), "filter"),
    (
        _with(
            ["node", "by"],
            [{"name": "r", "expr": {"op": "col", "name": "r"}, "categories": [{"$dc": "Budget"}]}],
        ),
        "string, number",
    ),
    (_with(["node", "max_hits"], 1.5, NODES[6]), "integer"),
    (_with(["node", "numeric"], 1, NODES[6]), "true or false"),
]


@pytest.mark.parametrize(("data", "match"), BAD, ids=[b[1] for b in BAD])
def test_malformed_nodes_are_refused_with_a_clear_message(data: Any, match: str) -> None:
    with pytest.raises(NodeFormatError, match=match):
        decode_node(data, SOURCE)


def test_missing_and_unknown_fields_are_named() -> None:
    data = _wire(NODES[0])
    del data["node"]["label"]
    data["node"]["extra"] = 1
    with pytest.raises(NodeFormatError, match="unknown: extra; missing: label"):
        decode_node(data, SOURCE)


def test_a_field_with_a_default_may_be_left_out() -> None:
    """A client that predates a defaulted field (here ``moment_weights``, ``undeclared``)
    is still understood; a field without a default stays required."""
    data = _wire(NODES[0])
    assert isinstance(NODES[0], Aggregate)
    del data["node"]["moment_weights"], data["node"]["undeclared"]
    assert decode_node(data, SOURCE) == NODES[0]
    del data["node"]["statistic"]
    with pytest.raises(NodeFormatError, match="missing: statistic"):
        decode_node(data, SOURCE)


def test_a_huge_message_is_refused_before_anything_is_built() -> None:
    data = _wire(NODES[0])
    data["node"]["by"][0]["categories"] = [[0]] * (MAX_ITEMS + 1)
    with pytest.raises(NodeFormatError, match="more than 50000 JSON"):
        decode_node(data, SOURCE)


def test_a_node_without_privacy_cannot_be_encoded() -> None:
    with pytest.raises(NodeFormatError, match="no privacy cost"):
        encode_node(Aggregate(SOURCE, "count", None, None, (), "count()"))


def test_the_decoder_does_not_modify_its_input() -> None:
    data = _wire(NODES[3])
    before = copy.deepcopy(data)
    decode_node(data, SOURCE)
    assert data == before


@given(
    st.fractions(min_value=0, max_value=10**6).filter(
        lambda f: f.denominator < 2**64 and f.numerator < 2**64
    )
)
def test_exact_numbers_round_trip(value: Fraction) -> None:
    assert decode_exact(encode_exact(value), "epsilon") == value


@given(st.floats(min_value=1e-30, max_value=1e30))
def test_floats_round_trip_as_their_shortest_decimal(value: float) -> None:
    exact = PrivacyRequest(epsilon=value).epsilon
    assert exact is not None
    assert decode_exact(encode_exact(exact), "epsilon") == exact


def test_lit_values_survive() -> None:
    node = Aggregate(
        Filter(SOURCE, Col("flag") == Lit(True)), "count", None, None, (), "count()", EPS
    )
    decoded = decode_node(_wire(node), SOURCE)
    assert decoded == node
