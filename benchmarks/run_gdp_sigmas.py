"""The Gaussian noise and selection ε that each accounting gives at equal (ε, δ).

Prints, for accounting = gdp (with the default δ reserve δ/10, with δ/100
and with none), zcdp and approx: σ of one count at (1, 1e-6),
σ of each of 100 equal counts sharing (1, 1e-6), and the ε a selection
(exponential mechanism / permute-and-flip) gets from a whole session of
(1, 1e-6) and (1, 1e-10); plus the discrete Gaussian's own δ at the
continuous analytic σ.  No data is read: the numbers come from the privacy
maps (``noise_for`` and ``pure_epsilon``) the releases use.

Run: ``python -m benchmarks.run_gdp_sigmas``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import logsumexp

from benchmarks.releases import new_releases
from dpframe.accounting import make_accountant
from dpframe.mechanisms.calibration.additive import noise_for
from dpframe.mechanisms.calibration.gdp_curves import gdp_delta, mu_from_epsilon_delta
from dpframe.mechanisms.core.allocation import pure_epsilon
from dpframe.plan.privacy import Budget, PrivacyRequest


def count_sigma(
    accounting: str,
    epsilon: float,
    delta: float,
    share: Fraction,
    reserve: Fraction | None = None,
) -> float:
    """σ of a count (Δ = 1) asking ``share`` of a session of (ε, δ) (gdp: δ ``reserve``)."""
    acc = make_accountant(Budget(epsilon, delta), accounting, reserve)
    if accounting == "approx":
        request = PrivacyRequest(epsilon=Fraction(epsilon) * share, delta=Fraction(delta) * share)
    else:
        request = PrivacyRequest(epsilon=Fraction(epsilon) * share)
    _, allocation = acc.allocate(request)
    _, _, spec = noise_for(1, 1.0, allocation)
    return spec.scale


def selection_epsilon(accounting: str, epsilon: float, delta: float) -> float:
    """The ε of one selection that spends a whole session of (ε, δ)."""
    acc = make_accountant(Budget(epsilon, delta), accounting)
    _, allocation = acc.allocate(PrivacyRequest(epsilon=epsilon))
    return float(pure_epsilon(allocation, Fraction(1, 2)))


def discrete_delta(sigma: float, sensitivity: int, epsilon: float) -> float:
    """δ(ε) of N_Z(0, σ²) against its shift by Δ (Canonne, Kamath, Steinke 2020, Thm 7)."""
    k = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    logp = -(k.astype(float) ** 2) / (2 * sigma * sigma)
    logp -= logsumexp(logp)
    p = np.exp(logp)
    t = epsilon * sigma * sigma / sensitivity
    first = p[k > t - sensitivity / 2].sum()
    second = p[k > t + sensitivity / 2].sum()
    return float(first - math.exp(epsilon) * second)


def main() -> None:
    """Print the table."""
    print("σ of counts (Δ = 1) at a session of (ε, δ) = (1, 1e-6)")
    print(f"{'accounting':>12} {'one count':>12} {'each of 100':>12}")
    reserves = {"gdp D=δ/10": None, "gdp D=δ/100": Fraction(1, 10**8), "gdp D=0": Fraction(0)}
    for label, reserve in reserves.items():  # None: the default reserve, δ/10
        one = count_sigma("gdp", 1.0, 1e-6, Fraction(1), reserve)
        hundred = count_sigma("gdp", 1.0, 1e-6, Fraction(1, 100), reserve)
        print(f"{label:>12} {one:12.4f} {hundred:12.4f}")
    for accounting in ("zcdp", "approx"):
        one = count_sigma(accounting, 1.0, 1e-6, Fraction(1))
        hundred = count_sigma(accounting, 1.0, 1e-6, Fraction(1, 100))
        shown = hundred if accounting != "approx" else float("nan")
        print(f"{accounting:>12} {one:12.4f} {shown:12.4f}")
    mu = float(mu_from_epsilon_delta(Fraction(1), Fraction(1, 10**6)))
    print(f"continuous analytic σ = 1/μ = {1 / mu:.4f} (μ_total = {mu:.6f})")
    print(f"  continuous δ at that σ: {gdp_delta(1.0, mu):.5g}")
    print(f"  discrete Gaussian δ at that σ: {discrete_delta(1 / mu, 1, 1.0):.5g}")
    s = count_sigma("gdp", 1.0, 1e-6, Fraction(1))
    print(f"  discrete Gaussian δ at the gdp σ = {s:.4f}: {discrete_delta(s, 1, 1.0):.5g}", end="")
    print(" (≤ 9e-7: δ − D)")
    print(f"  targets: one count within 1% of 4.22: {s / 4.22 - 1:+.2%};", end=" ")
    h = count_sigma("gdp", 1.0, 1e-6, Fraction(1, 100))
    print(f"100 counts within 2% of 42.2: {h / 42.2 - 1:+.2%}")
    print()
    print("ε of one selection spending the whole session")
    print(f"{'(ε, δ)':>12} {'gdp':>10} {'zcdp':>10} {'gdp/zcdp':>9}")
    for delta in (1e-6, 1e-10):
        g = selection_epsilon("gdp", 1.0, delta)
        z = selection_epsilon("zcdp", 1.0, delta)
        print(f"{f'(1, {delta:g})':>12} {g:10.4f} {z:10.4f} {g / z:9.3f}")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
