"""Gaussian differential privacy (μ-GDP): the exact curve, conversions, the discrete Gaussian's μ.

μ-GDP (Dong, Roth & Su 2019, "Gaussian differential privacy", JRSS-B 2022):
a mechanism is μ-GDP when telling two neighbours apart from its output is at
least as hard as telling N(0, 1) from N(μ, 1).  It composes exactly
(μ_i-GDP releases compose to sqrt(Σμ_i²)-GDP, also for fully adaptive
choices of μ_i under a filter: Smith & Thakurta 2022), and it is equivalent
to (ε, δ(ε))-DP for every ε ≥ 0 with

    δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)      (DRS 2019, Cor. 2.13).

Every function here rounds in the safe direction: a budget μ is rounded
down, a cost μ up, a reported ε up; the float evaluations carry a relative
margin (``_MARGIN``) far above their rounding error.

The discrete Gaussian N_Z(0, σ²) that dpframe samples is not exactly
(Δ/σ)-GDP: :func:`discrete_gaussian_mu` bounds its μ, and
:func:`discrete_gaussian_rho` gives the noise parameter that keeps every
integer-sensitivity release within a target μ.  The proof is in
``docs/proofs/gdp_accounting.md``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = [
    "discrete_gaussian_mu",
    "discrete_gaussian_rho",
    "discrete_gaussian_slack",
    "epsilon_of_mu",
    "gdp_delta",
    "gdp_epsilon",
    "mu_from_epsilon_delta",
    "mu_of_epsilon",
]

#: Relative safety margin on every float evaluation (their errors are ~1e-13 or less).
_MARGIN = 1e-9
_DENOMINATOR = 2**60
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def gdp_delta(epsilon: float, mu: float) -> float:
    """δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2), the exact (ε, δ) curve of μ-GDP.

    Computed in log space for the second term, so it stays accurate for large ε.
    """
    if mu <= 0:
        return 0.0
    if not math.isfinite(mu):
        return 1.0
    from scipy.special import log_ndtr, ndtr  # imported where first needed (import time)

    first = float(ndtr(-epsilon / mu + mu / 2))
    second = math.exp(epsilon + float(log_ndtr(-epsilon / mu - mu / 2)))
    return max(first - second, 0.0)


def _bisect(predicate_low: float, high: float, ok: object, steps: int = 200) -> float:
    """The largest x in [low, high] with ``ok(x)`` true (ok monotone: true then false)."""
    low = predicate_low
    assert callable(ok)
    for _ in range(steps):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        if ok(mid):
            low = mid
        else:
            high = mid
    return low


def mu_from_epsilon_delta(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The largest μ (a multiple of 2⁻⁶⁰, rounded down) with μ-GDP ⇒ (ε, δ)-DP.

    Inverts the exact curve :func:`gdp_delta` (increasing in μ) by bisection;
    the returned μ satisfies δ_μ(ε)·(1 + 10⁻⁹) ≤ δ.
    """
    eps, dlt = float(epsilon), float(delta)
    if not 0 < dlt < 1 or not eps > 0:
        raise ValueError("mu_from_epsilon_delta needs epsilon > 0 and 0 < delta < 1.")

    def ok(mu: float) -> bool:
        return gdp_delta(eps, mu) * (1 + _MARGIN) <= dlt

    high = 1.0
    while ok(high):
        high *= 2
    mu = _bisect(0.0, high, ok)
    exact = Fraction(math.floor(mu * _DENOMINATOR), _DENOMINATOR)
    while exact > 0 and not ok(float(exact)):  # float(Fraction) may round up: step down
        exact -= Fraction(1, _DENOMINATOR)
    return exact


def gdp_epsilon(mu: float, delta: float) -> float:
    """The least ε (rounded up) such that μ-GDP implies (ε, δ)-DP; 0 when μ = 0."""
    if mu <= 0:
        return 0.0
    if not 0 < delta < 1:
        raise ValueError("gdp_epsilon needs 0 < delta < 1.")

    def too_small(eps: float) -> bool:  # δ_μ(ε) decreases in ε
        return gdp_delta(eps, mu) > delta * (1 - _MARGIN)

    if not too_small(0.0):
        return 0.0
    high = 1.0
    while too_small(high):
        high *= 2
    low = _bisect(0.0, high, too_small)
    # ``low`` is the last ε still too small; the next float up is admissible.
    return math.nextafter(low, math.inf) * (1 + _MARGIN)


def mu_of_epsilon(epsilon: Fraction) -> Fraction:
    """The GDP cost of an ε-DP mechanism: μ(ε) = −2·Φ⁻¹(1/(1 + e^ε)), rounded up.

    Every ε-DP mechanism is μ(ε)-GDP (Dong, Roth & Su 2019, §2.4: the
    tradeoff function of ε-DP, f_{ε,0}, lies above G_{μ(ε)}; the two touch
    at the symmetric point α = 1/(1 + e^ε); docs/proofs/gdp_accounting.md §2).
    """
    eps = float(epsilon)
    if eps <= 0:
        return Fraction(0)
    if eps > 700:
        raise ValueError("epsilon is too large for a GDP cost.")
    from scipy.special import erfinv, ndtri

    if eps < 2:  # −2Φ⁻¹(½ − tanh(ε/2)/2) = 2·sqrt(2)·erf⁻¹(tanh(ε/2)), no cancellation
        mu = 2.0 * math.sqrt(2.0) * float(erfinv(math.tanh(eps / 2)))
    else:
        mu = -2.0 * float(ndtri(1.0 / (1.0 + math.exp(eps))))
    return Fraction(math.ceil(mu * (1 + _MARGIN) * _DENOMINATOR), _DENOMINATOR)


