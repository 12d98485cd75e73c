"""Privacy accountants (pure DP, approximate DP, zCDP, Gaussian DP) used as privacy filters.

An accountant turns a query's :class:`PrivacyRequest` into

* a :class:`Charge` in the accountant's native units, recorded in the ledger,
  and
* a :class:`NoiseAllocation` that tells the mechanism which noise to use
  (discrete Laplace with a pure-DP ε, or discrete Gaussian with a zCDP ρ).

Each accountant is a *privacy filter*: it admits a new charge only if the
composition of everything charged so far plus the new charge stays within
the session budget.  Because the test depends only on the charges (never on
the data or on the released values), the guarantee holds when the analyst
picks each query's cost adaptively after seeing earlier answers:
Rogers, Roth, Ullman, Vadhan 2016 (basic composition filters) and
Whitehouse, Ramdas, Rogers, Wu 2023 (fully adaptive zCDP / Rényi filters),
Smith & Thakurta 2022 (fully adaptive Gaussian DP filters,
:mod:`dpframe.accounting.gdp`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpframe.accounting.status import BudgetStatus, budget_status
from dpframe.errors import BudgetExceededError, InvalidBudgetError
from dpframe.mechanisms.calibration.gdp_curves import mu_from_epsilon_delta
from dpframe.mechanisms.core.allocation import NoiseAllocation, zcdp_epsilon
from dpframe.plan.privacy import Budget, PrivacyRequest

__all__ = [
    "Accountant",
    "AccountingKind",
    "ApproxDPAccountant",
    "Charge",
    "PureDPAccountant",
    "ZCDPAccountant",
    "rho_from_epsilon_delta",
]

AccountingKind = Literal["pure", "approx", "zcdp", "gdp"]
_ZERO = Fraction(0)
_RHO_DENOMINATOR = 2**60


@dataclass(frozen=True)
class Charge:
    """A cost in the accountant's native units: ε (pure/approx), δ, and ρ (zCDP)."""

    epsilon: Fraction = _ZERO
    delta: Fraction = _ZERO
    rho: Fraction = _ZERO

    def __add__(self, other: Charge) -> Charge:
        return Charge(self.epsilon + other.epsilon, self.delta + other.delta, self.rho + other.rho)


