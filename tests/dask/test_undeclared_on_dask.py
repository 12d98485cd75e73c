"""The undeclared cell's exact count on Dask: bit-identical to pandas, and equal to an oracle.

Random plans, keys (declared categories, several keys, buckets with and
without clamping) and partitionings from ``test_equivalence``; the count of
kept rows whose keys are all present and not all declared is checked against
a row-by-row oracle written from the definition, on the pandas backend (in
one piece and in chunks of 3 rows) and on Dask.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable
from typing import Any

import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from dpframe.backends import PandasBackend
from dpframe.backends.dask_backend import DaskBackend
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import Bucket
from dpframe.plan.nodes import Aggregate, GroupKey
from tests.dask.test_equivalence import (
    SETTINGS,
    _pandas_twin,
    _partitioned,
    aggregates,
    frames,
)

pytestmark = pytest.mark.usefixtures("dask_client")


def _state(value: Any, key: GroupKey) -> str:
    """``missing``, ``declared`` or ``outside`` for one row's key value, from the definition."""
    if isinstance(key.expr, Bucket):
        number = float(value) if value is not None and not pd.isna(value) else math.nan
        if math.isnan(number):
            return "missing"
        low, high = key.expr.edges[0], key.expr.edges[-1]
        return "declared" if key.expr.clamp or low <= number <= high else "outside"
    if value is None or pd.isna(value):
        return "missing"
    declared: tuple[Hashable, ...] = key.categories
    return "declared" if any(value == c for c in declared) else "outside"


def _oracle(frame: pd.DataFrame, agg: Aggregate) -> int:
    exprs = [k.expr.operand if isinstance(k.expr, Bucket) else k.expr for k in agg.by]
    values, mask = PandasBackend(frame).row_values(agg.plan, exprs)
    n = len(frame)
    columns = [v.tolist() if isinstance(v, pd.Series) else [v] * n for v in values]
    total = 0
    for row in range(n):
        if mask is not None and not mask[row]:
            continue
        states = [_state(column[row], key) for column, key in zip(columns, agg.by, strict=True)]
        if "missing" not in states and "outside" in states:
            total += 1
    return total


@SETTINGS
@given(frame=frames(), agg=aggregates(), npartitions=st.integers(1, 5), empty=st.booleans())
def test_the_undeclared_count_is_exact_and_identical_on_dask(
    frame: pd.DataFrame, agg: Aggregate, npartitions: int, empty: bool
) -> None:
    measures, _ = measures_for(agg)
    twin = _pandas_twin(frame, empty)
    dask_backend = DaskBackend(_partitioned(frame, npartitions, empty))
    try:
        expected = PandasBackend(twin).compute(agg.plan, measures, agg.by, True)
    except Exception as exc:  # e.g. a constant 0.0 / 0.0: Dask must fail the same way
        event(f"pandas raised {type(exc).__name__}")
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            dask_backend.compute(agg.plan, measures, agg.by, True)
        return
    chunked = PandasBackend(twin, chunk_rows=3).compute(agg.plan, measures, agg.by, True)
    got = dask_backend.compute(agg.plan, measures, agg.by, True)
    plain = PandasBackend(twin).compute(agg.plan, measures, agg.by)
    width = len(measures) + (1 if agg.by else 0)
    assert len(got) == len(chunked) == len(expected) == width
    for a, b, c in zip(got, chunked, expected, strict=True):
        assert a.tobytes() == b.tobytes() == c.tobytes(), (a, b, c)
    for a, b in zip(plain, expected, strict=False):  # the declared cells are unchanged
        assert a.tobytes() == b.tobytes()
    if agg.by:
        outside = int(expected[-1][0])
        event(f"undeclared rows: {'some' if outside else 'none'}")
        assert outside == _oracle(twin, agg)
