"""Tests of the sparse vector technique (dpframe.mechanisms.thresholds.sparse_vector).

Statistical settings.  Every statistical check has significance ALPHA = 1e-7,
so a correct mechanism fails a test with probability below 1e-7.

* Privacy (the DP inequality on neighbouring inputs D, D').  An output is the
  tuple of hits (``examined`` is a function of it).  For every output e
  observed, one-sided Clopper-Pearson bounds at level ALPHA/(4M) (M = the
  number of possible outputs, so the union bound covers all 4M bounds) give
  L_D(e) and U_D'(e); the check fails if L_D(e) > e^ε U_D'(e) (either
  direction).  For a correct ε-DP mechanism this needs one of the 4M bounds to
  be wrong: probability ≤ ALPHA.  ln(L_D/U_D') is a certified lower bound on
  the privacy loss; the tests print it and the estimated loss.
  Design A (ε = 1, c = 1, counts (10, 11) vs (11, 11), T = 10.5, 20,000 runs):
  without query noise, hits (1,) has probability tanh(1/4) = 0.245 on D and 0
  on D'.  Design B (ε = 4, c = 8, counts (10, 50) x 8, the neighbour adds a row
  matching the eight queries of count 10, T = 10.5, 100,000 runs): with the
  threshold redrawn after each hit and query noise not scaled by c, the output
  "every count-50 query and nothing else" has probability 0.054 on D and
  7.6e-5 on D' (loss 6.6 > 4).  ``test_privacy_check_has_power`` computes the
  power of the check from these exact probabilities (exact binomial sums):
  more than 1 - 1e-9 for both wrong variants.
* Goodness of fit: the distribution of the hits on design C (counts
  0, 3, 6, 9, 12, T = 5.5, ε = 1, c = 2) against its exact distribution computed
  here from the normalised pmf (Pearson chi-square, outputs with expected count
  < 5 pooled), and against the scales 0.7x and 1.3x, which must be rejected
  (predicted power >= 1 - 1e-6 asserted first, noncentral chi-square); the
  answers of the numeric variant against DLap(3c/ε) with tests.noise._support.
* Many runs at once use ``_sparse_vector_runs``: ``sparse_vector`` is that
  function with one run, and the slow tests repeat the checks on the public
  function itself.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpframe as dp
from dpframe.errors import InvalidBudgetError, SchemaError
from dpframe.mechanisms.thresholds import sparse_vector as svt_module
from dpframe.mechanisms.thresholds.sparse_vector import (
    SparseVectorResult,
    _sparse_vector_runs,
    sparse_vector,
    sparse_vector_accuracy,
)
from dpframe.noise import SecureRandom, discrete_laplace_array
from tests.noise._support import ALPHA, MIN_POWER, ShakeSource, check_sampler, laplace_ref

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
Dist = dict[tuple[int, ...], float]


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> SecureRandom:
    """SHAKE-256 stream seeded by the test id (DPFRAME_NOISE_TEST_URANDOM=1: os.urandom)."""
    if os.environ.get("DPFRAME_NOISE_TEST_URANDOM") == "1":
        return SecureRandom()
    return SecureRandom(ShakeSource(request.node.nodeid))


# -- reference distributions, from first principles -----------------------------------------


def _tail_fn(scale: float) -> Callable[[IntArray], npt.NDArray[np.float64]]:
    """m -> P(Y >= m) for Y ~ DLap(scale), by summing the normalised pmf (0 for scale 0)."""
    if scale == 0:
        return lambda m: (m <= 0).astype(np.float64)
    ks, pmf = laplace_ref(scale)
    upper = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])  # upper[j] = P(Y >= ks[j])

    def tail(m: IntArray) -> npt.NDArray[np.float64]:
        idx = np.clip(m - ks[0], 0, ks.size)
        return np.asarray(upper[idx], dtype=np.float64)

    return tail


def _event_probability(
    counts: list[int],
    threshold: float,
    c: int,
    b_rho: float,
    b_nu: float,
    hits: tuple[int, ...],
    *,
    redraw: bool = False,
) -> float:
    """Exact P(output = hits): query i is a hit iff ν_i − ρ ≥ ceil(T − count_i)."""
    k = len(counts)
    examined = hits[-1] + 1 if len(hits) == c else k
    gaps = [math.ceil(threshold - q) for q in counts]
    rhos, p_rho = laplace_ref(b_rho)
    tail = _tail_fn(b_nu)
    prob, weight = 1.0, p_rho.copy()
    for i in range(examined):
        above = tail(gaps[i] + rhos)
        weight = weight * (above if i in hits else 1.0 - above)
        if redraw and i in hits:  # the threshold noise is drawn again after each hit
            prob *= float(weight.sum())
            weight = p_rho.copy()
    return prob * float(weight.sum())


def _all_outputs(k: int, c: int) -> list[tuple[int, ...]]:
    """Every possible hits tuple: any set of fewer than c queries, or exactly c."""
    return [h for j in range(min(c, k) + 1) for h in itertools.combinations(range(k), j)]


def _num_outputs(k: int, c: int) -> int:
    return sum(math.comb(k, j) for j in range(min(c, k) + 1))


def _exact_distribution(
    counts: list[int], threshold: float, c: int, b_rho: float, b_nu: float
) -> Dist:
    return {
        h: _event_probability(counts, threshold, c, b_rho, b_nu, h)
        for h in _all_outputs(len(counts), c)
    }


# -- the deliberately wrong variants (tests only), vectorized over runs -------------------------


def _first_hits(above: BoolArray, c: int) -> BoolArray:
    return above & (np.cumsum(above, axis=1) <= c)


def _svt_without_query_noise(
    counts: IntArray, threshold: float, epsilon: Fraction, c: int, rng: SecureRandom, runs: int
) -> BoolArray:
    """WRONG: ν = 0 (Lyu et al. 2017, Alg. 5): not ε'-DP for any ε'."""
    rho = discrete_laplace_array(2 / epsilon, runs, rng)
    above = counts[None, :] - rho[:, None] >= math.ceil(threshold)
    return _first_hits(above, c)


def _svt_redrawn_threshold(
    counts: IntArray, threshold: float, epsilon: Fraction, c: int, rng: SecureRandom, runs: int
) -> BoolArray:
    """WRONG: fresh threshold noise after each hit, query noise 2Δ/ε2 (not scaled by c): cε-DP."""
    rho = discrete_laplace_array(2 / epsilon, runs, rng)
    found = np.zeros(runs, dtype=np.int64)
    hits = np.zeros((runs, counts.size), dtype=np.bool_)
    for i, count in enumerate(counts.tolist()):
        active = np.flatnonzero(found < c)
        nu = discrete_laplace_array(4 / epsilon, active.size, rng)
        hit = active[count + nu - rho[active] >= math.ceil(threshold)]
        hits[hit, i] = True
        found[hit] += 1
        rho[hit] = discrete_laplace_array(2 / epsilon, hit.size, rng)
    return hits


def _correct(
    numeric: bool,
) -> Callable[[IntArray, float, Fraction, int, SecureRandom, int], BoolArray]:
    def run(
        counts: IntArray, threshold: float, epsilon: Fraction, c: int, rng: SecureRandom, runs: int
    ) -> BoolArray:
        return _sparse_vector_runs(counts, threshold, epsilon, c, rng, runs, numeric=numeric).hits

    return run


# -- the privacy check ----------------------------------------------------------------------------


def _codes(hits: BoolArray) -> IntArray:
    """One integer per run encoding its hits tuple (bit i = query i)."""
    bits = hits.astype(np.int64) << np.arange(hits.shape[1], dtype=np.int64)
    return np.asarray(bits.sum(axis=1), dtype=np.int64)


def _cp_lower(x: int, n: int, a: float) -> float:
    return float(stats.beta.ppf(a, x, n - x + 1)) if x > 0 else 0.0


def _cp_upper(x: int, n: int, a: float) -> float:
    return float(stats.beta.isf(a, x + 1, n - x)) if x < n else 1.0


def _privacy_check(
    hits_d: BoolArray, hits_d2: BoolArray, epsilon: float, n_outputs: int
) -> tuple[bool, float, float]:
    """(DP inequality violated?, certified loss lower bound, estimated max loss)."""
    n = hits_d.shape[0]
    a = ALPHA / (4 * n_outputs)
    codes_d, counts_d = np.unique(_codes(hits_d), return_counts=True)
    codes_d2, counts_d2 = np.unique(_codes(hits_d2), return_counts=True)
    seen_d = dict(zip(codes_d.tolist(), counts_d.tolist(), strict=True))
    seen_d2 = dict(zip(codes_d2.tolist(), counts_d2.tolist(), strict=True))
    certified, estimated = -math.inf, 0.0
    for event in set(seen_d) | set(seen_d2):
        x, y = seen_d.get(event, 0), seen_d2.get(event, 0)
        for p, q in ((x, y), (y, x)):
            low, up = _cp_lower(p, n, a), _cp_upper(q, n, a)
            if low > 0:
                certified = max(certified, math.log(low / up))
        if max(x, y) >= 20:  # the plug-in loss of outputs seen often enough
            estimated = max(estimated, math.inf if min(x, y) == 0 else abs(math.log(x / y)))
    return certified > epsilon, certified, estimated


def _exact_power(p1: float, p2: float, epsilon: float, n: int, n_outputs: int) -> float:
    """P(the check flags one output of probabilities p1 on D, p2 on D'), exact binomial sums."""
    a = ALPHA / (4 * n_outputs)
    power = 0.0
    for y in range(int(n * p2 + 40 * math.sqrt(n * p2 + 1)) + 5):
        bound = math.exp(epsilon) * _cp_upper(y, n, a)
        lo, hi = 0, n + 1  # smallest x with L(x) > bound
        while lo < hi:
            mid = (lo + hi) // 2
            if mid <= n and _cp_lower(mid, n, a) > bound:
                hi = mid
            else:
                lo = mid + 1
        power += float(stats.binom.pmf(y, n, p2) * stats.binom.sf(lo - 1, n, p1))
    return power


# (name, counts on D, counts on D', T, ε, c, runs, wrong variant it must catch, target output)
DESIGNS = {
    "A": ([10, 11], [11, 11], 10.5, Fraction(1), 1, 20_000, _svt_without_query_noise, (1,)),
    "B": (
        [10, 50] * 8,
        [11, 50] * 8,
        10.5,
        Fraction(4),
        8,
        100_000,
        _svt_redrawn_threshold,
        tuple(range(1, 16, 2)),
    ),
}
#: (threshold scale, query scale, threshold redrawn after each hit) of each wrong variant, given ε.
WRONG_SCALES: dict[Callable[..., BoolArray], Callable[[float], tuple[float, float, bool]]] = {
    _svt_without_query_noise: lambda eps: (2 / eps, 0.0, False),
    _svt_redrawn_threshold: lambda eps: (2 / eps, 4 / eps, True),
}


def _run_design(
    name: str, variant: Callable[..., BoolArray], rng: SecureRandom
) -> tuple[bool, float, float]:
    counts, counts2, threshold, eps, c, runs, _, _ = DESIGNS[name]
    hits_d = variant(np.array(counts), threshold, eps, c, rng, runs)
    hits_d2 = variant(np.array(counts2), threshold, eps, c, rng, runs)
    result = _privacy_check(hits_d, hits_d2, float(eps), _num_outputs(len(counts), c))
    print(f"design {name}: certified loss >= {result[1]:.3f}, estimated {result[2]:.3f}, eps {eps}")
    return result


@pytest.mark.parametrize("name", ["A", "B"])
def test_privacy_check_has_power(name: str) -> None:
    counts, counts2, threshold, eps, c, runs, wrong, target = DESIGNS[name]
    b_rho, b_nu, redraw = WRONG_SCALES[wrong](float(eps))
    p1 = _event_probability(counts, threshold, c, b_rho, b_nu, target, redraw=redraw)
    p2 = _event_probability(counts2, threshold, c, b_rho, b_nu, target, redraw=redraw)
    power = _exact_power(p1, p2, float(eps), runs, _num_outputs(len(counts), c))
    print(f"design {name}: P(D) = {p1:.4g}, P(D') = {p2:.4g}, power = 1 - {1 - power:.2g}")
    assert power >= 1 - 1e-9


@pytest.mark.parametrize("numeric", [False, True])
@pytest.mark.parametrize("name", ["A", "B"])
def test_correct_mechanism_passes_privacy_check(
    name: str, numeric: bool, rng: SecureRandom
) -> None:
    violated, certified, _ = _run_design(name, _correct(numeric), rng)
    assert not violated, f"DP inequality violated: certified loss {certified:.3f}"


@pytest.mark.parametrize("name", ["A", "B"])
def test_wrong_variant_fails_privacy_check(name: str, rng: SecureRandom) -> None:
    wrong = DESIGNS[name][6]
    violated, certified, _ = _run_design(name, wrong, rng)
    assert violated, f"wrong variant not flagged: certified loss {certified:.3f}"


# -- goodness of fit ------------------------------------------------------------------------------

DESIGN_C = ([0, 3, 6, 9, 12], 5.5, Fraction(1), 2)  # counts, T, ε, c


def _pooled(dist: Dist, n: int) -> tuple[list[list[tuple[int, ...]]], npt.NDArray[np.float64]]:
    """Bins of outputs: each output with expected count >= 5 alone, the rest pooled."""
    big = [[h] for h, p in dist.items() if p * n >= 5]
    small = [h for h, p in dist.items() if p * n < 5]
    bins = [*big, small] if small else big
    probs = np.array([sum(dist[h] for h in b) for b in bins])
    return bins, probs / probs.sum()


def _chi2_outputs(observed: dict[tuple[int, ...], int], dist: Dist, n: int) -> float:
    bins, probs = _pooled(dist, n)
    obs = np.array([sum(observed.get(h, 0) for h in b) for b in bins], dtype=np.float64)
    assert obs.sum() == n, "an output outside the support"
    stat = float(np.sum((obs - n * probs) ** 2 / (n * probs)))
    return float(stats.chi2.sf(stat, len(bins) - 1))


def _predicted_power(dist_true: Dist, dist_alt: Dist, n: int) -> float:
    bins, probs_alt = _pooled(dist_alt, n)
    probs_true = np.array([sum(dist_true[h] for h in b) for b in bins])
    lam = n * float(np.sum((probs_true - probs_alt) ** 2 / probs_alt))
    df = len(bins) - 1
    return float(stats.ncx2.sf(stats.chi2.isf(ALPHA, df), df, lam))


def _observed(hits: list[tuple[int, ...]]) -> dict[tuple[int, ...], int]:
    out: dict[tuple[int, ...], int] = {}
    for h in hits:
        out[h] = out.get(h, 0) + 1
    return out


def _check_hits_fit(observed: dict[tuple[int, ...], int], n: int, numeric: bool) -> None:
    counts, threshold, eps, c = DESIGN_C
    parts = 3 if numeric else 2
    b_rho, b_nu = parts / float(eps), 2 * c * parts / float(eps)  # Δ/ε1, 2cΔ/ε2
    dists = {
        f: _exact_distribution(counts, threshold, c, f * b_rho, f * b_nu) for f in (0.7, 1.0, 1.3)
    }
    for f in (0.7, 1.3):
        power = _predicted_power(dists[1.0], dists[f], n)
        assert power >= MIN_POWER, f"{n} runs too few: predicted power {power:.3g} at {f}x"
    p = {f: _chi2_outputs(observed, dists[f], n) for f in (0.7, 1.0, 1.3)}
    print(f"numeric={numeric} n={n} p-values {p}")
    assert p[1.0] >= ALPHA, f"hits do not fit the stated scales: p = {p[1.0]:.3g}"
    assert p[0.7] < ALPHA and p[1.3] < ALPHA, f"30%-off scales not rejected: {p}"


@pytest.mark.parametrize("numeric", [False, True])
def test_hits_fit_exact_distribution(numeric: bool, rng: SecureRandom) -> None:
    counts, threshold, eps, c = DESIGN_C
    n = 20_000
    run = _sparse_vector_runs(np.array(counts), threshold, eps, c, rng, n, numeric=numeric)
    observed = _observed([tuple(np.flatnonzero(row).tolist()) for row in run.hits])
    _check_hits_fit(observed, n, numeric)


def test_numeric_answers_are_discrete_laplace(rng: SecureRandom) -> None:
    c, eps = 50, Fraction(1)  # answer scale cΔ/ε3 = 3c/ε = 150
    counts = np.full(c, 10**6, dtype=np.int64)  # far above T: every query is a hit

    def draw(n: int) -> npt.NDArray[np.int64]:
        out = [sparse_vector(counts, 0.0, eps, c, rng, numeric=True) for _ in range(n // c)]
        assert all(r.hits == tuple(range(c)) and r.answer_scale == 150.0 for r in out)
        answers = np.array([r.answers for r in out], dtype=np.float64).reshape(-1)
        return (answers - 10**6).astype(np.int64)

    scale = 3 * c / float(eps)
    check_sampler(
        draw, 20_000, laplace_ref(scale), [laplace_ref(0.7 * scale), laplace_ref(1.3 * scale)]
    )


# -- accuracy -------------------------------------------------------------------------------------


@pytest.mark.parametrize("numeric", [False, True])
def test_accuracy_bound_holds(numeric: bool, rng: SecureRandom) -> None:
    """Every query sits just outside the band: a wrong answer on any one is a failure."""
    k, c, eps, beta, n, threshold = 40, 4, Fraction(1), 0.05, 20_000, 1000.5
    alpha = sparse_vector_accuracy(k, eps, c, beta, numeric=numeric)
    assert alpha == pytest.approx(
        2 * c * 2 * (3 if numeric else 2) / float(eps) * math.log(4 * c * k / beta)
    )
    low, high = math.ceil(threshold - alpha) - 1, math.ceil(threshold + alpha)  # < T - α, >= T + α
    counts = np.array([low, high] * (k // 2), dtype=np.int64)
    run = _sparse_vector_runs(counts, threshold, eps, c, rng, n, numeric=numeric)
    examined = np.arange(k)[None, :] < run.examined[:, None]
    bad_hit = run.hits & (counts[None, :] < threshold - alpha)
    bad_miss = examined & ~run.hits & (counts[None, :] >= threshold + alpha)
    failures = int(np.any(bad_hit | bad_miss, axis=1).sum())
    limit = int(stats.binom.isf(ALPHA, n, beta))
    print(f"alpha = {alpha:.1f}: {failures} failures in {n} runs (limit {limit})")
    assert failures <= limit
    if run.answers is not None:
        b_a = 3 * c / float(eps)
        err = np.abs(np.where(run.hits, run.answers - counts[None, :], 0.0))
        answer_failures = int(np.any(err > b_a * math.log(2 * c / beta), axis=1).sum())
        print(f"answers: {answer_failures} failures in {n} runs")
        assert answer_failures <= limit


# -- deterministic unit tests ---------------------------------------------------------------------

FAR = 10**12  # counts this far from the threshold are decided whatever the noise (p < e^-1e10)


def test_scales_and_split_as_documented(rng: SecureRandom) -> None:
    out = sparse_vector(np.array([1, 2, 3]), 2.0, Fraction(1, 2), 3, rng)
    assert (out.threshold_scale, out.query_scale, out.answer_scale) == (4.0, 24.0, None)
    assert out.answers is None
    num = sparse_vector(np.array([1, 2, 3]), 2.0, Fraction(1, 2), 3, rng, numeric=True)
    assert (num.threshold_scale, num.query_scale, num.answer_scale) == (6.0, 36.0, 18.0)
    assert num.answers is not None and len(num.answers) == len(num.hits)


@pytest.mark.parametrize("c", [1, 2, 5])
def test_max_hits_honoured_and_examined(c: int, rng: SecureRandom) -> None:
    counts = np.array([-FAR, FAR, -FAR, FAR, FAR, FAR, FAR, -FAR], dtype=np.int64)
    out = sparse_vector(counts, 0.0, Fraction(1), c, rng)
    above = [1, 3, 4, 5, 6]
    assert out.hits == tuple(above[:c])
    assert out.examined == above[c - 1] + 1
    assert out.examined == out.hits[-1] + 1


def test_fewer_hits_than_max_examines_everything(rng: SecureRandom) -> None:
    counts = np.array([-FAR, FAR, -FAR], dtype=np.int64)
    out = sparse_vector(counts, 0.5, 1, 3, rng, numeric=True)
    assert out.hits == (1,) and out.examined == 3
    assert out.answers is not None and abs(out.answers[0] - FAR) < 10**4
    none = sparse_vector(np.full(5, -FAR, dtype=np.int64), 0.5, 1.0, 1, rng)
    assert none.hits == () and none.examined == 5


def test_many_queries_stop_early(rng: SecureRandom) -> None:
    counts = np.full(100_000, -FAR, dtype=np.int64)
    counts[[70, 5000, 60_000]] = FAR
    out = sparse_vector(counts, 0.0, Fraction(1), 2, rng)
    assert out.hits == (70, 5000) and out.examined == 5001


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(-30, 30), min_size=1, max_size=30),
    threshold=st.floats(-20, 20),
    c=st.integers(1, 6),
    seed=st.integers(0, 2**32),
    numeric=st.booleans(),
)
def test_output_is_consistent(
    counts: list[int], threshold: float, c: int, seed: int, numeric: bool
) -> None:
    rng = SecureRandom(ShakeSource(str(seed)))
    out = sparse_vector(
        np.array(counts, dtype=np.int64), threshold, Fraction(1), c, rng, numeric=numeric
    )
    assert isinstance(out, SparseVectorResult)
    assert len(out.hits) <= c and list(out.hits) == sorted(set(out.hits))
    assert out.examined == (out.hits[-1] + 1 if len(out.hits) == c else len(counts))
    assert (out.answers is not None) == numeric
    if out.answers is not None:
        assert len(out.answers) == len(out.hits)
        assert all(float(a).is_integer() for a in out.answers)


def test_reproducible_with_an_injected_source() -> None:
    counts = np.arange(50, dtype=np.int64)

    def once() -> SparseVectorResult:
        return sparse_vector(counts, 25.0, 1, 3, SecureRandom(ShakeSource("same")), numeric=True)

    assert once() == once()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"threshold": math.nan}, SchemaError, "finite"),
        ({"threshold": math.inf}, SchemaError, "finite"),
        ({"threshold": True}, SchemaError, "real number"),
        ({"threshold": "10"}, SchemaError, "real number"),
        ({"threshold": 2.0**60}, SchemaError, "2\\*\\*53"),
        ({"max_hits": 0}, SchemaError, "max_hits"),
        ({"max_hits": -2}, SchemaError, "max_hits"),
        ({"max_hits": 1.5}, SchemaError, "max_hits"),
        ({"max_hits": True}, SchemaError, "max_hits"),
        ({"counts": np.array([], dtype=np.int64)}, SchemaError, "empty"),
        ({"counts": np.array([[1, 2]])}, SchemaError, "1-D"),
        ({"counts": np.array([1.0, 2.0])}, SchemaError, "integer dtype"),
        ({"counts": np.array([True, False])}, SchemaError, "integer dtype"),
        ({"counts": np.array([2**60])}, SchemaError, "2\\*\\*53"),
        ({"epsilon": 0}, InvalidBudgetError, "> 0"),
        ({"epsilon": Fraction(-1, 2)}, InvalidBudgetError, "> 0"),
        ({"epsilon": math.nan}, InvalidBudgetError, "finite"),
        ({"epsilon": math.inf}, InvalidBudgetError, "finite"),
        ({"epsilon": True}, InvalidBudgetError, "positive number"),
        ({"epsilon": "1"}, InvalidBudgetError, "positive number"),
        ({"epsilon": Fraction(1, 2**60)}, InvalidBudgetError, "too small"),
    ],
)
def test_bad_arguments(
    kwargs: dict[str, object], error: type[Exception], match: str, rng: SecureRandom
) -> None:
    args: dict[str, object] = {
        "counts": np.array([1, 2, 3]),
        "threshold": 2.0,
        "epsilon": 1,
        "max_hits": 1,
    }
    args.update(kwargs)
    with pytest.raises(error, match=match) as info:
        sparse_vector(rng=rng, **args)  # type: ignore[arg-type]
    assert isinstance(info.value, dp.DPError)


