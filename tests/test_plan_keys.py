"""Canonical keys of expressions and plan nodes; walks linear in distinct nodes."""

from __future__ import annotations

import math
import pickle
import struct
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.errors import SchemaError
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import (
    DICT_NODE_LIMIT,
    STR_LIMIT,
    Abs,
    Arith,
    Bucket,
    Clip,
    Col,
    Compare,
    Expr,
    IsIn,
    IsNull,
    Lit,
    Logical,
    Neg,
    Not,
    col,
)
from dpframe.plan.inline import definitions, inline, resolved_key
from dpframe.plan.keys import scalar_key
from dpframe.plan.nodes import Aggregate, Assign, Filter, GroupKey, Plan, Source
from dpframe.plan.schema import infer_column


def doubled(levels: int, leaf: Expr | None = None) -> Expr:
    """``x + x`` nested ``levels`` times over one shared object per level (2**levels leaves)."""
    x: Expr = col("a") if leaf is None else leaf
    for _ in range(levels):
        x = x + x
    return x


def unshared(levels: int) -> Expr:
    """The same tree as :func:`doubled`, every node a distinct object."""
    if levels == 0:
        return col("a")
    return Arith("+", unshared(levels - 1), unshared(levels - 1))


# -- literals -------------------------------------------------------------------


def test_floats_are_keyed_exactly() -> None:
    assert scalar_key(0.1) == ("float", Fraction(0.1))
    assert scalar_key(0.1) != ("float", Fraction(1, 10))  # the binary value, not 1/10
    assert Lit(0.1).key() != Lit(math.nextafter(0.1, 1.0)).key()
    assert Lit(0.1).key() == Lit(float("0.1")).key()
    assert Lit(2.5).key() == Lit(5 / 2).key()


def test_signed_zero_infinities_and_nan() -> None:
    assert Lit(0.0).key() != Lit(-0.0).key()
    assert Lit(math.inf).key() != Lit(-math.inf).key()
    assert Lit(math.inf).key() != Lit(1e308).key()
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0001))[0]
    assert math.isnan(payload)
    keys = {Lit(math.nan).key(), Lit(-math.nan).key(), Lit(float("nan")).key(), Lit(payload).key()}
    assert len(keys) == 1  # every NaN is one key
    assert Lit(math.nan).key() != Lit(math.inf).key()


def test_bool_int_and_float_are_distinct() -> None:
    keys = [Lit(True).key(), Lit(1).key(), Lit(1.0).key(), Lit("1").key()]
    assert len(set(keys)) == 4
    assert Lit(False).key() != Lit(0).key()
    assert IsIn(col("a"), (1, 2)).key() != IsIn(col("a"), (1.0, 2.0)).key()
    assert IsIn(col("a"), (True,)).key() != IsIn(col("a"), (1,)).key()
    assert Lit(2**80).key() == Lit(2**80).key() != Lit(float(2**80)).key()


def test_other_scalar_types_are_tagged_with_their_type() -> None:
    assert scalar_key(np.float64(0.5)) != scalar_key(0.5)
    assert scalar_key(np.int64(3)) != scalar_key(3)
    assert scalar_key(np.int64(3)) == scalar_key(np.int64(3))
    assert scalar_key(None) == ("none",)
    assert scalar_key(pd.Timestamp("2020-01-01")) == scalar_key(pd.Timestamp("2020-01-01"))
    with pytest.raises(TypeError, match="unhashable"):
        scalar_key([1, 2])


# -- expressions ------------------------------------------------------------------


def test_expression_equality_still_builds_a_condition() -> None:
    condition = col("a") == col("a")
    assert isinstance(condition, Compare)
    assert isinstance(col("a") != 1, Compare)
    assert hash(col("a") + 1) == hash(col("a") + 1)
    assert (col("a") + 1).key() == (col("a") + 1).key()
    assert (col("a") + 1).key() != (1 + col("a")).key()
    assert (col("a") - 1).key() != (col("a") + 1).key()
    assert Neg(col("a")).key() != Abs(col("a")).key()
    assert Not(col("a")).key() != IsNull(col("a")).key()


def test_keys_ignore_sharing() -> None:
    assert doubled(10).key() == unshared(10).key()
    assert hash(doubled(10)) == hash(unshared(10))
    assert len(doubled(10).key()) == 11  # one entry per distinct structure


def test_keys_of_huge_shared_expressions_are_linear() -> None:
    big = doubled(500)  # 2**500 leaves written out
    key = big.key()
    assert len(key) == 501
    assert big.key() is key  # cached on the object
    assert key[-1] == ("arith", ("+",), (499, 499))
    assert big.columns() == frozenset({"a"})
    assert hash(big) == hash(doubled(500))


def test_deep_expressions_need_no_recursion() -> None:
    deep: Expr = col("a")
    for i in range(20_000):
        deep = deep + i
    assert len(deep.key()) == 1 + 2 * 20_000
    assert deep.columns() == frozenset({"a"})
    assert str(deep).startswith("((((")
    as_dict = deep.to_dict()
    assert as_dict["right"] == {"op": "lit", "value": 19_999}


