"""Gaussian differential privacy accounting: a μ-GDP privacy filter reported as (ε, δ).

The session's (ε, δ) is turned into the largest μ_total whose exact curve
δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) is at most δ (Dong, Roth & Su
2019, Cor. 2.13), rounded down.  Each release is charged a μ_i (recorded as
ρ_i = μ_i²/2, the same currency the zCDP accountant uses, so shares and
splits keep their meaning in μ²), and the filter admits while
Σμ_i² ≤ μ_total², exactly, in rational arithmetic.  The filter is valid for
fully adaptive choices of the μ_i (Smith & Thakurta 2022, "Fully adaptive
composition for Gaussian differential privacy").  The proof, including the
discrete Gaussian correction, is ``docs/proofs/gdp_accounting.md``.
"""

from __future__ import annotations

from fractions import Fraction

from dpframe.accounting.accountants import Accountant, AccountingKind, Charge
from dpframe.errors import InvalidBudgetError
from dpframe.mechanisms.allocation import NoiseAllocation
from dpframe.mechanisms.gdp_curves import gdp_epsilon, mu_from_epsilon_delta
from dpframe.plan.privacy import Budget, PrivacyRequest

__all__ = ["GaussianDPAccountant", "rho_total_gdp"]

_ZERO = Fraction(0)


def rho_total_gdp(epsilon: Fraction, delta: Fraction) -> Fraction:
    """μ_total²/2 for a session of (ε, δ): μ_total rounded down, squared exactly."""
    mu = mu_from_epsilon_delta(epsilon, delta)
    return mu * mu / 2


class GaussianDPAccountant(Accountant):
    """μ-GDP filter: a query's ``epsilon=`` is a share of μ_total² (ρ = μ²/2 per release).

    A query's ``epsilon=`` ε_q receives μ_q² = μ_total²·ε_q/ε_total, recorded
    as ρ_q = μ_q²/2; its noise is a ``currency="gdp"`` allocation: discrete
    Gaussians are calibrated so they are μ_q-GDP (corrected for the discrete
    sampler), ε-DP selections get the ε with μ(ε) ≤ μ_q.

    Privacy: adaptively chosen μ_i-GDP releases, admitted while
    Σμ_i² ≤ μ_total², are together μ_total-GDP (Smith & Thakurta 2022),
    hence (ε, δ_μ_total(ε))-DP with δ_μ_total(ε) ≤ δ.  Releases with a δ of
    their own (key discovery, a sanitized copy's noisy length) and
    mechanisms analysed only in Rényi DP (regressions with
    ``analysis="iteration"``) are refused: an (ε, δ)-DP mechanism with
    δ > 0 is not μ-GDP for any μ.  Regressions with ``analysis="rdp"`` run:
    their gradient steps are vector discrete Gaussians, composed in GDP.
    """

    kind: AccountingKind = "gdp"

    def __init__(self, total: Budget) -> None:
        if total.delta == 0:
            raise InvalidBudgetError(
                "Gaussian DP accounting needs delta > 0 to report (epsilon, delta); "
                "use accounting='pure' for delta=0."
            )
        if total.delta >= 1:
            raise InvalidBudgetError("delta must be below 1.")
        super().__init__(total)
        self.rho_total = rho_total_gdp(total.epsilon, total.delta)
        if self.rho_total <= 0:
            raise InvalidBudgetError("This (epsilon, delta) leaves no Gaussian budget.")

    @property
    def mu_total(self) -> float:
        """The session's μ (rounded down), for people."""
        return float((2 * self.rho_total) ** Fraction(1, 2))

    def allocate(
        self, request: PrivacyRequest, *, mechanism_delta: bool = False
    ) -> tuple[Charge, NoiseAllocation]:
        """A GDP-currency Gaussian allocation of the request's share of μ_total²."""
        if request.rho is not None or request.epsilon is None:
            raise InvalidBudgetError(
                "rho= is only accepted in a zCDP session; this session uses Gaussian DP "
                "(accounting='gdp'): give epsilon=, a share of the session's budget."
            )
        if mechanism_delta:
            raise InvalidBudgetError(
                "This release spends a delta of its own (key discovery, or a sanitized "
                "copy's noisy length), which Gaussian DP accounting cannot compose. Declare "
                "the keys with categories=... (a group-by), drop delta= (a copy), or create "
                "the session with accounting='zcdp'."
            )
        if request.delta != 0:
            raise InvalidBudgetError(
                "This aggregate has no delta of its own in a Gaussian DP session (its noise "
                "is accounted in mu); drop delta=."
            )
        rho = self.rho_total * request.epsilon / self.total.epsilon
        return Charge(epsilon=request.epsilon, rho=rho), NoiseAllocation("gaussian", rho, "gdp")

    def admits(self, spent: Charge, charge: Charge) -> bool:
        """Σμ² ≤ μ_total², i.e. Σρ ≤ ρ_total, exactly; no release has a δ of its own."""
        return spent.delta + charge.delta == 0 and spent.rho + charge.rho <= self.rho_total

    def spent(self, spent: Charge) -> Budget:
        """The least ε (rounded up) whose δ_μ(ε) ≤ δ for μ = sqrt(Σμ²); δ the total once spent."""
        if spent.rho == 0:
            return Budget(0, spent.delta)
        mu = float(2 * spent.rho) ** 0.5
        eps = gdp_epsilon(mu * (1 + 1e-12), float(self.total.delta))
        return Budget(min(Fraction(eps), self.total.epsilon), self.total.delta)

    def remaining(self, spent: Charge) -> Budget:
        """The largest ε share a next query may request (δ stays with the session)."""
        rho_left = max(self.rho_total - spent.rho, _ZERO)
        return Budget(self.total.epsilon * rho_left / self.rho_total, self.total.delta)

    def _epsilon_of_rho(self, rho: Fraction) -> Fraction:
        return self.total.epsilon * rho / self.rho_total

    def describe(self) -> str:
        """A one-line description for reprs and the ledger."""
        return f"gdp accounting (mu_total={self.mu_total:.6g}), total {self.total}"
