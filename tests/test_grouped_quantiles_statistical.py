"""Statistical tests of grouped quantiles: the selection probabilities are the exponential
mechanism's (permute-and-flip), the bulk coins are exact, and grouped medians land within
the stated rank error at the stated rate.  Every test fails a correct implementation with
probability below 1e-7 (``ALPHA``)."""

from __future__ import annotations

import math
from collections import Counter
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.audit.exact_outputs import permute_and_flip_distribution
from dpframe.mechanisms.quantiles.quantiles import QUANTILE_BINS, rank_error
from dpframe.mechanisms.selection import grouped_selection
from dpframe.mechanisms.selection.grouped_selection import exp_coins, permute_and_flip_rows
from dpframe.noise import SecureRandom
from tests.stats_helpers import ALPHA, pooled_pvalue

RNG = SecureRandom()


def _chi2(draws: np.ndarray, probabilities: list[float]) -> float:
    observed = np.bincount(draws, minlength=len(probabilities)).astype(float)
    expected = np.asarray(probabilities, dtype=float) * len(draws)
    keep = expected > 0
    assert observed[~keep].sum() == 0
    return pooled_pvalue(observed[keep], expected[keep])  # rare outcomes pooled: one draw
    # of utility -90 (expected 7e-6 times in 40,000) used to fail the test on its own


def _exact(utilities: list[int], epsilon: Fraction, sensitivity: int = 1) -> list[float]:
    dist = permute_and_flip_distribution(utilities, epsilon, sensitivity)
    return [float(dist[i]) for i in range(len(utilities))]


@pytest.mark.parametrize(
    ("utilities", "sensitivity"),
    [([10, 9, 7, 4, 0], 1), ([0, -3, -3, -8, -90, -400], 2)],
)
def test_rows_select_with_the_exponential_mechanisms_probabilities(
    utilities: list[int], sensitivity: int
) -> None:
    """40,000 independent rows: accepted at ε, rejected at 0.7ε and 1.3ε (30% off)."""
    rows = np.tile(np.array(utilities, dtype=np.int64), (40_000, 1))
    draws = permute_and_flip_rows(rows, Fraction(1), sensitivity, RNG)
    assert _chi2(draws, _exact(utilities, Fraction(1), sensitivity)) > ALPHA
    for off in (Fraction(7, 10), Fraction(13, 10)):
        assert _chi2(draws, _exact(utilities, off, sensitivity)) < ALPHA


def _binomial_ok(hits: int, n: int, p: float) -> bool:
    return bool(stats.binomtest(hits, n, p).pvalue > ALPHA)


def test_coins_have_probability_exp_minus_x() -> None:
    gaps = np.repeat(np.array([1, 3, 10, 60], dtype=np.int64), 50_000)
    factor = Fraction(1, 3)
    coins = exp_coins(gaps, factor, RNG).reshape(4, -1)
    for row, gap in zip(coins, (1, 3, 10, 60), strict=True):
        hits, p = int(row.sum()), math.exp(-gap / 3)
        assert _binomial_ok(hits, row.size, p)
        if gap < 60:
            assert not _binomial_ok(hits, row.size, math.exp(-1.3 * gap / 3))


