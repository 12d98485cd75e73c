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

Releases with a δ of their own (key discovery, a copy with ``delta=``, a
Rényi-only regression) draw
their δ from a *fixed* reserve D set when the session is created (default
δ/10, :func:`default_delta_reserve`); μ_total is computed from (ε, δ − D),
and their ε-DP part is charged μ(ε) in the filter (proof note §3).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpframe.accounting.accountants import (
    Accountant,
    AccountingKind,
    Charge,
    rho_from_epsilon_delta,
)
from dpframe.errors import BudgetExceededError, InvalidBudgetError
from dpframe.mechanisms.calibration.gdp_curves import (
    epsilon_of_mu,
    gdp_epsilon,
    mu_from_epsilon_delta,
)
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.plan.privacy import Budget, PrivacyRequest

__all__ = [
    "DEFAULT_RESERVE_SHARE",
    "GaussianDPAccountant",
    "default_delta_reserve",
    "rho_total_gdp",
]

_ZERO = Fraction(0)
#: The default reserve for releases with a δ of their own: this share of the session's δ.
DEFAULT_RESERVE_SHARE = Fraction(1, 10)


def rho_total_gdp(epsilon: Fraction, delta: Fraction) -> Fraction:
    """μ_total²/2 for a session of (ε, δ): μ_total rounded down, squared exactly."""
    mu = mu_from_epsilon_delta(epsilon, delta)
    return mu * mu / 2


def default_delta_reserve(total: Budget) -> Fraction:
    """The reserve a Gaussian DP session of ``total`` gets when none is given: δ/10."""
    return total.delta * DEFAULT_RESERVE_SHARE


