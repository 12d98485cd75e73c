"""MST's privacy map pinned tightly, and its marginals' noise tested statistically.

The statistical tests draw the released noise through the family's own
measurement function with the noise the privacy map planned; each accepts the
true scale and rejects a scale 30% off at ALPHA = 1e-7 per test (five tests,
total false-failure probability below 5e-7).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.api.verbs.synthesis import synthesis_node
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.synth.synth_family import measure_marginal, synth_noise
from dpframe.noise import SecureRandom
from tests.stats_helpers import ALPHA, chi2_pvalue, dgauss_pmf, dlaplace_pmf
from tests.test_synth import cps_frame


def _node(columns: list[str]) -> object:
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    return synthesis_node(cps_frame(session)[columns], dp.Privacy(epsilon=1), "mst", None, None)


def _zcdp_used(node: object, rho: Fraction, shrink: float = 1.0) -> float:
    """The ρ the planned noise spends, with every noise scale multiplied by ``shrink``."""
    noise = synth_noise(node, NoiseAllocation("gaussian", rho))  # type: ignore[arg-type]
    d = len(node.columns)  # type: ignore[attr-defined]
    _, units1, spec1 = noise.one_way[1]
    used = d * units1**2 / (2 * float(spec1.parameter) * shrink**2)
    if noise.two_way is not None:
        _, units2, spec2 = noise.two_way[1]
        used += (d - 1) * units2**2 / (2 * float(spec2.parameter) * shrink**2)
    if noise.select_epsilon is not None:
        used += (d - 1) * (float(noise.select_epsilon) / shrink) ** 2 / 2
    return used


def _pure_used(node: object, epsilon: Fraction, shrink: float = 1.0) -> float:
    noise = synth_noise(node, NoiseAllocation("laplace", epsilon))  # type: ignore[arg-type]
    d = len(node.columns)  # type: ignore[attr-defined]
    _, units1, spec1 = noise.one_way[1]
    used = d * units1 / (float(spec1.parameter) * shrink)
    if noise.two_way is not None:
        _, units2, spec2 = noise.two_way[1]
        used += (d - 1) * units2 / (float(spec2.parameter) * shrink)
    if noise.select_epsilon is not None:
        used += (d - 1) * float(noise.select_epsilon) / shrink
    return used


@pytest.mark.parametrize(
    "columns",
    [["region"], ["wage", "region"], ["wage", "education", "region", "parttime", "smsa"]],
)
def test_privacy_map_is_tight(columns: list[str]) -> None:
    node = _node(columns)
    rho = Fraction(1, 57)
    assert _zcdp_used(node, rho) <= float(rho)
    assert _zcdp_used(node, rho, shrink=0.999) > float(rho)  # 0.1% less noise: over
    assert _zcdp_used(node, rho, shrink=0.99) > float(rho)
    epsilon = Fraction(3, 7)
    assert _pure_used(node, epsilon) <= float(epsilon)
    assert _pure_used(node, epsilon, shrink=0.999) > float(epsilon)


def test_engine_charges_exactly_the_request() -> None:
    session = dp.Session(epsilon=2.0, delta=0, ledger=":memory:")
    pf = cps_frame(session)[["wage", "region", "parttime"]]
    pf.synthesize(epsilon=0.75, rows=100, progress=False)
    assert session.spent.epsilon == pytest.approx(0.75, abs=1e-12)
    assert session.ledger["mechanism"].iloc[0] == "MST (discrete Laplace)"


def _draws(kind: str, parameter: Fraction) -> tuple[np.ndarray, float]:
    node = _node(["wage", "education", "region"])
    noise = synth_noise(node, NoiseAllocation(kind, parameter))  # type: ignore[arg-type,arg-type]
    rng = SecureRandom()
    zeros = np.zeros(20_000)
    noisy, spec = measure_marginal(zeros, noise.one_way, noise.sensitivity, rng)
    assert spec.grid == 1.0
    return noisy.astype(np.int64), float(spec.parameter)


def test_one_way_noise_is_the_stated_discrete_gaussian() -> None:
    draws, sigma2 = _draws("gaussian", Fraction(1, 50))
    assert sigma2 == pytest.approx(3 * 3 / (2 * (1 / 50)), rel=1e-5)  # d / (2 ρ/3)
    assert chi2_pvalue(draws, dgauss_pmf(sigma2)) > ALPHA
    assert chi2_pvalue(draws, dgauss_pmf(sigma2 * 1.3**2)) < ALPHA
    assert chi2_pvalue(draws, dgauss_pmf(sigma2 / 1.3**2)) < ALPHA


def test_one_way_noise_is_the_stated_discrete_laplace() -> None:
    draws, scale = _draws("laplace", Fraction(1, 2))
    assert scale == pytest.approx(3 * 3 / 0.5, rel=1e-5)  # d / (ε/3)
    assert chi2_pvalue(draws, dlaplace_pmf(scale)) > ALPHA
    assert chi2_pvalue(draws, dlaplace_pmf(scale * 1.3)) < ALPHA
    assert chi2_pvalue(draws, dlaplace_pmf(scale / 1.3)) < ALPHA


@pytest.mark.fresh_releases  # repeats one request to sample its noise (issue 31)
def test_released_one_way_marginals_carry_the_stated_noise() -> None:
    """End to end: the copies' released 1-way counts minus the exact counts.

    Ten releases of a 2-column frame with 120 + 150 categories and a missing
    cell each: 2,720 residuals; the variance test (chi-square on the sum of squares, known
    mean 0) accepts the stated σ² and rejects 1.3² σ² and σ²/1.3² at 1e-7.
    """
    gen = np.random.default_rng(7)  # test data only
    cats_a, cats_b = [f"a{i}" for i in range(120)], [f"b{i}" for i in range(150)]
    data = pd.DataFrame({"a": gen.choice(cats_a, 3000), "b": gen.choice(cats_b, 3000)})
    # Each column's cells in the schema's (sorted) order, then its missing cell (text may be
    # missing; none is here).
    exact_a = np.append(
        data["a"].value_counts().reindex(sorted(cats_a), fill_value=0).to_numpy(), 0
    )
    exact_b = np.append(
        data["b"].value_counts().reindex(sorted(cats_b), fill_value=0).to_numpy(), 0
    )
    residuals = []
    sigma2 = None
    for _ in range(10):
        session = dp.Session(epsilon=10.0, delta=1e-6, ledger=":memory:", accounting="zcdp")
        pf = session.private_frame(data, categories={"a": cats_a, "b": cats_b})
        info = pf.synthesize(rho=0.02, rows=10, progress=False).attrs["dpframe_synth"]
        residuals.append(np.asarray(info.one_way[0]) - exact_a)
        residuals.append(np.asarray(info.one_way[1]) - exact_b)
        sigma2 = info.one_way_std**2
    assert sigma2 is not None
    r = np.concatenate(residuals)
    n = len(r)
    statistic = float(np.sum(r**2))
    for factor, accept in ((1.0, True), (1.3**2, False), (1 / 1.3**2, False)):
        scaled = statistic / (sigma2 * factor)
        p = 2 * min(stats.chi2.sf(scaled, n), stats.chi2.cdf(scaled, n))
        assert (p > ALPHA) == accept, (factor, p)
