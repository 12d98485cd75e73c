"""Tests of private partition selection (dpframe.mechanisms.thresholds.partition_selection).

Statistical settings (significance ALPHA = 1e-7 per check, so a correct
mechanism fails a test with probability below 1e-7):

* Privacy: the adversarial neighbour D' adds one row with a new key (count 1).
  The noisy counts of the other keys have the same distribution on D and D',
  so the only privacy event is "the new key is shown", which must have
  probability <= δ.  One call with n singleton keys gives n independent trials
  of that event (each key has its own noise draw).  The check fails if
  P(Bin(n, δ) >= X) < ALPHA (X = keys shown), i.e. if the one-sided
  Clopper-Pearson lower bound on the probability exceeds δ.  Design:
  ε = 1, δ = 1e-4, n = 10^6: the correct probability is 9.0e-5 (τ = 10);
  the wrong variant (τ = 1, no δ) shows a singleton with probability
  1/(1 + e^-1) = 0.73, so it is flagged with certainty (power computed below).
* Exactness: X against the exact probability from the normalised pmf, with an
  equal-tailed exact binomial test; this also rejects τ − 1 (probability
  e^ε times larger; power asserted >= 1 - 1e-6).
* Goodness of fit: counts of 1000 (always kept) minus 1000 against DLap(1/ε),
  rejecting 0.7x and 1.3x the scale (tests.noise._support.check_sampler).
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

import dpframe as dp
from dpframe.errors import InvalidBudgetError, SchemaError
from dpframe.mechanisms.thresholds import partition_selection as ps_module
from dpframe.mechanisms.thresholds.partition_selection import (
    PartitionSelection,
    release_probability,
    select_partitions,
    selection_threshold,
)
from dpframe.noise import SecureRandom, discrete_laplace_array
from tests.noise._support import ALPHA, MIN_POWER, ShakeSource, check_sampler, laplace_ref

IntArray = npt.NDArray[np.int64]


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> SecureRandom:
    """SHAKE-256 stream seeded by the test id (DPFRAME_NOISE_TEST_URANDOM=1: os.urandom)."""
    if os.environ.get("DPFRAME_NOISE_TEST_URANDOM") == "1":
        return SecureRandom()
    return SecureRandom(ShakeSource(request.node.nodeid))


def _tail_ref(epsilon: float, m: int) -> float:
    """P(Y >= m), Y ~ DLap(1/ε), by summing the normalised pmf (not the closed form)."""
    ks, pmf = laplace_ref(1.0 / epsilon, tail=80.0)
    return float(pmf[ks >= m].sum())


def _threshold_ref(epsilon: float, delta: float) -> int:
    """Brute force: the smallest integer τ with P(1 + Y >= τ) <= δ."""
    tau = -50
    while _tail_ref(epsilon, tau - 1) > delta:
        tau += 1
    return tau


def _select_without_delta(counts: IntArray, epsilon: Fraction, rng: SecureRandom) -> IntArray:
    """WRONG: the same noise, but threshold τ = 1 (chosen without δ)."""
    noisy = counts + discrete_laplace_array(1 / epsilon, counts.size, rng)
    return np.flatnonzero(noisy >= 1)


def _select_tau_minus_one(
    counts: IntArray, epsilon: Fraction, delta: Fraction, rng: SecureRandom
) -> IntArray:
    """WRONG: the threshold one below the smallest valid one."""
    tau = selection_threshold(epsilon, delta) - 1
    noisy = counts + discrete_laplace_array(1 / epsilon, counts.size, rng)
    return np.flatnonzero(noisy >= tau)


def _flags_privacy(shown: int, n: int, delta: float) -> bool:
    """True if P(Bin(n, δ) >= shown) < ALPHA: the singleton is shown too often for δ."""
    return float(stats.binom.sf(shown - 1, n, delta)) < ALPHA


def _equal_tailed_region(n: int, p: float) -> tuple[int, int]:
    """Acceptance region [lo, hi] of the exact equal-tailed binomial test at ALPHA."""
    lo = int(stats.binom.ppf(ALPHA / 2, n, p))
    hi = int(stats.binom.isf(ALPHA / 2, n, p))
    return lo, hi


EPS, DELTA, N_SINGLETONS = Fraction(1), Fraction(1, 10**4), 1_000_000


# -- deterministic -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [(1.0, 1e-6), (0.1, 1e-9), (2.0, 1e-3), (0.5, 0.3), (1.0, 0.9), (3.0, 1e-12), (0.25, 1e-5)],
)
def test_threshold_matches_brute_force(epsilon: float, delta: float) -> None:
    tau = selection_threshold(epsilon, delta)
    assert tau == _threshold_ref(epsilon, delta)
    assert _tail_ref(epsilon, tau - 1) <= delta < _tail_ref(epsilon, tau - 2)


def test_tail_formula_matches_normalised_pmf() -> None:
    """P(Y >= k) = a^k/(1+a) for k >= 1, a = e^-ε (the formula τ is computed from)."""
    for epsilon in (0.3, 1.0, 2.5):
        a = math.exp(-epsilon)
        for k in range(1, 12):
            assert _tail_ref(epsilon, k) == pytest.approx(a**k / (1 + a), rel=1e-9)


def test_release_probability_against_brute_force() -> None:
    tau = selection_threshold(EPS, DELTA)
    counts = np.arange(0, tau + 15)
    probs = release_probability(counts, 1.0, 1e-4)
    expected = [_tail_ref(1.0, tau - int(n)) for n in counts]
    np.testing.assert_allclose(probs, expected, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.1, 1e-8), (4.0, 1e-3)])
def test_release_probability_shape(epsilon: float, delta: float) -> None:
    p1 = release_probability(1, epsilon, delta)
    assert isinstance(p1, float)
    assert 0 < p1 <= delta
    counts = np.arange(0, int(60 / epsilon + 40 / epsilon))
    probs = release_probability(counts, epsilon, delta)
    assert isinstance(probs, np.ndarray) and probs.shape == counts.shape
    steps = np.diff(probs)
    assert np.all(steps >= 0)  # increasing in the count ...
    assert np.all(steps[probs[1:] < 1 - 1e-9] > 0)  # ... strictly, until it rounds to 1
    tau = selection_threshold(epsilon, delta)
    assert release_probability(tau, epsilon, delta) >= 0.5
    assert release_probability(tau + int(30 / epsilon), epsilon, delta) > 1 - 1e-12
    assert release_probability(10**12, epsilon, delta) == 1.0


def test_result_structure(rng: SecureRandom) -> None:
    counts = np.array([10**9, 0, 5, 10**6, 1, 2 * 10**9, 3], dtype=np.int64)
    out = select_partitions(counts, EPS, DELTA, rng)
    assert isinstance(out, PartitionSelection)
    assert out.threshold == selection_threshold(EPS, DELTA) == 10
    assert out.scale == 1.0
    assert out.kept.dtype == np.int64 and out.noisy_counts.dtype == np.float64
    # The huge counts, in input order (P(miss) ~ e^-1e6).  The counts 5, 3, 1 and 0 pass
    # τ = 10 with chance 4.9e-3, 6.7e-4, 9e-5 and 3e-5 (release_probability): with
    # DPFRAME_NOISE_TEST_URANDOM=1 an exact [0, 3, 5] failed by chance about 1 run in 175.
    assert [int(i) for i in out.kept if counts[i] >= 10**6] == [0, 3, 5]
    assert out.kept.tolist() == sorted(out.kept.tolist())
    assert np.all(np.abs(out.noisy_counts - counts[out.kept]) < 100)
    assert np.all(out.noisy_counts >= out.threshold)
    empty = select_partitions(np.array([], dtype=np.int64), EPS, DELTA, rng)
    assert empty.kept.size == 0 and empty.noisy_counts.size == 0


def test_scale_is_rounded_up(rng: SecureRandom) -> None:
    out = select_partitions(np.array([5]), Fraction(3), Fraction(1, 10**6), rng)
    assert 1 / 3 <= out.scale <= (1 / 3) * (1 + 2**-20)
    assert out.threshold == _threshold_ref(1 / out.scale, 1e-6)


def test_reproducible_with_an_injected_source() -> None:
    counts = np.arange(100, dtype=np.int64)

    def once() -> tuple[list[int], list[float]]:
        out = select_partitions(counts, EPS, DELTA, SecureRandom(ShakeSource("same")))
        return out.kept.tolist(), out.noisy_counts.tolist()

    assert once() == once()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"delta": 0}, InvalidBudgetError, "needs delta > 0"),
        ({"delta": 0.0}, InvalidBudgetError, "needs delta > 0"),
        ({"delta": 1}, InvalidBudgetError, "\\(0, 1\\)"),
        ({"delta": -1e-6}, InvalidBudgetError, "\\(0, 1\\)"),
        ({"delta": math.nan}, InvalidBudgetError, "finite"),
        ({"delta": "1e-6"}, InvalidBudgetError, "number"),
        ({"epsilon": 0}, InvalidBudgetError, "> 0"),
        ({"epsilon": -1.0}, InvalidBudgetError, "> 0"),
        ({"epsilon": math.inf}, InvalidBudgetError, "finite"),
        ({"epsilon": True}, InvalidBudgetError, "number"),
        ({"epsilon": Fraction(1, 2**60)}, InvalidBudgetError, "too small"),
        ({"counts": np.array([[1, 2]])}, SchemaError, "1-D"),
        ({"counts": np.array([1.5, 2.0])}, SchemaError, "integer dtype"),
        ({"counts": np.array([True])}, SchemaError, "integer dtype"),
        ({"counts": np.array([3, -1])}, SchemaError, "non-negative"),
        ({"counts": np.array([2**60])}, SchemaError, "2\\*\\*53"),
    ],
)
def test_bad_arguments(
    kwargs: dict[str, object], error: type[Exception], match: str, rng: SecureRandom
) -> None:
    args: dict[str, object] = {"counts": np.array([1, 2, 3]), "epsilon": EPS, "delta": DELTA}
    args.update(kwargs)
    with pytest.raises(error, match=match) as info:
        select_partitions(rng=rng, **args)  # type: ignore[arg-type]
    assert isinstance(info.value, dp.DPError)


def test_helpers_validate_too() -> None:
    with pytest.raises(InvalidBudgetError, match="needs delta > 0"):
        selection_threshold(1.0, 0)
    with pytest.raises(InvalidBudgetError, match="> 0"):
        release_probability(1, 0.0, 1e-6)
    with pytest.raises(SchemaError, match="integer"):
        release_probability(np.array([1.5]), 1.0, 1e-6)


def test_errors_never_show_private_counts(rng: SecureRandom) -> None:
    with pytest.raises(SchemaError, match=r"non-negative integers below 2\*\*53") as info:
        select_partitions(np.array([123456789, -987654]), EPS, DELTA, rng)
    assert "123456789" not in str(info.value) and "987654" not in str(info.value)


def test_module_uses_no_insecure_randomness() -> None:
    source = Path(ps_module.__file__).read_text()
    assert "np.random" not in source and "numpy.random" not in source
    assert "import random" not in source


# -- statistical -------------------------------------------------------------------------------


def test_privacy_check_has_power() -> None:
    p_correct = _tail_ref(1.0, selection_threshold(EPS, DELTA) - 1)
    p_wrong = 1 / (1 + math.exp(-1.0))  # τ = 1: P(1 + Y >= 1) = P(Y >= 0)
    assert p_correct <= float(DELTA)
    # Smallest number of shown singletons that the check flags, and P(X >= it) per variant.
    x_flag = int(stats.binom.isf(ALPHA, N_SINGLETONS, float(DELTA))) + 1
    assert _flags_privacy(x_flag, N_SINGLETONS, float(DELTA))
    assert not _flags_privacy(x_flag - 1, N_SINGLETONS, float(DELTA))
    assert float(stats.binom.sf(x_flag - 1, N_SINGLETONS, p_wrong)) >= 1 - 1e-12
    assert float(stats.binom.sf(x_flag - 1, N_SINGLETONS, p_correct)) < ALPHA
    # The exactness test against τ − 1 (probability about e^ε larger).
    tau = selection_threshold(EPS, DELTA)
    lo, hi = _equal_tailed_region(N_SINGLETONS, p_correct)
    p_minus = _tail_ref(1.0, tau - 2)
    miss = stats.binom.cdf(hi, N_SINGLETONS, p_minus) - stats.binom.cdf(
        lo - 1, N_SINGLETONS, p_minus
    )
    print(f"x_flag={x_flag}, region=[{lo}, {hi}], power vs tau-1 = 1 - {miss:.2g}")
    assert 1 - miss >= MIN_POWER


def test_new_singleton_key_shown_with_probability_at_most_delta(rng: SecureRandom) -> None:
    singles = np.ones(N_SINGLETONS, dtype=np.int64)
    shown = select_partitions(singles, EPS, DELTA, rng).kept.size
    p_exact = _tail_ref(1.0, selection_threshold(EPS, DELTA) - 1)
    lo, hi = _equal_tailed_region(N_SINGLETONS, p_exact)
    print(f"shown {shown} of {N_SINGLETONS} (expected {N_SINGLETONS * p_exact:.1f}, delta n = 100)")
    assert not _flags_privacy(shown, N_SINGLETONS, float(DELTA))
    assert lo <= shown <= hi


def test_wrong_threshold_without_delta_is_flagged(rng: SecureRandom) -> None:
    singles = np.ones(N_SINGLETONS, dtype=np.int64)
    shown = _select_without_delta(singles, EPS, rng).size
    print(f"tau = 1: shown {shown} of {N_SINGLETONS}")
    assert _flags_privacy(shown, N_SINGLETONS, float(DELTA))


def test_threshold_one_too_low_is_rejected(rng: SecureRandom) -> None:
    singles = np.ones(N_SINGLETONS, dtype=np.int64)
    shown = _select_tau_minus_one(singles, EPS, DELTA, rng).size
    lo, hi = _equal_tailed_region(N_SINGLETONS, _tail_ref(1.0, selection_threshold(EPS, DELTA) - 1))
    print(f"tau - 1: shown {shown}, acceptance region [{lo}, {hi}]")
    assert not lo <= shown <= hi


@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(1)])
def test_noisy_counts_are_discrete_laplace(epsilon: Fraction, rng: SecureRandom) -> None:
    scale = 1 / float(epsilon)

    def draw(n: int) -> npt.NDArray[np.int64]:
        out = select_partitions(np.full(n, 1000, dtype=np.int64), epsilon, DELTA, rng)
        assert out.kept.size == n  # P(a count of 1000 is dropped) < e^-400
        return (out.noisy_counts - 1000).astype(np.int64)

    check_sampler(
        draw, 40_000, laplace_ref(scale), [laplace_ref(0.7 * scale), laplace_ref(1.3 * scale)]
    )


def test_keep_rate_matches_release_probability(rng: SecureRandom) -> None:
    tau = selection_threshold(EPS, DELTA)
    levels = [tau - 3, tau - 1, tau, tau + 2]
    n = 50_000
    counts = np.repeat(np.array(levels, dtype=np.int64), n)
    kept = np.zeros(counts.size, dtype=np.bool_)
    kept[select_partitions(counts, EPS, DELTA, rng).kept] = True
    for j, level in enumerate(levels):
        shown = int(kept[j * n : (j + 1) * n].sum())
        p = release_probability(level, 1.0, float(DELTA))
        lo, hi = _equal_tailed_region(n, p)
        assert lo <= shown <= hi, (level, shown, n * p)


# -- slow ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_singleton_probability_many_draws(rng: SecureRandom) -> None:
    """10^7 singletons at δ = 1e-5, ε = 0.5: P(shown) exact, and <= δ."""
    eps, delta, n = Fraction(1, 2), Fraction(1, 10**5), 10_000_000
    shown = select_partitions(np.ones(n, dtype=np.int64), eps, delta, rng).kept.size
    p_exact = _tail_ref(0.5, selection_threshold(eps, delta) - 1)
    lo, hi = _equal_tailed_region(n, p_exact)
    print(f"shown {shown} of {n} (expected {n * p_exact:.1f}, delta n = {n * float(delta):.0f})")
    assert not _flags_privacy(shown, n, float(delta))
    assert lo <= shown <= hi


@pytest.mark.slow
def test_noisy_counts_many_draws(rng: SecureRandom) -> None:
    scale = 3.0  # ε = 1/3

    def draw(n: int) -> npt.NDArray[np.int64]:
        out = select_partitions(np.full(n, 5000, dtype=np.int64), Fraction(1, 3), DELTA, rng)
        assert out.kept.size == n
        return (out.noisy_counts - 5000).astype(np.int64)

    check_sampler(
        draw, 1_000_000, laplace_ref(scale), [laplace_ref(0.7 * scale), laplace_ref(1.3 * scale)]
    )