def rho_from_epsilon_delta(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The largest ρ (rounded down to a multiple of 2⁻⁶⁰) whose zCDP conversion is within (ε, δ).

    Inverts :func:`zcdp_epsilon`: ρ = (sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))².
    """
    if delta <= 0:
        raise InvalidBudgetError("zCDP needs delta > 0 to be reported as (epsilon, delta).")
    log_term = math.log(1.0 / float(delta))
    rho = (math.sqrt(log_term + float(epsilon)) - math.sqrt(log_term)) ** 2
    exact = Fraction(math.floor(rho * _RHO_DENOMINATOR * (1 - 1e-9)), _RHO_DENOMINATOR)
    while exact > 0 and zcdp_epsilon(float(exact), float(delta)) > float(epsilon):
        exact = exact * (1 - Fraction(1, 10**6))
    return exact


class Accountant(ABC):
    """Base class: a privacy filter over a fixed total budget.

    Subclasses define :meth:`allocate` (request → charge and noise),
    :meth:`spent` (the guarantee of the charges so far) and
    :meth:`admits` (the filter test).
    """

    kind: AccountingKind
    #: The least ε one release may cost, in the session's share units (the
    #: charge's ε: the request's ε, or under zCDP its share of the session's ε);
    #: 0 (the default): no minimum.  A curator sets it (``min_epsilon``).
    floor: Fraction = _ZERO

    def __init__(self, total: Budget) -> None:
        self.total = total

    @abstractmethod
    def allocate(
        self, request: PrivacyRequest, *, mechanism_delta: bool = False
    ) -> tuple[Charge, NoiseAllocation]:
        """Validate a request against this accounting and return its charge and noise.

        ``mechanism_delta``: the mechanism has a δ of its own (private key
        discovery): the request must carry δ > 0, which is charged as is.
        """

    @abstractmethod
    def admits(self, spent: Charge, charge: Charge) -> bool:
        """True when ``spent + charge`` stays within the total budget."""

    @abstractmethod
    def spent(self, spent: Charge) -> Budget:
        """The (ε, δ) guarantee that holds for everything charged so far."""

    @abstractmethod
    def remaining(self, spent: Charge) -> Budget:
        """The largest (ε, δ) a next query may still request."""

    def cost(self, request: PrivacyRequest, charge: Charge) -> Budget:
        """The (ε, δ) a release is said to cost: the request, or under zCDP its ε share."""
        if request.epsilon is not None:
            return Budget(request.epsilon, request.delta)
        return Budget(self._epsilon_of_rho(charge.rho), request.delta)

    def check(self, spent: Charge, charge: Charge, request: PrivacyRequest) -> None:
        """Raise :class:`BudgetExceededError` (charging nothing) if the filter refuses.

        Also raises :class:`InvalidBudgetError` (charging nothing) for a charge
        below :attr:`floor`.
        """
        if charge.epsilon < self.floor:
            raise InvalidBudgetError(
                f"This release costs epsilon {float(charge.epsilon):.3g} (in this session's "
                f"share units), below the least one release may cost here "
                f"({float(self.floor):.3g}); nothing was charged. Ask for at least "
                f"{float(self.floor):.3g}: a smaller epsilon buys only noise."
            )
        if self.admits(spent, charge):
            return
        remaining = self.remaining(spent)
        asked = self.cost(request, charge)
        diff_eps = max(asked.epsilon - remaining.epsilon, _ZERO)
        diff_delta = max(asked.delta - remaining.delta, _ZERO)
        status = self.status(spent)
        raise BudgetExceededError(
            "Privacy budget exceeded; nothing was charged and no data was read.\n"
            f"  Requested:  {asked}\n"
            f"  Remaining:  {remaining}\n"
            f"  Difference: {Budget(diff_eps, diff_delta)}\n"
            f"  Budget:     {status.used_text()}; {status.next_text()}\n"
            f"  {status.guarantee_text()}\n"
            "Ask for a smaller epsilon, or start a new session (with a new name) "
            "only if a fresh budget is justified."
        )

    def status(self, spent: Charge) -> BudgetStatus:
        """Share used, largest next release and guarantee after the charges ``spent``."""
        return budget_status(self.kind, self.total, self.spent(spent), self.remaining(spent))

    def _epsilon_of_rho(self, rho: Fraction) -> Fraction:
        return rho

    def describe(self) -> str:
        """A one-line description for reprs and the ledger."""
        return f"{self.kind} accounting, total {self.total}"


class PureDPAccountant(Accountant):
    """Pure ε-DP with basic composition: the spent ε is the exact sum of charges.

    Privacy: a sequence of ε_i-DP releases, each chosen adaptively, is
    (Σ ε_i)-DP; the filter admits a release while Σ ε_i ≤ ε_total.
    """

    kind: AccountingKind = "pure"

    def __init__(self, total: Budget) -> None:
        if total.delta != 0:
            raise InvalidBudgetError("Pure-DP accounting needs delta=0; use accounting='zcdp'.")
        super().__init__(total)

    def allocate(
        self, request: PrivacyRequest, *, mechanism_delta: bool = False
    ) -> tuple[Charge, NoiseAllocation]:
        """Laplace noise with the requested ε; δ must be 0."""
        if request.rho is not None or request.epsilon is None:
            raise InvalidBudgetError("rho= is only accepted in a zCDP session; use epsilon=.")
        if mechanism_delta:
            raise InvalidBudgetError(
                "This release spends a delta of its own (key discovery, or a sanitized "
                "copy's noisy length), and this session is pure DP (delta=0). Declare the "
                "keys with categories=... (a group-by), drop delta= (a copy), or use a "
                "session with delta > 0."
            )
        if request.delta != 0:
            raise InvalidBudgetError(
                "This session uses pure DP (delta=0), so a query cannot spend delta. "
                "Drop delta=, or create the session with delta > 0."
            )
        return Charge(epsilon=request.epsilon), NoiseAllocation("laplace", request.epsilon)

    def admits(self, spent: Charge, charge: Charge) -> bool:
        """Σ ε ≤ ε_total."""
        return spent.epsilon + charge.epsilon <= self.total.epsilon

    def spent(self, spent: Charge) -> Budget:
        """Exactly the sum of the charges."""
        return Budget(spent.epsilon, 0)

    def remaining(self, spent: Charge) -> Budget:
        """ε_total − Σ ε."""
        return self.total - Budget(spent.epsilon, 0)


class ApproxDPAccountant(Accountant):
    """Approximate (ε, δ)-DP with basic composition.

    Privacy: adaptively chosen (ε_i, δ_i)-DP releases compose to
    (Σ ε_i, Σ δ_i)-DP.  A query with δ > 0 uses discrete Gaussian noise
    calibrated with the analytic Gaussian mechanism (Balle & Wang 2018) in
    its Gaussian-DP form: μ is the largest with δ_μ(ε) ≤ δ (Dong, Roth & Su
    2019, Cor. 2.13), and the discrete sampler is corrected for
    (``currency="gdp"``, :func:`~dpframe.mechanisms.core.allocation.gaussian_rho`);
    a μ-GDP release is (ε, δ)-DP.  Mechanisms analysed only in Rényi DP
    (regressions by amplification by iteration) use
    ρ = (sqrt(ln(1/δ)+ε) − sqrt(ln(1/δ)))² instead, which
    is (ε, δ)-DP by Bun & Steinke 2016 (Prop. 1.3); δ = 0 uses Laplace noise.
    """

    kind: AccountingKind = "approx"

    def allocate(
        self, request: PrivacyRequest, *, mechanism_delta: bool = False
    ) -> tuple[Charge, NoiseAllocation]:
        """Laplace for δ = 0, otherwise a Gaussian calibrated exactly to (ε, δ) in GDP."""
        if request.rho is not None or request.epsilon is None:
            raise InvalidBudgetError("rho= is only accepted in a zCDP session; use epsilon=.")
        charge = Charge(epsilon=request.epsilon, delta=request.delta)
        if mechanism_delta:
            _require_delta(request)
            return charge, NoiseAllocation("laplace", request.epsilon)
        if request.delta == 0:
            return charge, NoiseAllocation("laplace", request.epsilon)
        mu = mu_from_epsilon_delta(request.epsilon, request.delta)
        rdp = rho_from_epsilon_delta(request.epsilon, request.delta)
        return charge, NoiseAllocation("gaussian", mu * mu / 2, "gdp", rdp)

    def admits(self, spent: Charge, charge: Charge) -> bool:
        """Σ ε ≤ ε_total and Σ δ ≤ δ_total."""
        return (
            spent.epsilon + charge.epsilon <= self.total.epsilon
            and spent.delta + charge.delta <= self.total.delta
        )

    def spent(self, spent: Charge) -> Budget:
        """Exactly the sums of the charges."""
        return Budget(spent.epsilon, spent.delta)

    def remaining(self, spent: Charge) -> Budget:
        """Total minus spent, component-wise."""
        return self.total - Budget(spent.epsilon, spent.delta)


class ZCDPAccountant(Accountant):
    """Approximate zCDP: tracks ρ (Gaussian noise) and δ (mechanisms with a δ of their own).

    A query's ``epsilon=`` is a *share* of the session: it receives
    ρ_q = ρ_total · ε_q / ε_total, where ρ_total is the largest ρ whose
    conversion is within the session's (ε, δ); ``rho=`` gives ρ directly.

    Privacy: adaptively chosen ρ_i-zCDP releases compose to (Σ ρ_i)-zCDP
    (fully adaptive filters: Whitehouse et al. 2023); (ρ, δ_m)-approximate
    zCDP is (ρ + 2·sqrt(ρ·ln(1/δ_c)), δ_m + δ_c)-DP (Bun & Steinke 2016).
    The filter admits a charge while ρ + 2·sqrt(ρ·ln(1/(δ − δ_m))) ≤ ε.
    """

    kind: AccountingKind = "zcdp"

    def __init__(self, total: Budget) -> None:
        if total.delta == 0:
            raise InvalidBudgetError(
                "zCDP accounting needs delta > 0 to report (epsilon, delta); "
                "use accounting='pure' for delta=0."
            )
        super().__init__(total)
        self.rho_total = rho_from_epsilon_delta(total.epsilon, total.delta)

    def allocate(
        self, request: PrivacyRequest, *, mechanism_delta: bool = False
    ) -> tuple[Charge, NoiseAllocation]:
        """Gaussian noise with ρ from ``rho=`` or from the ε share."""
        if request.rho is not None:
            rho = request.rho
        else:
            assert request.epsilon is not None
            rho = self.rho_total * request.epsilon / self.total.epsilon
        share = self._epsilon_of_rho(rho)  # recorded for people; the filter uses rho and delta
        if mechanism_delta:
            _require_delta(request)
            return Charge(share, request.delta, rho), NoiseAllocation("gaussian", rho)
        if request.delta != 0:
            raise InvalidBudgetError(
                "This aggregate has no delta of its own in a zCDP session (its Gaussian "
                "noise is accounted in rho); drop delta=."
            )
        return Charge(epsilon=share, rho=rho), NoiseAllocation("gaussian", rho)

    def _rho_max(self, delta_spent: Fraction) -> Fraction:
        if delta_spent >= self.total.delta:
            return _ZERO
        if delta_spent == 0:
            return self.rho_total
        return rho_from_epsilon_delta(self.total.epsilon, self.total.delta - delta_spent)

    def admits(self, spent: Charge, charge: Charge) -> bool:
        """The zCDP conversion of the new totals stays within (ε, δ)."""
        delta = spent.delta + charge.delta
        return delta < self.total.delta and spent.rho + charge.rho <= self._rho_max(delta)

    def spent(self, spent: Charge) -> Budget:
        """ε of Σρ at the δ left after mechanisms' own δ; δ the whole total once ρ > 0."""
        if spent.rho == 0:
            return Budget(0, spent.delta)
        delta_conv = self.total.delta - spent.delta
        eps = zcdp_epsilon(float(spent.rho), float(delta_conv))
        return Budget(Fraction(eps), self.total.delta)

    def remaining(self, spent: Charge) -> Budget:
        """The largest ε share (and δ) a next query may request."""
        rho_left = max(self._rho_max(spent.delta) - spent.rho, _ZERO)
        eps = self.total.epsilon * rho_left / self.rho_total
        return Budget(eps, self.total.delta - spent.delta)

    def _epsilon_of_rho(self, rho: Fraction) -> Fraction:
        return self.total.epsilon * rho / self.rho_total


def _require_delta(request: PrivacyRequest) -> None:
    if request.delta == 0:
        raise InvalidBudgetError(
            "This release needs a delta of its own (discovering keys privately): pass "
            "delta=... (e.g. 1e-7, well below 1/n), or declare the keys with categories=..."
        )