def test_str_of_a_huge_expression_is_elided() -> None:
    text = str(doubled(200))
    assert len(text) == STR_LIMIT + 1
    assert text.endswith("…")
    assert str(col("a") + 1) == "(a + 1)"
    assert repr(IsIn(col("k"), ("x",))) == "k.isin(['x'])"
    assert str(Bucket(col("x"), (0.0, 1.0, 2.0))) == "bucket(x, 2 bins)"


def test_to_dict_refuses_a_tree_too_large_to_write_out() -> None:
    with pytest.raises(SchemaError, match=f"more than {DICT_NODE_LIMIT} nodes when written out"):
        doubled(40).to_dict()
    small = doubled(5)
    assert expr_from_dict(small.to_dict()).key() == small.key()


def test_to_dict_round_trips_every_node_type() -> None:
    expr = Logical(
        "|",
        Compare("<=", Clip(Abs(Neg(col("x"))), 0.0, 1.0), Lit(0.5)),
        Not(IsNull(IsIn(Bucket(col("y"), (0.0, 1.0, 2.0), True), (0, 1)))),
    )
    assert expr_from_dict(expr.to_dict()).key() == expr.key()


def test_keys_survive_pickling() -> None:
    expr = doubled(8, col("b") * 0.25)
    expr.key()  # cached before pickling
    assert pickle.loads(pickle.dumps(expr)).key() == expr.key()


def test_schema_inference_is_linear_in_shared_nodes() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(
        pd.DataFrame({"a": [0.5], "t": ["x"]}), bounds={"a": (0.0, 1.0)}, categories={"t": ["x"]}
    )
    x = pf["a"]
    for _ in range(200):
        x = x + x  # a series: schema inference and str() at every step
    assert x.bounds == (0.0, 2.0**200)
    assert len(repr(x)) < 2 * STR_LIMIT
    assert (
        infer_column("y", doubled(1100), pf.__dpframe__().schema).bounds is None
    )  # beyond float range
    with pytest.raises(SchemaError, match="Arithmetic needs numbers"):
        infer_column("z", doubled(100, col("t")), pf.__dpframe__().schema)


# -- Hypothesis: key equality is structural equality ---------------------------------

LEAF_VALUES: st.SearchStrategy[bool | int | float | str] = st.sampled_from(
    [0, 1, 1.0, True, False, 0.0, -0.0, math.nan, math.inf, "a", 0.1]
)


def expressions() -> st.SearchStrategy[Expr]:
    leaves = st.one_of(st.sampled_from(["a", "b"]).map(Col), LEAF_VALUES.map(lambda v: Lit(v)))

    def extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.builds(Arith, st.sampled_from(["+", "*"]), inner, inner),
            st.builds(Compare, st.sampled_from(["<", "=="]), inner, inner),
            st.builds(Logical, st.just("&"), inner, inner),
            st.builds(Neg, inner),
            st.builds(Not, inner),
            st.builds(IsIn, inner, st.lists(LEAF_VALUES, max_size=2).map(tuple)),
            st.builds(Clip, inner, st.sampled_from([0.0, -0.0]), st.just(1.0)),
            st.builds(Bucket, inner, st.just((0.0, 1.0)), st.booleans()),
        )

    return st.recursive(leaves, extend, max_leaves=6)


def same_value(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def structurally_equal(a: Expr, b: Expr) -> bool:
    """The reference: same node types, same fields (exact, typed), children equal in order."""
    if type(a) is not type(b) or not same_value(a.params(), b.params()):
        return False
    pairs = zip(a.children(), b.children(), strict=True)
    return all(structurally_equal(x, y) for x, y in pairs)


def rebuilt(expr: Expr) -> Expr:
    """A copy made of new objects (no sharing with ``expr``)."""
    return expr_from_dict(expr.to_dict())


@settings(max_examples=400, deadline=None)
@given(expressions(), expressions())
def test_key_equality_is_structural_equality(a: Expr, b: Expr) -> None:
    assert (a.key() == b.key()) == structurally_equal(a, b)
    if a.key() == b.key():
        assert hash(a) == hash(b)
    copy = rebuilt(a)
    assert copy.key() == a.key()
    assert structurally_equal(copy, a)
    shared = Arith("+", a, a)
    assert shared.key() == Arith("+", a, copy).key()


# -- plan nodes -----------------------------------------------------------------------


def _query(threshold: float = 30.0) -> Aggregate:
    plan: Plan = Assign(Source("d"), "z", col("x") * 2)
    plan = Filter(plan, col("z") > threshold)
    key = GroupKey("g", col("g"), ("a", "b"))
    return Aggregate(plan, "sum", col("z"), (0.0, 1.0), (key,), "label")


def test_equal_plans_are_equal_and_hash_equal() -> None:
    a, b = _query(), _query()
    assert a == b
    assert hash(a) == hash(b)
    assert a.plan == b.plan
    assert (a.plan != b.plan) is False
    assert hash(a.plan) == hash(b.plan)
    assert a.by[0] == b.by[0]
    assert len({a, b}) == 1
    assert {a.plan: 1}[b.plan] == 1
    assert Source("d") == Source("d")
    assert Source("d") != Source("d", unit_rows=2)


def test_plans_differing_anywhere_are_unequal() -> None:
    base = _query()
    assert base != _query(30.5)
    assert base.plan != _query(30.5).plan
    assert _query(30.0) != Aggregate(
        _query(30).plan, base.statistic, base.expr, base.bounds, base.by, base.label
    )  # the literal 30.0 against 30
    assert base != Aggregate(base.plan, "mean", base.expr, base.bounds, base.by, base.label)
    assert base != Aggregate(base.plan, "sum", base.expr, (0.0, 2.0), base.by, base.label)
    assert base != Aggregate(base.plan, "sum", base.expr, base.bounds, (), base.label)
    assert base != Aggregate(base.plan, "sum", base.expr, base.bounds, base.by, "other")
    assert GroupKey("g", col("g"), ("a",)) != GroupKey("g", col("g"), ("a", "b"))
    assert Filter(Source("d"), col("x") > 1) != Assign(Source("d"), "x", col("x") > 1)
    assert Source("d") != "d"
    assert Filter(Source("d"), col("x") > 1) != Filter(Source("e"), col("x") > 1)


def test_frames_with_the_same_filter_have_equal_plans() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"age": [20, 40]}), bounds={"age": (0, 100)})
    assert pf[pf["age"] > 30].plan == pf[pf["age"] > 30].plan
    assert pf[pf["age"] > 30].plan != pf[pf["age"] > 31].plan
    assert hash(pf[pf["age"] > 30].plan) == hash(pf[pf["age"] > 30].plan)