def test_undecided_coins_are_settled_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a margin of 90% most coins fall between the float bounds and are settled with
    exact arithmetic and lazily drawn bits: their frequency is still exp(−x)."""
    monkeypatch.setattr(grouped_selection, "_MARGIN", 0.9)
    settled: list[int] = []
    real = grouped_selection._settle

    def counted(x: Fraction, word: int, rng: SecureRandom) -> bool:
        settled.append(1)
        return real(x, word, rng)

    monkeypatch.setattr(grouped_selection, "_settle", counted)
    gaps = np.repeat(np.array([1, 4], dtype=np.int64), 20_000)
    coins = exp_coins(gaps, Fraction(1, 2), RNG).reshape(2, -1)
    assert len(settled) > 20_000  # the exact path ran for most of them
    for row, x in zip(coins, (0.5, 2.0), strict=True):
        assert _binomial_ok(int(row.sum()), row.size, math.exp(-x))
        assert not _binomial_ok(int(row.sum()), row.size, math.exp(-1.3 * x))


class _Forced:
    """A random source whose 8-bit word tops are 0 and 54-bit rests are given (the rest real)."""

    def __init__(self, rest: int) -> None:
        self.rest = rest

    def uniform_below(self, m: Any, size: int) -> np.ndarray:
        if isinstance(m, int) and m == 2**8:
            return np.zeros(size, dtype=np.int64)
        if isinstance(m, int) and m == 2**54:
            return np.full(size, self.rest, dtype=np.int64)
        return RNG.uniform_below(m, size)

    def __getattr__(self, name: str) -> Any:
        return getattr(RNG, name)


def test_far_coins_multiply_exp_minus_40_by_an_exact_coin() -> None:
    """Forcing the exp(−40) stage to succeed (U = 0) leaves an exact coin of exp(−(x − 40))."""
    gaps = np.full(30_000, 41 * 4, dtype=np.int64)  # x = 41 at factor 1/4
    coins = exp_coins(gaps, Fraction(1, 4), _Forced(0))  # type: ignore[arg-type]
    assert _binomial_ok(int(coins.sum()), coins.size, math.exp(-1))
    assert not exp_coins(gaps, Fraction(1, 4), _Forced(10**6)).any()  # type: ignore[arg-type]


def test_a_far_word_between_the_bounds_is_settled_by_its_exact_fraction() -> None:
    """U = 19 lies below exp(−40)·2⁶² ≈ 19.6 by the fraction f: the stage succeeds w.p. f."""
    context = Context(prec=60, Emin=MIN_EMIN, Emax=MAX_EMAX)
    fraction = float(context.exp(Decimal(-40)) * Decimal(2**62) - 19)
    gaps = np.full(8_000, 160, dtype=np.int64)  # x = 40 exactly: the stage alone
    coins = exp_coins(gaps, Fraction(1, 4), _Forced(19))  # type: ignore[arg-type]
    assert 0.5 < fraction < 0.7
    assert _binomial_ok(int(coins.sum()), coins.size, fraction)


def test_grouped_release_selects_with_the_exponential_mechanisms_probabilities() -> None:
    """15,000 groups of the same four values: each group's median is one independent draw of
    permute-and-flip on the tie-aware utilities (worked out by hand below).

    With 3,000 groups the 1.3ε alternative was rejected only 2.5 SD above the ALPHA critical
    value (simulated chi-square statistic: a false failure of order 1e-3); with 15,000 the
    0.7ε and 1.3ε statistics sit 12.4 and 8.4 SD above it (noncentral chi-square: below
    1e-55).  The true ε is accepted except with chance ALPHA."""
    groups = [f"g{i}" for i in range(15_000)]
    frame = pd.DataFrame(
        {"g": np.repeat(groups, 4), "x": np.tile([1.0, 2.0, 6.0, 7.0], len(groups))}
    )
    session = dp.Session(epsilon=100, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"x": (0, 10)}, categories={"g": groups})
    # ε = 2: half (ε = 1) selects the point, the rest its interval's ends.
    released = pf.groupby("g")["x"].median(epsilon=2, candidates=range(11))
    # −max(2·#{x < c} − 4, 4 − 2·#{x ≤ c}, 0) for c = 0..10, in half ranks (Δ = 1).
    utilities = [-4, -2, 0, 0, 0, 0, 0, -2, -4, -4, -4]
    draws = released.to_numpy().astype(np.int64)
    assert _chi2(draws, _exact(utilities, Fraction(1))) > ALPHA
    for off in (Fraction(7, 10), Fraction(13, 10)):
        assert _chi2(draws, _exact(utilities, off)) < ALPHA


def test_grouped_medians_land_within_the_stated_rank_error() -> None:
    """400 groups of 400 values at ε = 0.3: the share of groups whose median misses its rank
    by more than the stated 95% error (beyond the best candidate) is at most 5%."""
    gen = np.random.default_rng(11)
    groups = [f"g{i}" for i in range(400)]
    values = gen.gamma(2.0, 1.0, size=(400, 400))
    frame = pd.DataFrame({"g": np.repeat(groups, 400), "x": values.reshape(-1)})
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"x": (0, 20)}, categories={"g": groups})
    released = pf.groupby("g")["x"].median(epsilon=0.6)  # the point at ε = 0.3
    stated = rank_error(0.3, 0.95, Fraction(1, 2))
    assert released.attrs["dpframe"].scales[0] == pytest.approx(stated)
    edges = np.linspace(0, 20, QUANTILE_BINS + 1)
    misses: Counter[bool] = Counter()
    for i, group in enumerate(groups):
        data = np.sort(values[i])
        best = np.min(np.abs(np.searchsorted(data, edges) - 200))
        miss = abs(np.searchsorted(data, released[group]) - 200) - best
        misses[bool(miss > stated)] += 1
    # One-sided: observing this many misses if the true rate were 5% must not be rare.
    test = stats.binomtest(misses[True], 400, 0.05, alternative="greater")
    assert test.pvalue > ALPHA, misses
    assert misses[False] > 0