def epsilon_of_mu(mu: Fraction) -> Fraction:
    """The largest ε (rounded down) with μ(ε) ≤ μ: ε = ln(Φ(μ/2)/Φ(−μ/2)).

    An ε-DP mechanism run with this ε is μ-GDP (:func:`mu_of_epsilon`).
    """
    m = float(mu)
    if m <= 0:
        return Fraction(0)
    from scipy.special import erf, log_ndtr, ndtr

    if m < 30:  # ln(1 + (Φ(m/2) − Φ(−m/2))/Φ(−m/2)), no cancellation at small μ
        eps = math.log1p(float(erf(m / (2 * math.sqrt(2.0)))) / float(ndtr(-m / 2)))
    else:
        eps = float(log_ndtr(m / 2)) - float(log_ndtr(-m / 2))
    eps *= 1 - _MARGIN
    exact = Fraction(math.floor(eps * 2**40), 2**40)
    return exact if exact > 0 else Fraction(math.floor(eps * _DENOMINATOR), _DENOMINATOR)


def _theta_lower(r: float) -> float:
    """A lower bound on Z_r = Σ_{i∈Z} exp(−i²/(2r²)), the discrete Gaussian's normaliser.

    The larger of two lower bounds: the Poisson-summation form
    sqrt(2π)·r·(1 + 2Σ_{k≥1} exp(−2π²r²k²)) truncated, and the direct sum truncated.
    """
    poisson = _SQRT_2PI * r
    k = np.arange(1, 64, dtype=np.float64)
    poisson *= 1 + 2 * float(np.exp(-2 * math.pi**2 * r * r * k * k).sum())
    if r >= 2:
        return poisson
    i = np.arange(1, 200, dtype=np.float64)
    direct = 1 + 2 * float(np.exp(-i * i / (2 * r * r)).sum())
    return max(poisson, direct)


def discrete_gaussian_slack(r: float) -> float:
    """K(r) ≥ 1: for every σ ≥ r and integer Δ ≥ 1, N_Z(0, σ²) is (K(r)·Δ/σ)-GDP.

    K(r) = Φ⁻¹(½ + y)/(sqrt(2π)·y) with y = 1/(2·Z_r) (Z_r from below, so y
    from above); see ``docs/proofs/gdp_accounting.md`` (≈ 1 + 1/(24r²);
    1.0457 at r = 1, 1.0023 at r = 4.22).
    """
    if r <= 0:
        return math.inf
    y = 1.0 / (2.0 * _theta_lower(r))
    if y >= 0.5:
        return math.inf
    if y < 1e-4:  # Φ⁻¹(½ + y)/y → sqrt(2π)(1 + (π/3)y² + …): the series bounds it above
        return 1.0 + math.pi / 3 * y * y * 1.01 + _MARGIN
    from scipy.special import ndtri

    return float(ndtri(0.5 + y)) / (_SQRT_2PI * y) * (1 + _MARGIN)


def discrete_gaussian_mu(sigma: float, sensitivity: int) -> float:
    """An upper bound on the μ of the discrete Gaussian N_Z(0, σ²) at integer sensitivity Δ.

    Δ·K(σ)/σ: the probit gaps of N_Z(0, σ²) are largest at the centre
    (``docs/proofs/gdp_accounting.md``), and a shift by Δ is Δ unit shifts.
    """
    if sensitivity < 1:
        raise ValueError("sensitivity must be a positive integer.")
    return sensitivity * discrete_gaussian_slack(sigma) / sigma


def discrete_gaussian_rho(rho: Fraction, sensitivity: int = 1) -> Fraction:
    """The ρ′ (≤ ρ) to calibrate discrete Gaussians with so they stay (sqrt(2ρ))-GDP.

    A mechanism that adds N_Z(0, σ²) per coordinate with σ ≥ Δ/sqrt(2ρ′), for
    an integer shift of ℓ2 norm at most Δ, Δ ≥ ``sensitivity`` ≥ 1 (an
    integer), is u·K(s/u)-GDP with u = sqrt(2ρ′) and s = ``sensitivity``
    (σ ≥ Δ/u ≥ s/u, and K decreases: Δ·K(σ)/σ ≤ u·K(s/u));
    ρ′ is the largest multiple of 2⁻⁶⁰ (found by bisection) with
    u·K(s/u) ≤ sqrt(2ρ).  A ρ′ of 0 means no discrete Gaussian fits.
    ``sensitivity`` = 1 holds for every integer Δ; a caller that knows its
    Δ (``noise_for``) passes it, which matters only when σ/Δ is small
    (large ε), where K(1/u) would be far above K(σ).
    """
    if rho <= 0:
        return Fraction(0)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise ValueError("sensitivity must be a positive integer.")
    target = math.sqrt(float(rho) * 2) * (1 - _MARGIN)

    def ok(u: float) -> bool:
        return u > 0 and u * discrete_gaussian_slack(sensitivity / u) <= target

    u = _bisect(0.0, target, ok)
    exact = Fraction(math.floor(u * u / 2 * _DENOMINATOR), _DENOMINATOR)
    while exact > 0 and not ok(math.sqrt(2 * float(exact))):
        exact -= Fraction(1, _DENOMINATOR)
    return exact
