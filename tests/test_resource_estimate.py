"""The resource estimate: sizes from public inputs only, refused before the charge."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.errors import DPError, InvalidArgumentError, ResourceLimitError
from dpframe.plan import estimate as estimate_module
from dpframe.plan.estimate import (
    VISIT_CAP,
    ResourceEstimate,
    ResourceLimits,
    check_resources,
    estimate,
)
from dpframe.plan.expressions import Bucket, Expr, col
from dpframe.plan.nodes import Assign, Filter, Plan, Source


def _chain(steps: int) -> Plan:
    plan: Plan = Source("d")
    for i in range(1, steps + 1):
        plan = Assign(plan, f"a{i}", col(f"a{i - 1}") + col(f"a{i - 1}"))
    return plan


def test_sizes_of_a_small_query() -> None:
    plan: Plan = Assign(Source("d"), "z", col("x") * 2)
    plan = Filter(plan, col("k").isin(["a", "b", "c"]))
    bins = Bucket(col("z"), (0.0, 1.0, 2.0, 3.0))
    sizes = estimate(plan, [col("z").clip(0, 1), bins, None], 3)
    assert sizes == ResourceEstimate(
        plan_steps=2,
        expression_nodes=8,  # x, 2, x*2, k, isin, z, clip, bucket: the two z are one
        evaluation_nodes=9,  # every (object, bindings) pair: col("z") twice, resolved
        expression_depth=2,
        literal_values=3 + 4,
        output_cells=3,
        longest_list=4,  # the bin edges
    )
    check_resources(sizes)


def test_shared_nodes_are_counted_once() -> None:
    x: Expr = col("a")
    for _ in range(60):
        x = x + x  # 2**60 leaves written out
    sizes = estimate(Source("d"), [x, x + 0], 1)
    assert sizes.expression_nodes == 61 + 2
    assert sizes.evaluation_nodes == 61 + 2
    assert sizes.expression_depth == 62
    check_resources(sizes)


def test_a_doubling_chain_of_derived_columns_is_small() -> None:
    sizes = estimate(_chain(30), [col("a30")], 1)
    assert sizes.plan_steps == 30
    assert sizes.evaluation_nodes == 3 * 30 + 1
    check_resources(sizes)


def test_a_ten_thousand_step_chain_is_refused() -> None:
    sizes = estimate(_chain(10_000), [col("a10000")], 1)
    assert sizes.plan_steps == 10_000
    with pytest.raises(ResourceLimitError, match=r"10000 plan steps .* \(limit 1000\)") as info:
        check_resources(sizes)
    assert "30001 expression nodes to evaluate (limit 10000)" in str(info.value)
    assert isinstance(info.value, DPError)


def test_a_chain_built_through_the_api_is_refused() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"a0": np.arange(3.0)}), bounds={"a0": (0.0, 1.0)})
    for i in range(1, 1_201):  # building is linear per step in the expression
        pf = pf.assign(**{f"a{i}": pf[f"a{i - 1}"] + pf[f"a{i - 1}"]})
    with pytest.raises(ResourceLimitError, match=r"1200 plan steps .* \(limit 1000\)"):
        check_resources(estimate(pf.plan, [pf["a1200"].expr], 1))


def test_redefinitions_count_each_evaluation() -> None:
    plan: Plan = Source("d")
    for _ in range(20):
        plan = Assign(plan, "a", col("a") + 1)  # 3 structures written, 20 additions to evaluate
    sizes = estimate(plan, [col("a")], 1)
    assert sizes.expression_nodes == 3
    assert sizes.evaluation_nodes == 20 * 3 + 1  # each assign's 3 nodes, then the read of a


def test_other_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    deep: Expr = col("x")
    for _ in range(300):
        deep = -deep
    with pytest.raises(ResourceLimitError, match=r"301 levels of expression nesting \(limit 256\)"):
        check_resources(estimate(Source("d"), [deep], 1))
    many = col("x").isin(list(range(2**20 + 1)))
    with pytest.raises(ResourceLimitError, match=r"1048577 literal values .*\(limit 1048576\)"):
        check_resources(estimate(Source("d"), [many], 1))
    with pytest.raises(ResourceLimitError, match=r"16777217 output cells \(limit 16777216\)"):
        check_resources(estimate(Source("d"), [], 2**24 + 1))
    tight = ResourceLimits(max_cells=10)
    with pytest.raises(ResourceLimitError, match=r"11 output cells \(limit 10\)"):
        check_resources(estimate(Source("d"), [], 11), tight)


def test_resolution_stops_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimate_module, "VISIT_CAP", 50)
    sizes = estimate(_chain(40), [col("a40")], 1)
    assert sizes.evaluation_nodes == 51
    assert VISIT_CAP == 1 << 20


def test_limits_are_validated() -> None:
    with pytest.raises(InvalidArgumentError, match="max_cells must be a positive integer"):
        ResourceLimits(max_cells=0)
    with pytest.raises(InvalidArgumentError, match="max_plan_steps must be a positive integer"):
        ResourceLimits(max_plan_steps=True)
    with pytest.raises(InvalidArgumentError, match="max_evaluation_nodes must be at most"):
        ResourceLimits(max_evaluation_nodes=VISIT_CAP + 1)


def test_the_estimate_does_not_depend_on_the_data() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    sizes: list[Any] = []
    for n in (1, 1000):
        frame = pd.DataFrame({"x": np.arange(float(n)), "k": ["a"] * n})
        pf = session.private_frame(frame, bounds={"x": (0.0, 1.0)}, categories={"k": ["a", "b"]})
        query = pf[pf["x"] > 0.5].assign(y=pf["x"] * 2)
        sizes.append(estimate(query.plan, [query["y"].expr, query["k"].expr], 2))
    assert sizes[0] == sizes[1]
