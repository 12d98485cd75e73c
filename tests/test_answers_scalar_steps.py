"""Single released numbers keep their intervals through an analyst's next step.

Found from outside on data the project does not ship: ``m1 / m2`` of two
releases, ``s.corr(t)`` and the count and freq cells of
``describe(include="all")`` came back as bare numbers, and ``idxmax`` chose a
key among overlapping intervals without a word.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.errors import DPError
from dpframe.mechanisms.answers import DPValue, PlainResultWarning
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.calibration.noise_sums import half_width
from dpframe.mechanisms.moments.describe_family import KeyCounts

REGIONS = ["northeast", "midwest", "south", "west"]


def _frame(cps: pd.DataFrame, epsilon: float = 50) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, delta=1e-6, ledger=":memory:", name="scalar-steps")
    return session.private_frame(
        cps,
        bounds={"wage": (0, 5000), "education": (0, 20)},
        categories={"region": REGIONS, "smsa": ["yes", "no"]},
    )


# -- arithmetic of releases ------------------------------------------------------------


def test_two_releases_combine_into_a_number_with_an_interval(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    m1 = pf[pf.smsa == "yes"].wage.mean(epsilon=0.5)
    m2 = pf[pf.smsa == "no"].wage.mean(epsilon=0.5)
    for combined, value in ((m1 - m2, m1.value - m2.value), (m1 / m2, m1.value / m2.value)):
        assert isinstance(combined, DPValue)
        assert float(combined) == pytest.approx(value, rel=1e-12)
        low, high = dp.ci(combined)
        assert low < float(combined) < high and math.isfinite(high - low)
        assert "±" in repr(combined)
    # a difference of two independent means: the Bonferroni box of their 97.5% intervals
    (a_lo, a_hi), (b_lo, b_hi) = m1.ci(0.975), m2.ci(0.975)
    assert dp.ci(m1 - m2) == pytest.approx((a_lo - b_hi, a_hi - b_lo), rel=1e-9)


def test_a_count_scaled_and_shifted_keeps_its_exact_interval(cps: pd.DataFrame) -> None:
    count = _frame(cps).wage.count(epsilon=0.5)
    low, high = count.ci()
    assert dp.ci(count * 2) == pytest.approx((2 * low, 2 * high))
    assert dp.ci(1000 - count) == pytest.approx((1000 - high, 1000 - low))
    assert dp.ci(-count) == pytest.approx((-high, -low))
    assert dp.ci(count / 4) == pytest.approx((low / 4, high / 4))


def test_a_release_minus_itself_is_one_noise_not_two(cps: pd.DataFrame) -> None:
    mean = _frame(cps).wage.mean(epsilon=0.5)
    assert dp.ci(mean - mean) == (0.0, 0.0)
    assert dp.ci(mean + mean) == pytest.approx(tuple(2 * end for end in mean.ci()))


def test_a_release_and_a_grouped_result_combine_both_ways(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    overall = pf.wage.mean(epsilon=0.5)
    by_region = pf.groupby("region").wage.mean(epsilon=0.5)
    below, above = by_region - overall, overall - by_region
    assert below.dtype == "dp" and above.dtype == "dp"
    assert np.allclose(below.dp.raw, by_region.dp.raw - overall.value)
    assert np.allclose(dp.ci(above)["low"], -dp.ci(below)["high"])
    cell = by_region.iloc[0]
    assert isinstance(cell - overall, DPValue) and isinstance(overall - cell, DPValue)
    # a cell taken out of the grouped result, broadcast over it (this raised a ValueError)
    spread = cell - by_region
    assert spread.dtype == "dp" and dp.ci(spread).loc[by_region.index[0]].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("step", "what"),
    [
        (lambda r: r**2, r"\*\*"),
        (lambda r: 2**r, r"\*\*"),
        (lambda r: abs(r), r"abs\(\)"),
        (lambda r: r // 3, "//"),
        (lambda r: r % 3, "%"),
    ],
)
def test_steps_that_lose_the_interval_say_so(cps: pd.DataFrame, step: object, what: str) -> None:
    mean = _frame(cps).wage.mean(epsilon=0.5)
    with pytest.warns(PlainResultWarning, match=what + " cannot carry the released values'"):
        result = step(mean)  # type: ignore[operator]
    assert isinstance(result, float)


def test_the_warning_points_at_the_analysts_line(cps: pd.DataFrame) -> None:
    mean = _frame(cps).wage.mean(epsilon=0.5)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        mean**2
    assert [w.filename for w in seen] == [__file__]


# -- a correlation of two columns ---------------------------------------------------------


def test_a_pair_correlation_keeps_its_interval(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=1000)
    r = pf.wage.corr(pf.education, epsilon=200)
    assert isinstance(r, DPValue)
    low, high = dp.ci(r)
    truth = cps["wage"].clip(0, 5000).corr(cps["education"].clip(0, 20))
    assert low <= truth <= high and high - low < 0.05
    assert "±" in repr(r) and f"{r:.2f}" == f"{float(r):.2f}"
    c = pf.wage.cov(pf.education, epsilon=200)
    assert isinstance(c, DPValue) and dp.ci(c)[0] < float(c) < dp.ci(c)[1]


# -- idxmax among overlapping intervals ---------------------------------------------------


#: pandas 2 runs ``argmax`` inside ``idxmax`` with every warning ignored; pandas 3 does not.
IDXMAX_SILENCED = int(pd.__version__.split(".")[0]) < 3


def test_idxmax_warns_when_the_intervals_do_not_settle_the_largest(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    thin = pf.groupby("region").wage.mean(epsilon=1e-5)  # every interval starts at 0
    largest = "another cell's 95% interval overlaps its own"
    # the array's argmax and argmin (what idxmax and idxmin call) warn on any pandas
    with pytest.warns(PlainResultWarning, match=largest):
        assert thin.array.argmax() == int(np.nanargmax(thin.dp.raw))
    with pytest.warns(PlainResultWarning, match="is the smallest; dp.ci"):
        assert thin.array.argmin() == int(np.nanargmin(thin.dp.raw))
    if IDXMAX_SILENCED:  # pandas 2: the key, and the warning lost inside pandas
        assert thin.idxmax() == thin.index[int(np.nanargmax(thin.dp.raw))]
        return
    with pytest.warns(PlainResultWarning, match=largest):
        thin.idxmax()
    with pytest.warns(PlainResultWarning, match="is the smallest; dp.ci"):
        thin.idxmin()


def test_idxmax_is_silent_when_the_intervals_are_apart(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=1000)
    sharp = pf.groupby("region").size(epsilon=500)  # true counts 5,000+ apart at ±0.02
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sharp.idxmax() == cps["region"].value_counts().idxmax()
        assert sharp.idxmin() == cps["region"].value_counts().idxmin()


# -- describe(include="all"): a categorical column's count and freq ------------------------


def test_categorical_count_and_freq_carry_intervals(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    table = pf[["wage", "region", "smsa"]].describe(include="all", epsilon=2)
    intervals = dp.ci(table)
    for column in ("region", "smsa"):
        for row in ("count", "freq"):
            cell = table.loc[row, column]
            assert isinstance(cell, DPValue), (row, column, cell)
            low, high = intervals.loc[row, (column, "low")], intervals.loc[row, (column, "high")]
            assert low < float(cell) < high
            assert "±" in str(table[column])
        assert isinstance(table.loc["top", column], str)
        assert np.isnan(intervals.loc["unique", (column, "low")])
    assert float(table.loc["freq", "region"]) == pytest.approx(
        (cps["region"] == table.loc["top", "region"]).sum(), abs=100
    )


def test_key_counts_intervals_are_the_stated_ones() -> None:
    noise = NoiseSpec("laplace", Fraction(2), 1.0)
    cells = KeyCounts(column=1, noise=noise, keys=4, count=1000.0, freq=400.0)
    (c_lo, c_hi), (f_lo, f_hi) = cells.intervals(0.9)
    total = half_width(np.ones(4), (noise,) * 4, 0.1)
    assert (c_lo, c_hi) == pytest.approx((1000 - total, 1000 + total))
    each = noise.abs_quantile(1 - 0.1 / 4) + noise.rounding  # simultaneous over 4 keys
    assert (f_lo, f_hi) == pytest.approx((400 - each, 400 + each))
    shifted = KeyCounts(1, noise, 4, 1000.0, 400.0, rounded=(0.25, 0.5))
    (s_lo, _), (_, s_hi) = shifted.intervals(0.9)
    assert s_lo == pytest.approx(c_lo - 0.25) and s_hi == pytest.approx(f_hi + 0.5)


def test_categorical_count_and_freq_intervals_cover_the_truth() -> None:
    rows = pd.DataFrame({"colour": ["red"] * 30 + ["blue"] * 26 + ["green"] * 4})
    truth_count, truth_top = 60, {"red": 30, "blue": 26, "green": 4}
    covered = {"count": 0, "freq": 0}
    runs = 1000
    session = dp.Session(epsilon=runs, ledger=":memory:", name="key-counts")
    pf = session.private_frame(rows, categories={"colour": ["red", "blue", "green"]})
    for _ in range(runs):
        table = pf.describe(include="all", epsilon=0.5, fresh=True)
        cells: list[Any] = [table.loc[row, "colour"] for row in ("count", "freq", "top")]
        count, freq, top = cells
        assert isinstance(count, DPValue) and isinstance(freq, DPValue)
        (c_lo, c_hi), (f_lo, f_hi) = count.ci(0.8), freq.ci(0.8)
        covered["count"] += c_lo <= truth_count <= c_hi
        covered["freq"] += f_lo <= truth_top[str(top)] <= f_hi
    # 80% intervals (at least: the noise is discrete, and freq's holds for all 3 keys at
    # once). Below 0.733 by chance with probability < 1e-7 at 0.8 (5.3 sd of 1,000 trials).
    # Measured over 1,000 releases: count 0.847, freq 0.926; a count interval 30% too narrow
    # covers 0.68 and fails here (freq's, 0.83, would not: its bar is the safety one)
    assert covered["count"] / runs >= 0.733, covered
    assert covered["freq"] / runs >= 0.733, covered


def test_tiny_noise_sums_have_a_half_width() -> None:
    tiny = NoiseSpec(
        "laplace", Fraction(1, 10**5), 1.0
    )  # ε of 10⁵ on a count: exp(-1/b) underflows
    assert half_width(np.ones(4), (tiny,) * 4, 0.05) == pytest.approx(0.0, abs=1e-9)
    assert half_width(np.ones(30), (tiny,) * 30, 0.05) == pytest.approx(0.0, abs=1e-9)
    # ε of 2,000 over 5 parts: exp(-1/b) ≈ 1e-145, a width far below one grid step
    narrow = NoiseSpec("laplace", Fraction(1610613, 536870912), 1.0)
    assert 0 <= half_width(np.ones(8), (narrow,) * 8, 0.05) <= 1


def test_ci_of_a_plain_number_is_still_refused() -> None:
    with pytest.raises(DPError, match="ci\\(\\) needs a dpframe release"):
        dp.ci(0.5)


def test_a_categorical_summary_answered_again_from_the_ledger_keeps_its_cells(
    cps: pd.DataFrame,
) -> None:
    pf = _frame(cps)
    first = pf[["wage", "region"]].describe(include="all", epsilon=1)
    spent = pf.session.spent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the answer from the ledger says so
        again = pf[["wage", "region"]].describe(include="all", epsilon=1)
    assert pf.session.spent == spent  # answered from the ledger, free
    for row in ("count", "freq"):
        cell = again.loc[row, "region"]
        assert isinstance(cell, DPValue)
        assert cell.ci() == pytest.approx(first.loc[row, "region"].ci())
