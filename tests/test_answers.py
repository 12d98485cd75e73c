"""The ``dp`` dtype: released numbers keep their uncertainty through pandas (issue 30).

Exactness of the forms (``s - s`` is exact, a margin sums each noise once),
display in plain Python, the steps pandas takes with the dtype, and
statistical coverage of propagated intervals: each holds at the suite's
false-failure rule (a binomial bound at 1e-6), and the same check rejects
intervals computed for noise 30% smaller (its power).
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.mechanisms.answers import Block, DPArray, DPValue, Forms, PlainResultWarning
from dpframe.mechanisms.calibration.additive import NoiseSpec

LAPLACE = NoiseSpec("laplace", Fraction(10), 1.0)
GAUSS = NoiseSpec("gaussian", Fraction(400), 1.0)  # σ = 20
KEYS = pd.Index(["south", "midwest", "northeast", "west"], name="region")
TRUTH = np.array([8773.0, 6863.0, 6441.0, 6091.0])
ALPHA = 1e-6
TRIALS = 4_000


def _counts(values: np.ndarray, spec: NoiseSpec = LAPLACE) -> pd.Series:
    block = Block(len(values), noise=spec)
    counts: pd.Series = pd.Series(
        DPArray.of_block(values, block, integer=True), index=KEYS, name="count"
    )
    return counts


def _arr(series: pd.Series) -> DPArray:
    array = series.array
    assert isinstance(array, DPArray)
    return array


def _draws(spec: NoiseSpec, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Test noise (numpy: test data, not privacy noise) of ``spec``, in value units."""
    if spec.kind == "laplace":
        p = 1 - np.exp(-1 / float(spec.parameter))
        return (rng.geometric(p, shape) - rng.geometric(p, shape)) * spec.grid
    sigma = np.sqrt(float(spec.parameter))
    support = np.arange(-int(12 * sigma), int(12 * sigma) + 1)
    weights = np.exp(-(support**2) / (2 * sigma**2))
    return rng.choice(support, size=shape, p=weights / weights.sum()) * spec.grid


def test_cells_show_value_and_half_width_in_plain_python() -> None:
    s = _counts(TRUTH)
    text = str(s)
    assert "8,773 ± 30" in text and "dtype: dp" in text
    assert "8,773 ± 30" in s.to_string()
    assert "8,773 ± 30" in pd.DataFrame({"n": s}).to_html()
    assert repr(s.iloc[0]) == "8,773 ± 30"


@pytest.mark.parametrize(
    ("step", "rows"),
    [
        (lambda s: s.sort_values(), ["west", "northeast", "midwest", "south"]),
        (lambda s: s.sort_index(), ["midwest", "northeast", "south", "west"]),
        (lambda s: s.head(2), ["south", "midwest"]),
        (lambda s: s.tail(1), ["west"]),
        (lambda s: s.nlargest(2), ["south", "midwest"]),
        (lambda s: s.nsmallest(1), ["west"]),
        (lambda s: s[s > 6500], ["south", "midwest"]),
        (lambda s: s.loc[["west", "south"]], ["west", "south"]),
        (lambda s: s.iloc[[3, 0]], ["west", "south"]),
        (lambda s: s.rename("n"), ["south", "midwest", "northeast", "west"]),
    ],
)
def test_selection_and_order_keep_each_cells_own_interval(step: object, rows: list[str]) -> None:
    s = _counts(TRUTH)
    out = step(s)  # type: ignore[operator]
    assert out.dtype == "dp" and list(out.index) == rows
    low, high = _arr(out).intervals(0.95)
    own_low, own_high = _arr(s).intervals(0.95)
    position = {k: i for i, k in enumerate(KEYS)}
    picked = [position[r] for r in rows]
    np.testing.assert_array_equal(low, own_low[picked])
    np.testing.assert_array_equal(high, own_high[picked])


def test_a_difference_with_itself_is_exact_and_a_sum_counts_each_noise_twice() -> None:
    s = _counts(TRUTH)
    low, high = _arr(s - s).intervals(0.95)
    np.testing.assert_array_equal(low, 0.0)
    np.testing.assert_array_equal(high, 0.0)
    doubled = _arr(s + s).intervals(0.95)
    times_two = _arr(s * 2).intervals(0.95)
    np.testing.assert_allclose(doubled[0], times_two[0])
    np.testing.assert_allclose(doubled[1], times_two[1])


def test_concat_unstack_transpose_and_reindex_keep_the_dtype() -> None:
    s = _counts(TRUTH)
    both = pd.concat([s, s])
    assert both.dtype == "dp" and len(both) == 8
    assert (both.iloc[4:] - s.to_numpy()).abs().max() == 0  # released values unchanged
    wide = pd.Series(s.array, index=pd.MultiIndex.from_product([["a", "b"], ["p", "q"]])).unstack()
    assert list(wide.dtypes) == ["dp", "dp"] and "± 30" in wide.to_string()
    assert "± 30" in pd.DataFrame({"x": s, "y": s}).T.to_string()
    missing = s.reindex(["west", "mars"])
    assert np.isnan(_arr(missing).intervals(0.95)[0][1])


def test_steps_that_cannot_carry_intervals_warn_and_return_plain_numbers() -> None:
    s = _counts(TRUTH)
    with pytest.warns(PlainResultWarning, match="cannot carry the released values"):
        logged = np.log(s)
    assert logged.dtype == np.float64
    with pytest.warns(PlainResultWarning, match=r"max\(\) cannot carry"):
        assert s.max() == 8773.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert s.idxmax() == "south"  # the argmax of released values: no interval needed


