"""Chunked evaluation in the pandas backend equals whole-frame evaluation bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpframe.backends import PandasBackend, chunks
from dpframe.backends.chunks import chunk_bounds, code_dtype, combine_slots
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import (
    Arith,
    Bucket,
    Col,
    Compare,
    Expr,
    IsIn,
    IsNull,
    Lit,
    Logical,
    Not,
)
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, Assign, Filter, GroupKey, Plan, Source, Statistic

STATISTICS: tuple[Statistic, ...] = ("count", "sum", "mean", "var")
WHOLE = 1 << 30  # a chunk size no test frame reaches: one pass over all rows

floats = st.one_of(
    st.floats(-1e3, 1e3),
    st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 0.5, 2.5]),
)
labels = st.sampled_from(["a", "b", "c", "zz", None])  # "zz": not declared
mixed = st.sampled_from([1, 2.5, "x", None, 3, "b"])  # unorderable pairs compare false


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 40))
    text_dtype = draw(st.sampled_from(["str", "object", "category"]))
    frame: pd.DataFrame = pd.DataFrame(
        {
            "x": pd.Series(draw(st.lists(floats, min_size=n, max_size=n)), dtype="float64"),
            "y": pd.Series(
                draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n)), dtype="int64"
            ),
            "k": pd.Series(draw(st.lists(labels, min_size=n, max_size=n)), dtype=text_dtype),
            "g": pd.Series(
                draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype="int64"
            ),
            "b": pd.Series(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool),
            "m": pd.Series(draw(st.lists(mixed, min_size=n, max_size=n)), dtype=object),
        }
    )
    return frame


PREDICATES: tuple[Expr, ...] = (
    Compare(">", Col("x"), Lit(0.0)),
    Compare("<=", Col("y"), Lit(10)),
    Not(IsNull(Col("x"))),
    IsIn(Col("k"), ("a", "c")),
    Compare("<", Col("m"), Lit(2)),  # an object column mixing numbers and text
    Logical("|", Col("b"), Compare("==", Col("g"), Lit(1))),
    Lit(False),  # keeps nothing
    Compare(">", Col("z"), Lit(1.0)),  # a derived column
)

KEYS: tuple[GroupKey, ...] = (
    GroupKey("k", Col("k"), ("a", "b", "c")),
    GroupKey("g", Col("g"), (0, 1, 2)),
    GroupKey("bin", Bucket(Col("x"), (-10.0, -5.0, 0.0, 5.0, 10.0), clamp=True), (0, 1, 2, 3)),
    GroupKey("bin2", Bucket(Col("z"), (-1.0, 0.5, 3.0), clamp=False), (0, 1)),
    GroupKey("h", Col("h"), (1, 2, 3, 4)),  # a derived column
    GroupKey("const", Lit("a"), ("a", "b")),
)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    plan: Plan = Assign(Source("d"), "z", Arith("*", Col("x"), Lit(0.5)))
    plan = Assign(plan, "h", Arith("+", Col("g"), Lit(1)))
    for predicate in draw(st.lists(st.sampled_from(PREDICATES), max_size=3)):
        plan = Filter(plan, predicate)
    return plan


@st.composite
def measure_lists(draw: st.DrawFn, plan: Plan) -> tuple[Measure, ...]:
    """Measures as the mechanisms build them (quantum, centre), plus counts."""
    measures: list[Measure] = [Measure("rows"), Measure("nonnull", Col("k"))]
    for _ in range(draw(st.integers(1, 3))):
        statistic = draw(st.sampled_from(STATISTICS))
        expr = draw(st.sampled_from([Col("x"), Col("y"), Col("z"), Col("b")]))
        low = draw(st.floats(-1e4, 1e4))
        width = draw(st.floats(0.0, 1e4))
        agg = Aggregate(plan, statistic, expr, (low, low + width), (), "")
        measures += measures_for(agg)[0]
    return tuple(measures)


def _same(left: list[npt.NDArray[np.float64]], right: list[npt.NDArray[np.float64]]) -> None:
    assert len(left) == len(right)
    for a, b in zip(left, right, strict=True):
        assert a.dtype == b.dtype == np.float64
        assert a.tobytes() == b.tobytes()  # bit-identical, signs of zero included


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_chunked_equals_whole_frame(data: st.DataObject) -> None:
    frame = data.draw(frames())
    plan = data.draw(plans())
    measures = data.draw(measure_lists(plan))
    by = tuple(data.draw(st.lists(st.sampled_from(KEYS), max_size=3, unique_by=lambda k: k.name)))
    chunk_rows = data.draw(st.integers(1, 8))
    expected = PandasBackend(frame, chunk_rows=WHOLE).compute(plan, measures, by)
    chunked = PandasBackend(frame, chunk_rows=chunk_rows)
    _same(chunked.compute(plan, measures, by), expected)
    _same(chunked.compute(plan, measures, by), expected)  # again, from the key-code cache


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fused_sums_equal_the_general_path(data: st.DataObject) -> None:
    """A sum's one-read pass (blocks of a few rows here) gives the general path's bits.

    The general path builds the missing-value mask first and zeroes the
    missing rows; the fused pass finds them through the NaN they leave in a
    total and then falls back.  Counts of the same column (a mean's) follow.
    """
    frame = data.draw(frames())
    plan = data.draw(plans())
    measures = data.draw(measure_lists(plan))
    by = tuple(data.draw(st.lists(st.sampled_from(KEYS), max_size=2, unique_by=lambda k: k.name)))
    chunk_rows = data.draw(st.sampled_from([3, WHOLE]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunks, "_fused_total", lambda *args: None)
        expected = PandasBackend(frame, chunk_rows=chunk_rows).compute(plan, measures, by)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunks, "_BLOCK_ROWS", data.draw(st.integers(1, 5)))
        _same(PandasBackend(frame, chunk_rows=chunk_rows).compute(plan, measures, by), expected)


def test_fused_sum_skips_missing_values_and_counts_them_out() -> None:
    frame = pd.DataFrame({"x": [1.0, np.nan, 3.0, 100.0, np.nan], "k": list("aabbb")})
    measures = (Measure("nonnull", Col("x")), Measure("sum", Col("x"), 0.0, 10.0, 0.0, 1, 1.0))
    key = GroupKey("k", Col("k"), ("a", "b"))
    for plan in (Source("d"), Filter(Source("d"), Compare("<", Col("x"), Lit(50.0)))):
        for by in ((), (key,)):
            for block in (1, 2, 1 << 15):
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(chunks, "_BLOCK_ROWS", block)
                    count, total = PandasBackend(frame).compute(plan, measures, by)
                kept_big = plan == Source("d")  # the filter drops 100.0 (clamped to 10)
                if by:
                    assert count.tolist() == [1.0, 2.0 if kept_big else 1.0]
                    assert total.tolist() == [1.0, 13.0 if kept_big else 3.0]
                else:
                    assert count.tolist() == [3.0 if kept_big else 2.0]
                    assert total.tolist() == [14.0 if kept_big else 4.0]


def test_whole_frame_counts_are_the_exact_counts() -> None:
    """The reference of the property test is itself right on a small frame."""
    frame = pd.DataFrame({"k": ["a", "b", "a", None, "zz"], "x": [1.0, 2.0, np.nan, 4.0, 8.0]})
    key = GroupKey("k", Col("k"), ("a", "b"))
    backend = PandasBackend(frame, chunk_rows=2)
    counts, nonnull = backend.compute(
        Source("d"), (Measure("rows"), Measure("nonnull", Col("x"))), (key,)
    )
    assert counts.tolist() == [2.0, 1.0]
    assert nonnull.tolist() == [1.0, 1.0]


def test_sums_that_cancel_are_positive_zero() -> None:
    frame = pd.DataFrame({"x": [-0.2, 0.1, -0.3, -0.1]})  # every term rounds to -0.0
    measure = Measure("sum", Col("x"), -1.0, 1.0, 0.0, 1, 1.0)
    for chunk_rows in (1, 3, WHOLE):
        (total,) = PandasBackend(frame, chunk_rows=chunk_rows).compute(Source("d"), (measure,), ())
        assert total.tolist() == [0.0]
        assert not np.signbit(total).any()


def test_cached_codes_use_the_smallest_dtype_across_chunks() -> None:
    rng = np.random.default_rng(5)
    many = tuple(range(300))
    frame = pd.DataFrame(
        {
            "few": rng.choice(["p", "q", "r"], size=50),
            "many": rng.integers(0, 310, size=50),
            "x": rng.normal(size=50),
        }
    )
    keys = (GroupKey("few", Col("few"), ("p", "q")), GroupKey("many", Col("many"), many))
    measures = (Measure("rows"), Measure("sum", Col("x"), -3.0, 3.0, 0.0, 1, 2.0**-20))
    chunked = PandasBackend(frame, chunk_rows=7)
    result = chunked.compute(Source("d"), measures, keys)
    _same(result, PandasBackend(frame).compute(Source("d"), measures, keys))
    cached = {name: codes for (name, _), codes in chunked._codes.items()}
    assert cached["few"].dtype == np.uint8
    assert cached["many"].dtype == np.uint16
    assert not cached["many"].flags.writeable
    whole = PandasBackend(frame)
    whole.compute(Source("d"), measures, keys)
    assert {codes.dtype for codes in whole._codes.values()} == {np.dtype(np.intp)}


@pytest.mark.parametrize(
    ("slots", "n", "expected"),
    [
        (3, 10, np.uint8),
        (255, 10, np.uint8),
        (256, 10, np.uint16),
        (65_535, 10, np.uint16),
        (65_536, 10, np.uint32),
        (3, 4, np.intp),  # one chunk: intp, read by bincount without a conversion
    ],
)
def test_code_dtype(slots: int, n: int, expected: type[np.integer[Any]]) -> None:
    dtype = code_dtype(slots, n, chunk_rows=4)
    assert dtype == np.dtype(expected)
    assert np.iinfo(dtype).max >= slots


@pytest.mark.parametrize(
    ("n", "chunk_rows", "expected"),
    [
        (0, 4, [(0, 0)]),
        (4, 4, [(0, 4)]),
        (5, 4, [(0, 4), (4, 5)]),
        (9, 3, [(0, 3), (3, 6), (6, 9)]),
    ],
)
def test_chunk_bounds(n: int, chunk_rows: int, expected: list[tuple[int, int]]) -> None:
    assert chunk_bounds(n, chunk_rows) == expected


def test_combine_slots_leaves_its_inputs_alone() -> None:
    first = np.array([0, 1, 2, 2, 1], dtype=np.intp)
    second = np.array([3, 0, 1, 3, 2], dtype=np.intp)
    first.flags.writeable = False
    combined = combine_slots(first, second, 3)
    assert combined.tolist() == [0, 0, 4, 6, 2]
    assert first.tolist() == [0, 1, 2, 2, 1]
    assert second.tolist() == [3, 0, 1, 3, 2]


def test_chunk_rows_must_be_positive() -> None:
    with pytest.raises(ValueError, match="chunk_rows"):
        PandasBackend(pd.DataFrame({"x": [1.0]}), chunk_rows=0)
