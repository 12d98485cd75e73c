"""Gaussian DP curves, conversions and the discrete Gaussian's μ (docs/proofs/gdp_accounting.md).

The discrete Gaussian checks compute its exact probit gaps ψ(j) − ψ(j − m),
ψ = Φ⁻¹∘F, from log-CDFs (``ndtri_exp``), which is the least μ for which the
shift is μ-GDP (Lemma A of the proof note).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp, ndtr, ndtri, ndtri_exp

from dpframe.mechanisms.calibration.additive import noise_for
from dpframe.mechanisms.calibration.gdp_curves import (
    discrete_gaussian_mu,
    discrete_gaussian_rho,
    discrete_gaussian_slack,
    epsilon_of_mu,
    gdp_delta,
    gdp_epsilon,
    mu_from_epsilon_delta,
    mu_of_epsilon,
)
from dpframe.mechanisms.core.allocation import NoiseAllocation, gaussian_rho, pure_epsilon


def _log_cdf(sigma: float, reach: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(j, log F(j)) of N_Z(0, σ²) for j in [−reach, reach]."""
    tail = reach + int(40 * sigma) + 40
    k = np.arange(-tail, tail + 1)
    logp = -(k.astype(np.float64) ** 2) / (2 * sigma * sigma)
    logp -= logsumexp(logp)
    log_cdf = np.logaddexp.accumulate(logp)
    keep = (k >= -reach) & (k <= reach)
    return k[keep], np.minimum(log_cdf[keep], -1e-300)