def test_a_public_constant_and_an_exact_cell_have_no_interval() -> None:
    exact = DPArray([5.0], Forms.exact(1))
    low, high = exact.intervals(0.9)
    assert low.tolist() == [5.0] and high.tolist() == [5.0]
    assert isinstance(_counts(TRUTH).iloc[0] + 1, DPValue)


def _shrunk(spec: NoiseSpec, shrink: Fraction) -> NoiseSpec:
    """``spec`` with its scale times ``shrink`` (σ² times its square for the Gaussian)."""
    factor = shrink**2 if spec.kind == "gaussian" else shrink
    return NoiseSpec(spec.kind, spec.parameter * factor, spec.grid)


def _misses(
    build: object, truth: np.ndarray, spec: NoiseSpec, level: float, shrink: Fraction = Fraction(1)
) -> np.ndarray:
    """Per output cell, the trials whose interval (noise claimed ``shrink`` x) misses the truth.

    Every interval is computed as a user would get it, from a released Series;
    an additive form's interval is its value ± a half-width that depends only
    on the public noise, so for those the half-width of the first trial serves
    them all (checked), and each trial's miss is read from its noise alone.
    """
    rng = np.random.default_rng(11)  # test data only
    noise = _draws(spec, (TRIALS, len(truth)), rng)
    claimed = _shrunk(spec, shrink)
    first, exact = build(_counts(truth + noise[0], claimed), truth)  # type: ignore[operator]
    low, high = _arr(first).intervals(level)
    values = first.to_numpy(dtype=float)
    if np.allclose(values - low, high - values) and first.array.forms.blocks[0].noise:
        half = high - values
        second, _ = build(_counts(truth + noise[1], claimed), truth)  # type: ignore[operator]
        s_low, _ = _arr(second).intervals(level)
        assert np.allclose(second.to_numpy(dtype=float) - s_low, half)
        shown = np.array(
            [build(_counts(truth + n, claimed), truth)[0].to_numpy(dtype=float) for n in noise]  # type: ignore[operator]
        )
        missed: np.ndarray = (np.abs(shown - exact) > half).sum(axis=0)
        return missed
    misses = np.zeros(len(exact), dtype=int)
    for draw in noise:
        value, exact = build(_counts(truth + draw, claimed), truth)  # type: ignore[operator]
        low, high = _arr(value).intervals(level)
        misses += ((exact < low) | (exact > high)).astype(int)
    return misses


def _sum_dp(s: pd.Series, truth: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    total = pd.Series([s.iloc[0] + s.iloc[1]], dtype="dp")
    return total, np.array([truth[0] + truth[1]])


def _difference(s: pd.Series, truth: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    return pd.Series([s.iloc[0] - s.iloc[3]], dtype="dp"), np.array([truth[0] - truth[3]])


def _cumsum(s: pd.Series, truth: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    return s.cumsum(), np.cumsum(truth)


def _ratio(s: pd.Series, truth: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    return pd.Series([s.iloc[0] / s.iloc[1]], dtype="dp"), np.array([truth[0] / truth[1]])


CASES = {"sum": _sum_dp, "difference": _difference, "cumsum": _cumsum}


@pytest.mark.slow
@pytest.mark.parametrize("spec", [LAPLACE, GAUSS], ids=["laplace", "gaussian"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_propagated_intervals_cover_and_the_check_has_power(spec: NoiseSpec, name: str) -> None:
    level = 0.9
    limit = stats.binom.ppf(1 - ALPHA, TRIALS, 1 - level)  # false failure below 1e-6 per cell
    assert (_misses(CASES[name], TRUTH, spec, level) <= limit).all()
    assert (_misses(CASES[name], TRUTH, spec, level, Fraction(7, 10)) > limit).any()


@pytest.mark.slow
def test_a_ratio_with_a_denominator_near_three_sigma_covers() -> None:
    """Fieller-hard case: the denominator's truth is 3σ from 0 (σ = 20 Gaussian)."""
    level = 0.9
    truth = np.array([150.0, 60.0, 1.0, 1.0])
    limit = stats.binom.ppf(1 - ALPHA, TRIALS, 1 - level)
    assert (_misses(_ratio, truth, GAUSS, level) <= limit).all()


def test_a_row_added_from_plain_numbers_has_no_interval_not_a_zero_width_one() -> None:
    """pandas hands ``df.loc["All"] = df.sum()`` to the column as floats: the noise is lost.

    Those cells used to be exact (``dp.ci`` gave ``[20932, 20932]`` for a sum of four
    noisy counts); now they say their noise is unknown, and ``dp.ci`` names the way that
    keeps every interval (through ``.T``), which is checked to work.
    """
    session = dp.Session(epsilon=10, ledger=":memory:")
    frame = pd.DataFrame({"k": ["a", "b"] * 50, "j": ["x"] * 60 + ["y"] * 40})
    pf = session.private_frame(frame, categories={"k": ["a", "b"], "j": ["x", "y"]})
    table = dp.crosstab(pf["k"], pf["j"], epsilon=1)
    totals = table.sum()
    assert dp.ci(totals).notna().all().all()  # the sum of released cells has its interval
    added = table.copy()
    added.loc["All"] = totals
    with pytest.raises(dp.DPError, match=r"a plain number placed in a released table"):
        dp.ci(added)
    through = table.T
    through["All"] = through.sum(axis=1)
    kept = dp.ci(through.T)
    low, high = kept.loc["All", ("x", "low")], kept.loc["All", ("x", "high")]
    assert low < float(through.T.loc["All", "x"]) < high  # the noise of two counts, kept
