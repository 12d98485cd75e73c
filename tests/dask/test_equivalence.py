"""Random plans (Hypothesis): the Dask backend's exact aggregates equal the pandas backend's.

"Equal" means bit-identical float64 arrays (``tobytes()``), for every measure
a statistic uses (row and non-null counts, clamped, centred and squared
quantized sums), over random filters, derived columns, group keys (declared
categories, several keys, buckets) and random partitionings including empty
partitions; and the same keys and counts for private key discovery.
Everything is computed on the two-worker ``LocalCluster``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from distributed import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpframe.backends import PandasBackend
from dpframe.backends.dask_backend import DaskBackend
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import (
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
)
from dpframe.plan.nodes import Aggregate, Assign, Filter, GroupKey, Plan, Source, Statistic
from tests.dask._support import concat, from_pandas

pytestmark = pytest.mark.usefixtures("dask_client")

WORDS = ("a", "b", "c", "dd")
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

floats = st.one_of(
    st.floats(-1e4, 1e4, allow_nan=False),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-300, 0.3, -0.3]),
)


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(1, 40))
    frame: pd.DataFrame = pd.DataFrame(
        {
            "x": draw(st.lists(floats, min_size=n, max_size=n)),
            "y": draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)),
            "s": pd.Series(
                draw(st.lists(st.sampled_from([*WORDS, None]), min_size=n, max_size=n)),
                dtype="str",
            ),
            "b": draw(st.lists(st.booleans(), min_size=n, max_size=n)),
            "u": draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, math.nan]), min_size=n, max_size=n)),
        }
    )
    return frame


def numeric(names: tuple[str, ...]) -> st.SearchStrategy[Expr]:
    leaves = st.one_of(
        st.sampled_from(names).map(Col),
        st.floats(-100, 100, allow_nan=False).map(Lit),
        st.integers(-3, 3).map(Lit),
    )

    def extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.builds(Arith, st.sampled_from(["+", "-", "*", "/"]), inner, inner),
            st.builds(Neg, inner),
            st.builds(Abs, inner),
            st.builds(Clip, inner, st.just(-50.0), st.just(50.0)),
        )

    return st.recursive(leaves, extend, max_leaves=4)


def boolean(names: tuple[str, ...]) -> st.SearchStrategy[Expr]:
    num = numeric(names)
    leaves = st.one_of(
        st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), num, num),
        st.builds(
            Compare,
            st.sampled_from(["==", "!="]),
            st.just(Col("s")),
            st.sampled_from(WORDS).map(Lit),
        ),
        st.builds(IsIn, st.just(Col("s")), st.lists(st.sampled_from(WORDS), max_size=3).map(tuple)),
        st.builds(IsNull, st.sampled_from([Col("x"), Col("s"), Col("u")])),
        st.just(Col("b")),
    )

    def extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.builds(Logical, st.sampled_from(["&", "|"]), inner, inner), st.builds(Not, inner)
        )

    return st.recursive(leaves, extend, max_leaves=3)


@st.composite
def plans(draw: st.DrawFn) -> tuple[Plan, tuple[str, ...]]:
    """A source, then up to three filters or derived columns; also the numeric column names."""
    plan: Plan = Source("data")
    names: tuple[str, ...] = ("x", "y")
    for i in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            plan = Filter(plan, draw(boolean(names)))
        else:
            name = draw(st.sampled_from([f"d{i}", "x"]))  # "x" replaces a source column
            plan = Assign(plan, name, draw(numeric(names)))
            names = tuple(dict.fromkeys([*names, name]))
    return plan, names


@st.composite
def group_keys(draw: st.DrawFn, names: tuple[str, ...]) -> tuple[GroupKey, ...]:
    options = [
        GroupKey("s", Col("s"), tuple(draw(st.permutations([*WORDS, "zz"]))[:3])),
        GroupKey(
            "y",
            Col("y"),
            tuple(draw(st.lists(st.integers(-6, 6), min_size=1, max_size=5, unique=True))),
        ),
        GroupKey("b", Col("b"), (False, True)),
    ]
    edges = tuple(sorted(draw(st.lists(st.floats(-200, 200), min_size=2, max_size=5, unique=True))))
    bucket = Bucket(draw(numeric(names)), edges, draw(st.booleans()))
    options.append(GroupKey("bin", bucket, tuple(range(len(edges) - 1))))
    chosen = draw(st.lists(st.sampled_from(range(len(options))), max_size=2, unique=True))
    return tuple(options[i] for i in chosen)


@st.composite
def aggregates(draw: st.DrawFn) -> Aggregate:
    plan, names = draw(plans())
    statistics: list[Statistic] = ["count", "sum", "mean", "var", "std"]
    statistic = draw(st.sampled_from(statistics))
    expr: Expr | None = draw(numeric(names))
    if statistic == "count" and draw(st.booleans()):
        expr = None
    low = draw(st.floats(-1e6, 1e6))
    high = draw(st.floats(low, 1e6))
    bounds = None if expr is None else (low, high)
    by = draw(group_keys(names))
    return Aggregate(plan, statistic, expr, bounds, by, "test")


def _partitioned(frame: pd.DataFrame, npartitions: int, empty: bool) -> Any:
    ddf = from_pandas(frame, npartitions)
    if empty:  # a partition with no rows in the middle
        ddf = concat([ddf, from_pandas(frame.iloc[:0], 1), ddf])
    return ddf


def _pandas_twin(frame: pd.DataFrame, empty: bool) -> pd.DataFrame:
    return pd.concat([frame, frame], ignore_index=True) if empty else frame


@SETTINGS
@given(frame=frames(), agg=aggregates(), npartitions=st.integers(1, 5), empty=st.booleans())
def test_exact_measures_are_bit_identical(
    frame: pd.DataFrame, agg: Aggregate, npartitions: int, empty: bool
) -> None:
    measures, _ = measures_for(agg)
    dask_backend = DaskBackend(_partitioned(frame, npartitions, empty))
    try:
        expected = PandasBackend(_pandas_twin(frame, empty)).compute(agg.plan, measures, agg.by)
    except Exception as exc:  # e.g. a constant 0.0 / 0.0: Dask must fail the same way
        event(f"pandas raised {type(exc).__name__}")
        with pytest.raises(type(exc), match=re.escape(str(exc))):  # the same refusal
            dask_backend.compute(agg.plan, measures, agg.by)
        return
    got = dask_backend.compute(agg.plan, measures, agg.by)
    event(f"{len(measures)} measures over {expected[0].size} cells")
    assert len(got) == len(expected) == len(measures)
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype == np.float64
        assert a.tobytes() == b.tobytes(), (a, b)


@SETTINGS
@given(
    frame=frames(),
    plan_names=plans(),
    key=st.sampled_from([Col("s"), Col("y"), Col("u"), Col("b")]),
    npartitions=st.integers(1, 5),
    empty=st.booleans(),
)
def test_key_counts_are_identical(
    frame: pd.DataFrame,
    plan_names: tuple[Plan, tuple[str, ...]],
    key: Col,
    npartitions: int,
    empty: bool,
) -> None:
    plan, _ = plan_names
    dask_backend = DaskBackend(_partitioned(frame, npartitions, empty))
    try:
        expected = PandasBackend(_pandas_twin(frame, empty)).key_counts(plan, key)
    except Exception as exc:
        event(f"pandas raised {type(exc).__name__}")
        with pytest.raises(type(exc), match=re.escape(str(exc))):  # the same refusal
            dask_backend.key_counts(plan, key)
        return
    got = dask_backend.key_counts(plan, key)
    # The same keys (of the same types) with the same counts; the order may differ.
    counts = dict(zip(got[0], got[1].tolist(), strict=True))
    assert counts == dict(zip(expected[0], expected[1].tolist(), strict=True))
    assert sorted(repr(type(k)) for k in got[0]) == sorted(repr(type(k)) for k in expected[0])
    assert got[1].dtype == expected[1].dtype == np.int64


def test_sums_stay_exact_where_float_addition_order_would_matter(dask_client: Client) -> None:
    """Terms of very different sizes: naive float sums depend on order; ours must not."""
    values = np.tile([2.0**40, 1.0, -(2.0**40), 3.0], 25_000)
    frame = pd.DataFrame({"x": values, "g": np.arange(len(values)) % 7})
    agg = Aggregate(
        Source("data"),
        "sum",
        Col("x"),
        (-(2.0**40), 2.0**40),
        (GroupKey("g", Col("g"), tuple(range(7))),),
        "t",
    )
    measures, _ = measures_for(agg)
    expected = PandasBackend(frame).compute(agg.plan, measures, agg.by)
    for npartitions in (1, 3, 16):
        got = DaskBackend(from_pandas(frame, npartitions)).compute(agg.plan, measures, agg.by)
        assert got[0].tobytes() == expected[0].tobytes()
    # The quantized terms are integers, so the exact total is known independently.
    quantum = measures[0].quantum
    exact = sum(np.rint(values[frame["g"] == 0] / quantum))
    assert expected[0][0] == exact
