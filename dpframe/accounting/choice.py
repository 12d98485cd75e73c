"""Which accountant a session gets: :func:`make_accountant` from the session's budget and choice."""

from __future__ import annotations

from fractions import Fraction

from dpframe.accounting.accountants import (
    Accountant,
    AccountingKind,
    ApproxDPAccountant,
    PureDPAccountant,
    ZCDPAccountant,
)
from dpframe.accounting.gdp import GaussianDPAccountant
from dpframe.errors import InvalidBudgetError
from dpframe.plan.privacy import Budget

__all__ = ["default_accounting", "make_accountant"]


def make_accountant(
    total: Budget, accounting: str | None, delta_reserve: Fraction | None = None
) -> Accountant:
    """The accountant for a session: pure when δ = 0, Gaussian DP otherwise, unless overridden.

    ``delta_reserve``: a Gaussian DP session's reserve for releases with a δ of
    their own (None: the default, δ/10); refused for other accountings.
    """
    kind = accounting if accounting is not None else default_accounting(total)
    if delta_reserve is not None and kind != "gdp":
        raise InvalidBudgetError(
            f"delta_reserve= applies to Gaussian DP sessions (accounting='gdp'); this "
            f"session uses {kind!r} accounting, where releases with a delta of their own "
            "draw on the session's delta directly. Drop delta_reserve=."
        )
    if kind == "pure":
        return PureDPAccountant(total)
    if kind == "approx":
        return ApproxDPAccountant(total)
    if kind == "zcdp":
        return ZCDPAccountant(total)
    if kind == "gdp":
        return GaussianDPAccountant(total, delta_reserve)
    raise InvalidBudgetError(
        "accounting must be 'pure', 'approx' or a Gaussian one ('zcdp', 'gdp'), "
        f"got {accounting!r}."
    )


def default_accounting(total: Budget) -> AccountingKind:
    """The accounting of a new session that names none: pure when δ = 0, else Gaussian DP."""
    return "pure" if total.delta == 0 else "gdp"