class GaussianDPAccountant(Accountant):
    """μ-GDP filter: a query's ``epsilon=`` is a share of μ_total² (ρ = μ²/2 per release).

    A query's ``epsilon=`` ε_q receives μ_q² = μ_total²·ε_q/ε_total, recorded
    as ρ_q = μ_q²/2; its noise is a ``currency="gdp"`` allocation: discrete
    Gaussians are calibrated so they are μ_q-GDP (corrected for the discrete
    sampler), ε-DP selections get the ε with μ(ε) ≤ μ_q.

    Privacy: with a fixed reserve D (``delta_reserve``, set at creation),
    μ_total is the largest μ with δ_μ(ε) ≤ δ − D.  Adaptively chosen
    releases, each μ_i-GDP or (with a δ_i of its own) a δ_i-mixture of a
    μ_i-GDP pair, admitted while Σμ_i² ≤ μ_total² and Σδ_i ≤ D, are together
    (ε, δ − D + D)-DP: the Gaussian DP filter (Smith & Thakurta 2022) on the
    μ part and basic composition of the reserved δ_i
    (docs/proofs/gdp_accounting.md §3).  An (ε_i, δ_i)-DP release (key
    discovery, a copy with δ) is charged μ(ε_i) = −2Φ⁻¹(1/(1+e^ε_i)) and
    δ_i.  With D = 0 such releases are refused.  Mechanisms analysed only in
    Rényi DP (regressions with ``analysis="iteration"``) count as such a
    release: they get the ρ whose zCDP conversion at δ_i is within ε_i.
    Regressions with ``analysis="rdp"`` run: their gradient steps are vector
    discrete Gaussians, composed in GDP.

    Args:
        total: the session's (ε, δ), 0 < δ < 1.
        delta_reserve: D, 0 ≤ D < δ; None for :func:`default_delta_reserve`.
    """

    kind: AccountingKind = "gdp"

    def __init__(self, total: Budget, delta_reserve: Fraction | None = None) -> None:
        if total.delta == 0:
            raise InvalidBudgetError(
                "Gaussian DP accounting needs delta > 0 to report (epsilon, delta); "
                "use accounting='pure' for delta=0."
            )
        if total.delta >= 1:
            raise InvalidBudgetError("delta must be below 1.")
        super().__init__(total)
        reserve = default_delta_reserve(total) if delta_reserve is None else delta_reserve
        if not 0 <= reserve < total.delta:
            raise InvalidBudgetError(
                "delta_reserve must be at least 0 and below the session's delta "
                f"({float(total.delta):.3g}); got {float(reserve):.3g}."
            )
        #: D: the δ kept for releases with a δ of their own (fixed at creation).
        self.delta_reserve = reserve
        self.rho_total = rho_total_gdp(total.epsilon, total.delta - reserve)
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
        rho = self.rho_total * request.epsilon / self.total.epsilon
        if mechanism_delta:
            if self.delta_reserve == 0:
                raise InvalidBudgetError(
                    "This release spends a delta of its own (key discovery, or a sanitized "
                    "copy with delta), and this Gaussian DP session keeps no delta for such "
                    "releases (delta_reserve=0). Declare the keys with categories=... (a "
                    "group-by), drop delta= (a copy), or create the session with "
                    "delta_reserve= (e.g. a tenth of its delta, the default)."
                )
            if request.delta == 0:
                raise InvalidBudgetError(
                    "This release needs a delta of its own in a Gaussian DP session (key "
                    "discovery, or a regression with analysis='iteration'): pass delta=... "
                    f"from the session's reserve ({float(self.delta_reserve):.3g} in all), "
                    "or declare the keys with categories=... (use analysis='rdp' for a "
                    "regression)."
                )
            charge = Charge(epsilon=request.epsilon, delta=request.delta, rho=rho)
            return charge, NoiseAllocation("gaussian", rho, "gdp", _renyi_rho(rho, request.delta))
        if request.delta != 0:
            raise InvalidBudgetError(
                "This aggregate has no delta of its own in a Gaussian DP session (its noise "
                "is accounted in mu); drop delta=."
            )
        return Charge(epsilon=request.epsilon, rho=rho), NoiseAllocation("gaussian", rho, "gdp")

    def admits(self, spent: Charge, charge: Charge) -> bool:
        """Σμ² ≤ μ_total² (Σρ ≤ ρ_total) and Σδ_i ≤ D, both exactly."""
        return (
            spent.delta + charge.delta <= self.delta_reserve
            and spent.rho + charge.rho <= self.rho_total
        )

    def check(self, spent: Charge, charge: Charge, request: PrivacyRequest) -> None:
        """As :meth:`Accountant.check`, saying so when the δ reserve is what refuses."""
        if spent.delta + charge.delta > self.delta_reserve and charge.epsilon >= self.floor:
            left = self.delta_reserve - spent.delta
            raise BudgetExceededError(
                "Privacy budget exceeded; nothing was charged and no data was read.\n"
                f"  This release asks delta {float(charge.delta):.3g} of its own; the "
                f"session's reserve for such releases has {float(left):.3g} left (of "
                f"{float(self.delta_reserve):.3g}, fixed when the session was created "
                "with delta_reserve=).\n"
                f"  Budget:     {self.status(spent).used_text()}; "
                f"{self.status(spent).next_text()}\n"
                f"  {self.status(spent).guarantee_text()}\n"
                "Ask for a smaller delta, declare the keys with categories=..., or start a "
                "new session (with a new name) only if a fresh budget is justified."
            )
        super().check(spent, charge, request)

    def spent(self, spent: Charge) -> Budget:
        """(ε, δ − D + Σδ_i) once ρ > 0: ε the least (rounded up) with δ_μ(ε) ≤ δ − D.

        Within the budget (Σρ ≤ ρ_total, so μ ≤ μ_total, whose ε is at most the
        session's) the ε is at most the session's ε: the float rounding up of
        the computation is not shown above it.  Beyond it (a curator's grant
        lowered below what was already spent) the ε is the true guarantee,
        above the session's ε, never capped at it.
        """
        if spent.rho == 0:
            return Budget(0, spent.delta)
        mu = float(2 * spent.rho) ** 0.5
        eps = Fraction(gdp_epsilon(mu * (1 + 1e-12), float(self.total.delta - self.delta_reserve)))
        if spent.rho <= self.rho_total:
            eps = min(eps, self.total.epsilon)
        delta = self.total.delta - self.delta_reserve + spent.delta
        return Budget(eps, delta)

    def remaining(self, spent: Charge) -> Budget:
        """The largest ε share a next query may request, and the δ not spent by releases.

        The δ is the session's minus what releases with a δ of their own spent
        (as for zCDP); such a release may ask at most :meth:`reserve_left`.
        """
        rho_left = max(self.rho_total - spent.rho, _ZERO)
        return Budget(
            self.total.epsilon * rho_left / self.rho_total,
            max(self.total.delta - spent.delta, _ZERO),
        )

    def reserve_left(self, spent: Charge) -> Fraction:
        """The δ a next release with a δ of its own may still ask (D − Σδ_i)."""
        return max(self.delta_reserve - spent.delta, _ZERO)

    def _epsilon_of_rho(self, rho: Fraction) -> Fraction:
        return self.total.epsilon * rho / self.rho_total

    def describe(self) -> str:
        """A one-line description for reprs and the ledger."""
        return (
            f"gdp accounting (mu_total={self.mu_total:.6g}, delta_reserve="
            f"{float(self.delta_reserve):.3g}), total {self.total}"
        )


def _renyi_rho(rho: Fraction, delta: Fraction) -> Fraction:
    """The ρ a Rényi-only mechanism may use as an (ε_i, δ)-DP release charged μ = sqrt(2ρ).

    ε_i is the largest ε with μ(ε) ≤ μ (so the mechanism's ε-part fits its μ,
    docs/proofs/gdp_accounting.md §2–3), and the ρ returned is the largest
    whose zCDP conversion at δ is within ε_i: a ρ-zCDP mechanism is then
    (ε_i, δ)-DP (Bun & Steinke 2016, Prop. 1.3).  Key discovery and copies
    ignore it (their ε comes from ``pure_epsilon``).
    """
    mu = Fraction(math.sqrt(2 * float(rho)) * (1 - 1e-12))
    epsilon = epsilon_of_mu(mu)
    return rho_from_epsilon_delta(epsilon, delta) if epsilon > 0 else _ZERO
