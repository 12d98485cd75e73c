"""Sums near the float64 and int64 limits are correct or refused before charging, never wrapped.

tests/test_aggregates.py already covers bounds of 1e300 (refused) and a sum of
±2**62 and 1e290 values (exact); these add the true int64/uint64 limits, where
numpy's own integer sum wraps, grouped and Gaussian releases, means and
variances of extreme integers, and float bounds at the float64 maximum.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min
U64_MAX = np.iinfo(np.uint64).max
F64_MAX = sys.float_info.max


def _session(accounting: str | None = None) -> dp.Session:
    return dp.Session(
        epsilon=1e12, delta=0.5 if accounting else 0, ledger=":memory:", accounting=accounting
    )


def test_numpy_itself_wraps_these_sums() -> None:
    """The premise: a plain int64 sum of these columns wraps around."""
    with np.errstate(over="ignore"):
        assert np.array([I64_MAX] * 4, dtype=np.int64).sum() < 0
        assert np.array([I64_MIN] * 2, dtype=np.int64).sum() == 0


@pytest.mark.parametrize(
    ("values", "dtype", "bounds"),
    [
        ([I64_MAX] * 4, np.int64, (0.0, 2.0**63)),
        ([I64_MIN] * 4, np.int64, (-(2.0**63), 0.0)),
        ([I64_MAX, I64_MAX, I64_MIN], np.int64, (-(2.0**63), 2.0**63)),
        ([U64_MAX] * 3, np.uint64, (0.0, 2.0**64)),
    ],
)
@pytest.mark.parametrize("accounting", [None, "zcdp"])
def test_integer_sums_at_the_limits_are_correct(
    values: list[int], dtype: type, bounds: tuple[float, float], accounting: str | None
) -> None:
    frame = pd.DataFrame({"n": np.array(values, dtype=dtype), "g": ["k"] * len(values)})
    pf = _session(accounting).private_frame(frame, bounds={"n": bounds}, categories={"g": ["k"]})
    exact = float(sum(int(v) for v in values))  # Python ints: no wrap
    budget: dict[str, Any] = {"rho": 1e10} if accounting else {"epsilon": 1e8}
    release = pf["n"].sum(**budget)
    total = float(release)
    grouped = pf.groupby("g")["n"].sum(**budget)
    # A wrapped sum is off by about 2**64; the noise (σ ≈ 6.5e13 under zCDP here)
    # exceeds 20 scales with probability below 1e-8.
    tolerance = max(1e-5 * 2.0**64, 20 * release.scale)
    for released in (total, float(grouped["k"])):
        assert np.isfinite(released)
        assert abs(released - exact) <= tolerance
    mean = float(pf["n"].mean(**budget))
    assert bounds[0] <= mean <= bounds[1]
    assert mean == pytest.approx(exact / len(values), rel=1e-4, abs=1e-4 * 2.0**63)
    var = float(pf["n"].var(**budget))
    assert 0 <= var <= ((bounds[1] - bounds[0]) / 2) ** 2 and np.isfinite(var)


@pytest.mark.parametrize("statistic", ["sum", "mean", "var", "std"])
@pytest.mark.parametrize(
    "bounds", [(0.0, F64_MAX), (-F64_MAX, F64_MAX), (-F64_MAX, 0.0), (0.0, 1e308)]
)
def test_bounds_at_the_float_maximum_are_refused_before_charging(
    statistic: str, bounds: tuple[float, float]
) -> None:
    session = _session()
    frame = pd.DataFrame({"x": [F64_MAX, F64_MAX, -F64_MAX, np.inf]})
    pf = session.private_frame(frame, bounds={"x": bounds})
    with pytest.raises(dp.SchemaError, match="overflow"):
        getattr(pf["x"], statistic)(epsilon=1)
    assert session.ledger.empty
    assert session.spent == dp.Budget(0)


def test_float_values_at_the_maximum_within_safe_bounds_are_clamped_not_overflowed() -> None:
    pf = _session().private_frame(
        pd.DataFrame({"x": [F64_MAX, -F64_MAX, np.inf, -np.inf, 1e200]}),
        bounds={"x": (-1e200, 1e200)},
    )
    assert float(pf["x"].sum(epsilon=1e8)) == pytest.approx(1e200, rel=1e-5)
    assert float(pf["x"].count(epsilon=1e8)) == pytest.approx(5, abs=0.01)
    hist = pf["x"].hist(bins=[-F64_MAX, 0.0, F64_MAX], epsilon=1e8)
    # [-max, 0) holds -max; [0, max] holds 1e200 and max; +-inf lie outside the finite edges.
    assert hist.to_numpy() == pytest.approx([1, 2], abs=0.01)
