"""The sensitivity of a sum measure equals the backend's transform of the bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.errors import SchemaError
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, Source

finite = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)
ints = st.integers(min_value=-(2**60), max_value=2**60)


def _backend_transform(
    bound: float, low: float, high: float, center: float, power: int, q: float
) -> float:
    """What the backend does to one value (numpy, as in dpframe/backends/chunks.py)."""
    terms = np.clip(np.array([bound], dtype=np.float64), low, high)
    terms -= center
    if power == 2:
        with np.errstate(over="ignore"):
            terms = terms * terms
    terms *= 1.0 / q
    return float(np.rint(terms)[0])


@settings(max_examples=400, deadline=None)
@given(st.one_of(finite, ints), st.one_of(finite, ints), st.sampled_from(["sum", "mean", "var"]))
def test_sensitivity_is_the_largest_transformed_bound(a: float, b: float, statistic: str) -> None:
    low, high = min(a, b), max(a, b)
    agg = Aggregate(Source("d"), statistic, Col("x"), (low, high), (), "q")  # type: ignore[arg-type]
    try:
        measures, sens = measures_for(agg)
    except SchemaError:  # too wide: sums could overflow
        return
    for measure, s in zip(measures, sens, strict=True):
        if measure.kind != "sum":
            continue
        assert measure.lower == low and measure.upper == high
        ends = [
            abs(_backend_transform(x, low, high, measure.center, measure.power, measure.quantum))
            for x in (low, high)
        ]
        assert s == max(int(max(ends)), 1)
        assert math.isfinite(measure.quantum) and measure.quantum > 0


def test_overflowing_squares_are_refused() -> None:
    agg = Aggregate(Source("d"), "var", Col("x"), (-1e300, 1e300), (), "q")
    with pytest.raises(SchemaError, match=r"too wide for var\(\): sums could overflow"):
        measures_for(agg)