def test_errors_never_show_private_counts(rng: SecureRandom) -> None:
    with pytest.raises(SchemaError, match=r"below 2\*\*53") as info:
        sparse_vector(np.array([123456789, 2**60 + 987]), 1.0, 1, 1, rng)
    assert "123456789" not in str(info.value) and "987" not in str(info.value)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 1, 1, 0.1), "num_queries"),
        ((3, 1, 1, 0.0), "beta"),
        ((3, 1, 1, 1.0), "beta"),
        ((3, 1, 0, 0.1), "max_hits"),
    ],
)
def test_accuracy_bad_arguments(args: tuple[int, float, int, float], match: str) -> None:
    with pytest.raises(SchemaError, match=match):
        sparse_vector_accuracy(*args)


def test_module_uses_no_insecure_randomness() -> None:
    source = Path(svt_module.__file__).read_text()
    assert "np.random" not in source and "numpy.random" not in source
    assert "import random" not in source


# -- slow: the same checks on the public function, one call per run --------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("numeric", [False, True])
def test_public_function_hits_fit_exact_distribution(numeric: bool, rng: SecureRandom) -> None:
    counts, threshold, eps, c = DESIGN_C
    n = 20_000
    arr = np.array(counts, dtype=np.int64)
    observed = _observed(
        [sparse_vector(arr, threshold, eps, c, rng, numeric=numeric).hits for _ in range(n)]
    )
    _check_hits_fit(observed, n, numeric)


@pytest.mark.slow
def test_public_function_passes_privacy_check(rng: SecureRandom) -> None:
    counts, counts2, threshold, eps, c, runs, _, _ = DESIGNS["A"]

    def public(
        counts: IntArray, threshold: float, eps: Fraction, c: int, rng: SecureRandom, runs: int
    ) -> BoolArray:
        hits = np.zeros((runs, counts.size), dtype=np.bool_)
        for r in range(runs):
            hits[r, list(sparse_vector(counts, threshold, eps, c, rng).hits)] = True
        return hits

    hits_d = public(np.array(counts), threshold, eps, c, rng, runs)
    hits_d2 = public(np.array(counts2), threshold, eps, c, rng, runs)
    violated, certified, estimated = _privacy_check(hits_d, hits_d2, float(eps), _num_outputs(2, c))
    print(f"public function, design A: certified {certified:.3f}, estimated {estimated:.3f}")
    assert not violated
