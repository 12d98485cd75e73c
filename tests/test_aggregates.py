"""Aggregates: correct answers (at a huge epsilon), grouping rules, NaN/inf handling, releases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.backends import PandasBackend
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, Source

BIG = 1e6  # epsilon so large that the noise is far below the tolerances used


@pytest.fixture
def rich(tmp_path: object) -> dp.Session:
    return dp.Session(epsilon=1e9, ledger=":memory:")


def test_scalar_aggregates_match_pandas(rich: dp.Session, cps: pd.DataFrame) -> None:
    pf = rich.private_frame(cps, bounds={"wage": (0, 2000), "education": (0, 20)})
    clipped = cps["wage"].clip(0, 2000)
    assert float(pf.count(epsilon=BIG)) == pytest.approx(len(cps), abs=1)
    assert float(pf["wage"].count(epsilon=BIG)) == pytest.approx(len(cps), abs=1)
    assert float(pf["wage"].sum(epsilon=BIG)) == pytest.approx(clipped.sum(), rel=1e-6)
    assert float(pf["wage"].mean(epsilon=BIG)) == pytest.approx(clipped.mean(), rel=1e-6)
    assert float(pf["wage"].var(epsilon=BIG)) == pytest.approx(clipped.var(ddof=0), rel=1e-5)
    assert float(pf["wage"].std(epsilon=BIG)) == pytest.approx(clipped.std(ddof=0), rel=1e-5)
    high = pf[pf["education"] >= 16]
    expected = clipped[cps["education"] >= 16].mean()
    assert float(high["wage"].mean(epsilon=BIG)) == pytest.approx(expected, rel=1e-6)


def test_derived_columns_and_interval_bounds(rich: dp.Session, cps: pd.DataFrame) -> None:
    pf = rich.private_frame(cps, bounds={"wage": (0, 2000), "education": (0, 20)})
    derived = pf.assign(weekly_k=pf["wage"] / 1000, years=pf["education"] + 1)
    assert derived.bounds["weekly_k"] == (0.0, 2.0)
    assert derived.bounds["years"] == (1.0, 21.0)
    got = float(derived["weekly_k"].mean(epsilon=BIG))
    assert got == pytest.approx(cps["wage"].clip(0, 2000).mean() / 1000, rel=1e-5)
    redefined = pf.assign(wage=pf["wage"] * 2)
    assert redefined.bounds["wage"] == (0.0, 4000.0)
    assert float(redefined["wage"].sum(epsilon=BIG)) == pytest.approx(
        (cps["wage"] * 2).clip(0, 4000).sum(), rel=1e-6
    )
    flag = pf.assign(college=pf["education"] >= 16)
    assert flag.column_info("college").kind == "boolean"
    share = float(flag["college"].mean(epsilon=BIG))
    assert share == pytest.approx((cps["education"] >= 16).mean(), abs=1e-4)
    by_flag = flag.groupby("college")["wage"].mean(epsilon=BIG)
    assert list(by_flag.index) == [False, True]


def test_expression_operators(rich: dp.Session, cps: pd.DataFrame) -> None:
    pf = rich.private_frame(cps, bounds={"wage": (0, 2000)})
    cond = (pf["region"] == "south") & ~(pf["smsa"] == "no") | pf["wage"].between(100, 110)
    expected = ((cps["region"] == "south") & ~(cps["smsa"] == "no")) | cps["wage"].between(100, 110)
    assert float(pf[cond].count(epsilon=BIG)) == pytest.approx(expected.sum(), abs=1)
    isin = pf[pf["region"].isin(["west", "south"])].count(epsilon=BIG)
    assert float(isin) == pytest.approx(cps["region"].isin(["west", "south"]).sum(), abs=1)
    via_col = pf[dp.col("wage") > 1000].count(epsilon=BIG)
    assert float(via_col) == pytest.approx((cps["wage"] > 1000).sum(), abs=1)
    clipped = (pf["wage"] - 500).abs().clip(0, 300)
    assert clipped.bounds == (0.0, 300.0)
    assert float(clipped.sum(epsilon=BIG)) == pytest.approx(
        (cps["wage"] - 500).abs().clip(0, 300).sum(), rel=1e-6
    )


def test_groupby_returns_every_declared_key_in_order(rich: dp.Session) -> None:
    df = pd.DataFrame({"k": ["b", "b", "zzz", "a"], "x": [1.0, 3.0, 100.0, 5.0]})
    pf = rich.private_frame(df, bounds={"x": (0, 10)}, categories={"k": ["c", "b", "a"]})
    counts = pf.groupby("k").count(epsilon=BIG)
    assert list(counts.index) == ["a", "b", "c"]  # pandas' order (sorted), every declared key
    assert counts.round().tolist() == [1.0, 2.0, 0.0]
    means = pf.groupby("k")["x"].mean(epsilon=BIG)
    assert means["b"] == pytest.approx(2.0, abs=1e-4)
    assert means["a"] == pytest.approx(5.0, abs=1e-4)
    assert np.isnan(means["c"])  # empty group: <NA>, as pandas (issue 30), never a bound
    assert "too thin" in means.attrs["dpframe"].notes[0]
    variances = pf.groupby("k")["x"].var(epsilon=BIG)
    assert variances["b"] == pytest.approx(1.0, abs=1e-3)
    assert np.isnan(variances["c"])
    intervals = dp.ci(means).loc[["b", "a"]]
    assert list(intervals.columns) == ["low", "high"]
    shown = means.loc[["b", "a"]]
    assert (intervals["low"] <= shown).all() and (shown <= intervals["high"]).all()


def test_a_categorical_column_keeps_its_categories_order(rich: dp.Session) -> None:
    order = ["low", "mid", "high"]
    df = pd.DataFrame({"k": pd.Categorical(["mid", "high", "high"], categories=order)})
    df["x"] = [1.0, 2.0, 3.0]
    pf = rich.private_frame(df, bounds={"x": (0, 10)}, categories={"k": order})
    counts = pf.groupby("k").size(epsilon=BIG)
    assert list(counts.index) == order  # pandas groups a Categorical in its categories' order
    assert list(counts.index) == list(df.groupby("k", observed=False).size().index)
    plain = rich.private_frame(df.astype({"k": object}), categories={"k": order})
    assert list(plain.groupby("k").size(epsilon=BIG).index) == ["high", "low", "mid"]


def test_groupby_several_keys(rich: dp.Session, cps: pd.DataFrame) -> None:
    pf = rich.private_frame(cps, categories={"region": ["south", "west"], "smsa": ["yes", "no"]})
    result = pf.groupby(["region", "smsa"]).size(epsilon=BIG)
    assert isinstance(result.index, pd.MultiIndex)
    expected = cps.groupby(["region", "smsa"]).size()
    for key in result.index:
        assert result[key] == pytest.approx(expected[key], abs=1)


def test_nan_and_inf_rows(rich: dp.Session) -> None:
    df = pd.DataFrame({"x": [1.0, np.nan, np.inf, -np.inf, 2.0]})
    pf = rich.private_frame(df, bounds={"x": (0, 10)})
    assert float(pf["x"].count(epsilon=BIG)) == pytest.approx(4, abs=0.01)
    assert float(pf["x"].sum(epsilon=BIG)) == pytest.approx(13, abs=0.01)
    assert float(pf.count(epsilon=BIG)) == pytest.approx(5, abs=0.01)


def _exact(df: pd.DataFrame, statistic: str, bounds: tuple[float, float]) -> list[float]:
    backend = PandasBackend(df)
    agg = Aggregate(Source("d"), statistic, Col("x"), bounds, (), "")  # type: ignore[arg-type]
    measures, _ = measures_for(agg)
    return [float(v[0]) for v in backend.compute(agg.plan, measures, ())]


extreme = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308, 0.0]),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=20),
    extreme,
    st.floats(-1e4, 1e4),
    st.floats(0, 1e4),
    st.sampled_from(["sum", "mean", "var"]),
)
def test_one_row_moves_each_measure_by_at_most_its_sensitivity(
    values: list[float], extra: float, low: float, width: float, statistic: str
) -> None:
    """Clamping property: adding any one row (NaN, ±inf, huge) respects the sensitivity."""
    bounds = (low, low + width)
    base = pd.DataFrame({"x": [*values, 0.5]})
    plus = pd.DataFrame({"x": [*values, 0.5, extra]})
    agg = Aggregate(Source("d"), statistic, Col("x"), bounds, (), "")  # type: ignore[arg-type]
    _, sensitivities = measures_for(agg)
    for a, b, sens in zip(
        _exact(base, statistic, bounds), _exact(plus, statistic, bounds), sensitivities, strict=True
    ):
        assert math.isfinite(a) and math.isfinite(b)
        assert abs(a - b) <= sens
        assert a == int(a) and b == int(b)


def test_release_behaves_as_a_number(rich: dp.Session, cps: pd.DataFrame) -> None:
    pf = rich.private_frame(cps)
    release = pf.count(epsilon=BIG)
    value = release.value
    assert float(release) == value
    assert release + 1 == value + 1
    assert 2 * release == 2 * value
    assert release / 2 == value / 2
    assert f"{release:.1f}" == f"{value:.1f}"
    assert release > 0 and release >= value and release == value
    assert release**2 == value**2 and 1.0001**release == 1.0001**value
    assert release // 7 == value // 7 and release % 7 == value % 7
    assert bool(release) == bool(value)
    assert float(np.sqrt(release)) == pytest.approx(math.sqrt(value))
    assert release.cost == dp.Budget(BIG)
    assert release.mechanism == "discrete Laplace"
    low, high = release.ci(0.95)
    assert low <= value <= high
    assert release.ci(0.5)[1] - release.ci(0.5)[0] <= high - low
    assert "95% CI" in repr(release) and "<b>" in release._repr_html_()
    with pytest.raises(ValueError, match="level"):
        release.ci(1.5)


@pytest.mark.fresh_releases  # repeats one request to sample its noise: new releases
def test_outputs_lie_on_a_power_of_two_grid(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=100, ledger=":memory:")
    pf = session.private_frame(cps, bounds={"wage": (0, 5000)})
    for _ in range(5):
        value = float(pf["wage"].sum(epsilon=0.3))
        mantissa, exponent = math.frexp(value)
        grid = 2.0 ** (math.floor(math.log2(min(5000 / 0.3, 5000))) - 10)
        assert value / grid == int(value / grid)
        assert exponent < 60 and mantissa != 0


def test_intervals_follow_a_changed_series(rich: dp.Session, cps: pd.DataFrame) -> None:
    """Issue 30: a transformed release keeps its intervals (before, dp.ci refused it)."""
    pf = rich.private_frame(
        cps, bounds={"wage": (0, 5000)}, categories={"region": ["south", "west"]}
    )
    result = pf.groupby("region")["wage"].mean(epsilon=BIG)
    own = dp.ci(result)
    assert len(own) == 2
    scaled = dp.ci(result * 1000 + 7)
    np.testing.assert_allclose(scaled["low"], own["low"] * 1000 + 7)
    np.testing.assert_allclose(scaled["high"], own["high"] * 1000 + 7)
    first = dp.ci(result.iloc[:1])
    assert first.index.tolist() == ["south"]
    assert first.loc["south"].tolist() == own.loc["south"].tolist()
    zero = dp.ci(result * 0)
    assert (zero["low"] == 0).all() and (zero["high"] == 0).all()


@pytest.mark.parametrize(
    ("bounds", "statistic"),
    [((0, 1e300), "sum"), ((-1e299, 1e299), "mean"), ((0, 1e200), "var")],
)
def test_bounds_that_could_overflow_are_refused_before_charging(
    bounds: tuple[float, float], statistic: str
) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": [1e300, 1e300]}), bounds={"x": bounds})
    with pytest.raises(dp.SchemaError, match="overflow"):
        getattr(pf["x"], statistic)(epsilon=0.5)
    assert session.ledger.empty


def test_large_but_safe_bounds_give_finite_exact_sums() -> None:
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    big = 1e290
    pf = session.private_frame(pd.DataFrame({"x": [big, big, -big]}), bounds={"x": (-big, big)})
    assert float(pf["x"].sum(epsilon=1e8)) == pytest.approx(big, rel=1e-6)
    ints = pd.DataFrame({"n": np.array([2**62, 2**62, -(2**62)], dtype=np.int64)})
    pf_int = session.private_frame(ints, bounds={"n": (-(2.0**63), 2.0**63)})
    assert float(pf_int["n"].sum(epsilon=1e8)) == pytest.approx(2.0**62, rel=1e-6)


@pytest.mark.fresh_releases  # repeats one request to sample its noise (issue 31)
def test_neighbours_share_one_output_grid(cps: pd.DataFrame) -> None:
    """Mironov 2012: D and D' (one extra row at the bound) release on the same public grid.

    Every output is an integer multiple of a grid fixed by public facts only, so no
    output value (nor any float a few ulps from one) is reachable from just one of them.
    """
    session = dp.Session(epsilon=1e3, ledger=":memory:")
    plus = pd.concat([cps, cps.iloc[:1].assign(wage=5000.0)], ignore_index=True)
    frames = [session.private_frame(data, bounds={"wage": (0, 5000)}) for data in (cps, plus)]
    grid = 2.0 ** (math.floor(math.log2(5000)) - 10)

    def noise_scale(pf: dp.PrivateFrame) -> float:
        explained = session.explain(lambda: pf["wage"].sum(epsilon=1.0))
        return float(explained.measures[0].scale)

    scales = {noise_scale(f) for f in frames}
    assert len(scales) == 1  # the noise, and so the grid, depends on public facts only
    for pf in frames:
        for _ in range(20):
            value = float(pf["wage"].sum(epsilon=1.0))
            assert value / grid == int(value / grid)
            assert np.nextafter(value, np.inf) / grid != int(np.nextafter(value, np.inf) / grid)