def test_plan_keys_of_long_chains_need_no_recursion() -> None:
    plan: Any = Source("d")
    for i in range(1, 10_001):
        plan = Assign(plan, f"a{i}", col(f"a{i - 1}") + col(f"a{i - 1}"))
    other: Any = Source("d")
    for i in range(1, 10_001):
        other = Assign(other, f"a{i}", col(f"a{i - 1}") + col(f"a{i - 1}"))
    assert plan == other
    assert hash(plan) == hash(other)


def test_resolved_keys_follow_definitions() -> None:
    plan: Any = Source("d")
    for i in range(1, 31):
        plan = Assign(plan, f"a{i}", col(f"a{i - 1}") + col(f"a{i - 1}"))
    on_chain = resolved_key(plan, col("a30"))
    assert on_chain == resolved_key(Source("d"), doubled(30, col("a0")))
    assert len(on_chain[2]) == 31
    assert on_chain != resolved_key(Source("e"), doubled(30, col("a0")))
    redefined = Assign(plan, "a29", col("a0"))
    assert resolved_key(redefined, col("a30")) == on_chain  # a30 was defined before
    assert resolved_key(redefined, col("a29")) == resolved_key(Source("d"), col("a0"))
    assert resolved_key(Source("d"), col("x") + 1) != resolved_key(Source("d"), col("x") + 1.0)


def test_inline_and_definitions_share_their_results() -> None:
    plan: Any = Source("d")
    for i in range(1, 201):
        plan = Assign(plan, f"a{i}", col(f"a{i - 1}") + col(f"a{i - 1}"))
    defs = definitions(plan)
    assert len(defs["a200"].key()) == 201  # the inlined tree is shared, not 2**200 nodes
    assert str(defs["a1"]) == "(a0 + a0)"
    tree = inline(doubled(300, col("a3")), defs)
    assert len(tree.key()) == 301 + 3
    assert tree.columns() == frozenset()  # only source columns remain (SourceCol)


def _head(key: object) -> object:
    assert isinstance(key, tuple)
    return key[0]


def test_a_long_tuple_of_floats_is_keyed_exactly_at_once() -> None:
    """Many plain floats are keyed by their bytes: equal exactly when every value is."""
    grid = tuple(float(i) / 7 for i in range(4_097))
    assert scalar_key(grid) == scalar_key(tuple(np.array(grid).tolist()))  # other objects
    assert _head(scalar_key(grid)) == "float64s"
    nudged = (*grid[:-1], float(np.nextafter(grid[-1], 2.0)))
    assert scalar_key(nudged) != scalar_key(grid)  # one ulp apart
    zeros = (0.0,) * 20
    assert scalar_key(zeros) != scalar_key((-0.0,) + (0.0,) * 19)  # -0.0 is not 0.0
    assert scalar_key((0.1 + 0.2,) * 20) != scalar_key((0.3,) * 20)
    with_int = (*grid[:-1], 4096)
    assert scalar_key(with_int) != scalar_key(grid) and _head(scalar_key(with_int)) != "float64s"
    nans = (float("nan"),) * 20  # every NaN one key: the items' path
    assert scalar_key(nans) == scalar_key(tuple(float("nan") for _ in range(20)))
    assert _head(scalar_key(nans)) == ("nan",)
    short = (0.5,) * 16  # up to 16: the items' own keys, as before
    assert scalar_key(short) == tuple(scalar_key(0.5) for _ in range(16))
    forged = ("float64s", np.array(grid).tobytes())  # a user's tuple of that form
    assert scalar_key(forged) != scalar_key(grid)