def _probit_gaps(sigma: float, shift: int, reach: int) -> npt.NDArray[np.float64]:
    """ψ(j) − ψ(j − shift) for j ≤ 0 (the gaps are symmetric about the centre)."""
    j, log_cdf = _log_cdf(sigma, reach)
    psi = ndtri_exp(log_cdf)
    gaps = psi[shift:] - psi[:-shift]
    upper = j[shift:]
    return np.asarray(gaps[upper <= (shift - 1) // 2])  # mirror: j ↦ shift − 1 − j


def _discrete_delta(sigma: float, shift: int, epsilon: float) -> float:
    """δ(ε) of N_Z(0, σ²) against N_Z(shift, σ²) (Canonne, Kamath, Steinke 2020, Thm 7)."""
    k = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    logp = -(k.astype(np.float64) ** 2) / (2 * sigma * sigma)
    p = np.exp(logp - logsumexp(logp))
    t = epsilon * sigma * sigma / shift
    return float(p[k > t - shift / 2].sum() - math.exp(epsilon) * p[k > t + shift / 2].sum())


# -- the continuous curve --------------------------------------------------------------


def test_gdp_delta_known_values() -> None:
    # δ_μ(0) = 2Φ(μ/2) − 1 (total variation of N(0,1) and N(μ,1)).
    assert gdp_delta(0.0, 1.0) == pytest.approx(2 * ndtr(0.5) - 1, rel=1e-12)
    # Large ε: the second term in log space stays accurate (no negative δ, no NaN).
    assert 0 <= gdp_delta(60.0, 1.0) < 1e-300
    assert gdp_delta(1.0, 0.0) == 0.0


def test_session_mu_is_tight_at_one_in_a_million() -> None:
    """μ_total at (1, 1e-6) admits; 1% more μ (1% less noise) breaks δ."""
    mu = float(mu_from_epsilon_delta(Fraction(1), Fraction(1, 10**6)))
    assert mu == pytest.approx(0.23670438, rel=1e-7)
    assert gdp_delta(1.0, mu) <= 1e-6
    assert gdp_delta(1.0, mu * 1.001) > 1e-6
    assert gdp_delta(1.0, mu / 0.99) > 1e-6
    assert gdp_epsilon(mu, 1e-6) == pytest.approx(1.0, rel=1e-8)
    assert gdp_epsilon(mu, 1e-6) >= 1.0 - 1e-12


@settings(max_examples=60, deadline=None)
@given(
    st.floats(min_value=0.01, max_value=20.0),
    st.floats(min_value=1e-14, max_value=0.1),
)
def test_mu_from_epsilon_delta_is_safe_and_tight(epsilon: float, delta: float) -> None:
    mu = mu_from_epsilon_delta(Fraction(epsilon), Fraction(delta))
    assert mu > 0
    assert gdp_delta(epsilon, float(mu)) <= delta
    assert gdp_delta(epsilon, float(mu) * 1.001) > delta
    # Reporting goes the other way and rounds up: never below the ε it came from.
    assert gdp_epsilon(float(mu), delta) >= epsilon * (1 - 1e-12)


# -- pure ε-DP in GDP -------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=1e-4, max_value=30.0))
def test_pure_epsilon_cost_matches_the_tradeoff_corner(epsilon: float) -> None:
    """μ(ε) is where G_μ passes the corner (α*, α*) of f_{ε,0}, α* = 1/(1+e^ε).

    (Below ε = 1e-4 this float check itself loses the precision; the small-ε
    branch is checked against its series in the next test.)
    """
    mu = float(mu_of_epsilon(Fraction(epsilon)))
    corner = 1 / (1 + math.exp(epsilon))
    g = float(ndtr(-ndtri(corner) - mu))  # G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), Φ⁻¹(1 − α) = −Φ⁻¹(α)
    assert g <= corner * (1 + 1e-9)  # the corner lies above G_μ: ε-DP ⇒ μ-GDP
    g_less = float(ndtr(-ndtri(corner) - mu * 0.99))
    assert g_less > corner  # 1% less μ: the corner is below, not μ-GDP
    back = epsilon_of_mu(Fraction(mu))
    assert float(mu_of_epsilon(back)) <= mu * (1 + 3e-9)


@pytest.mark.parametrize("epsilon", [1e-12, 1e-9, 1e-6, 1e-4])
def test_pure_epsilon_cost_at_small_epsilon(epsilon: float) -> None:
    """μ(ε) = 2·sqrt(2)·erf⁻¹(z), z = tanh(ε/2); erf⁻¹(z) ≥ (√π/2)(z + πz³/12) (positive series)."""
    z = math.tanh(epsilon / 2)
    series = math.sqrt(2 * math.pi) * (z + math.pi * z**3 / 12)
    mu = float(mu_of_epsilon(Fraction(epsilon)))
    assert series <= mu <= series * (1 + 1e-8) + 2.0**-60  # rounded up to a multiple of 2⁻⁶⁰


def test_pure_epsilon_under_a_gdp_allocation() -> None:
    """A selection in a gdp allocation gets the ε whose μ(ε) fits, not sqrt(2ρ)."""
    mu = mu_from_epsilon_delta(Fraction(1), Fraction(1, 10**6))
    allocation = NoiseAllocation("gaussian", mu * mu / 2, "gdp")
    eps = pure_epsilon(allocation, Fraction(1, 2))
    assert float(eps) == pytest.approx(0.18898, rel=1e-4)
    assert mu_of_epsilon(eps) <= mu
    assert mu_of_epsilon(eps * Fraction(101, 100)) > mu


# -- the discrete Gaussian ----------------------------------------------------------------


def test_discrete_gaussian_is_two_percent_over_at_the_continuous_sigma() -> None:
    """The issue's number: at σ = 4.2247, Δ = 1, the discrete δ(1) is 1.0197e-6."""
    assert _discrete_delta(4.2247, 1, 1.0) == pytest.approx(1.0197e-6, rel=1e-3)


SIGMAS = [float(s) for s in np.geomspace(0.2, 200, 40)]


@pytest.mark.parametrize("sigma", SIGMAS)
def test_unit_gaps_are_largest_at_the_centre(sigma: float) -> None:
    """Lemma C (checked, not proved): ψ(j) − ψ(j−1) increases towards j = 0, for j ≤ 0."""
    gaps = _probit_gaps(sigma, 1, max(3000, int(40 * sigma)))
    centre = 2 * float(ndtri(0.5 + 0.5 / math.exp(logsumexp(_grid_logp(sigma)))))
    assert gaps.max() == pytest.approx(centre, rel=1e-9)
    assert np.all(np.diff(gaps) >= -1e-10 * centre)  # float noise of ψ is ~1e-14
    assert gaps.min() * sigma >= 1.0 - 1e-9  # the tails tend to 1/σ from above
    assert centre * sigma <= discrete_gaussian_slack(sigma)


def _grid_logp(sigma: float) -> npt.NDArray[np.float64]:
    k = np.arange(-int(40 * sigma) - 40, int(40 * sigma) + 41).astype(np.float64)
    return np.asarray(-(k**2) / (2 * sigma * sigma))


@pytest.mark.parametrize("r", [0.3, 0.7, 1.0, 2.0, 4.2247, 10.0, 50.0])
def test_slack_bounds_every_larger_sigma(r: float) -> None:
    """Lemma D: K(r) ≥ σ·(centre gap) for every σ ≥ r, and K is decreasing."""
    for sigma in np.geomspace(r, 100 * r, 25):
        centre = 2 * float(ndtri(0.5 + 0.5 / math.exp(logsumexp(_grid_logp(float(sigma))))))
        assert centre * sigma <= discrete_gaussian_slack(r)
    assert discrete_gaussian_slack(r) >= discrete_gaussian_slack(r * 1.5) >= 1.0


@pytest.mark.parametrize(("sigma", "shift"), [(1.0, 1), (1.0, 2), (2.5, 3), (4.0, 7), (0.8, 5)])
def test_shift_by_m_is_at_most_m_unit_shifts(sigma: float, shift: int) -> None:
    """Lemma B, and the bound ``discrete_gaussian_mu`` against the exact sup of the gaps."""
    exact = _probit_gaps(sigma, shift, 400).max()
    assert exact <= shift * _probit_gaps(sigma, 1, 400).max() * (1 + 1e-12)
    assert exact <= discrete_gaussian_mu(sigma, shift)
    assert exact > shift / sigma  # the discrete Gaussian is worse than the continuous one


@pytest.mark.parametrize("share", [Fraction(1), Fraction(1, 100), Fraction(1, 7)])
def test_calibrated_count_is_within_its_mu_and_tight(share: Fraction) -> None:
    """The σ noise_for uses for a GDP allocation admits (exact discrete μ ≤ charged μ);
    0.1% less noise exceeds the charged μ, 1% less breaks the session's δ(1) curve."""
    mu_total = mu_from_epsilon_delta(Fraction(1), Fraction(1, 10**6))
    rho = mu_total * mu_total / 2 * share
    mu = math.sqrt(2 * float(rho))
    _, sens_units, spec = noise_for(1, 1.0, NoiseAllocation("gaussian", rho, "gdp"))
    sigma = math.sqrt(float(spec.parameter))
    exact = _probit_gaps(sigma, sens_units, max(400, int(20 * sigma))).max()
    assert exact <= mu
    assert _probit_gaps(sigma * 0.999, sens_units, max(400, int(20 * sigma))).max() > mu
    if share == 1:  # the whole session: δ(1) of the discrete Gaussian itself
        assert _discrete_delta(sigma, 1, 1.0) <= 1e-6
        assert _discrete_delta(sigma * 0.99, 1, 1.0) > 1e-6
        assert sigma == pytest.approx(4.2345, rel=1e-4)


@pytest.mark.parametrize("sensitivity", [1, 2, 3, 5, 1000, 5000])
def test_integer_sensitivities_and_grid_widening_stay_within_mu(sensitivity: int) -> None:
    """Any integer Δ (and the widened Δ_u of a grid) keeps the release within μ."""
    rho = Fraction(1, 8)  # μ = 0.5: σ/Δ ≈ 2, where the correction is about 1%
    _, sens_units, spec = noise_for(sensitivity, 1.0, NoiseAllocation("gaussian", rho, "gdp"))
    sigma = math.sqrt(float(spec.parameter))
    assert discrete_gaussian_mu(sigma, sens_units) <= 0.5
    if sens_units <= 5:
        assert _probit_gaps(sigma, sens_units, 200).max() <= 0.5


def test_gaussian_rho_keeps_zcdp_allocations_unchanged() -> None:
    assert gaussian_rho(NoiseAllocation("gaussian", Fraction(1, 3))) == Fraction(1, 3)
    lowered = gaussian_rho(NoiseAllocation("gaussian", Fraction(1, 3), "gdp"))
    assert lowered < Fraction(1, 3)
    assert discrete_gaussian_rho(Fraction(0)) == 0


def test_vector_of_discrete_gaussians_within_mu() -> None:
    """Lemma B for vectors: an integer shift v is ‖v‖·K/σ-GDP; per coordinate exact gaps."""
    rho = Fraction(1, 50)  # μ = 0.2
    lowered = discrete_gaussian_rho(rho)
    sigma = 3 / math.sqrt(2 * float(lowered))  # ℓ2 sensitivity 3 in grid units
    shift = [2, 2, 1]  # ‖v‖ = 3
    mus = [_probit_gaps(sigma, m, 400).max() for m in shift]
    assert math.sqrt(sum(m * m for m in mus)) <= 0.2


@settings(max_examples=30, deadline=None)
@given(
    st.floats(min_value=0.05, max_value=3.0),
    st.integers(min_value=1, max_value=4),
)
def test_calibration_admits_for_any_mu_and_small_sensitivity(mu: float, sensitivity: int) -> None:
    """For any μ and integer Δ, the σ calibrated from a GDP allocation keeps the exact μ ≤ μ."""
    rho = Fraction(mu) ** 2 / 2
    _, sens_units, spec = noise_for(sensitivity, 1.0, NoiseAllocation("gaussian", rho, "gdp"))
    sigma = math.sqrt(float(spec.parameter))
    reach = max(300, int(30 * sigma))
    assert _probit_gaps(sigma, sens_units, reach).max() <= mu
