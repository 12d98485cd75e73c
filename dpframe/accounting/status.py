"""The budget in figures that add up: the share used, the largest next release, the guarantee.

"Used + left = total" holds only in a unit that composes linearly: ε under pure
(and approximate) DP, ρ under zCDP, μ² under Gaussian DP.  A request's
``epsilon=`` is a share of the session's total in that unit (under zCDP and
Gaussian DP, ρ_q = ρ_total·ε_q/ε_total), so the share used is
``1 − remaining.epsilon / total.epsilon`` in every accounting, and it adds up:
two releases of 25% each use 50%.  The formal (ε, δ) guarantee of everything
released so far is another figure: under zCDP and Gaussian DP it is *not* the
sum of the shares (the conversion from ρ or μ is not additive), so it is
stated on its own line, in words.

Everything here is computed from public budget figures (the session's total,
what it has charged, the accountant's conversion), never from the data, so
the meter, ``session.used_share``, ``session.guarantee`` and the refusals can
all say the same three things.  Numbers are rounded as releases are (two
significant digits): the largest next release rounded *down* (asking for the
figure shown is admitted), the guarantee rounded *up* (it is never understated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpframe.plan.privacy import Budget

__all__ = [
    "UNITS",
    "BudgetStatus",
    "budget_status",
    "guarantee_words",
    "round_down",
    "round_up",
    "share_text",
]

#: The unit each accountant composes in, with the name of its accounting.
UNITS: dict[str, tuple[str, str]] = {
    "pure": ("ε", "pure DP"),
    "approx": ("ε", "approximate DP"),
    "zcdp": ("ρ", "zCDP"),
    "gdp": ("μ²", "Gaussian DP"),
}


def _two_digits(value: float, direction: int) -> float:
    """``value`` to two significant digits, rounded towards ``direction`` (+1 up, −1 down)."""
    if value <= 0 or not math.isfinite(value):
        return max(value, 0.0)
    exponent = math.floor(math.log10(value)) - 1
    step = 10.0**exponent
    scaled = value / step
    # a value already on the grid (0.25, 1, 0.1) keeps its digits despite float error
    nearest = round(scaled)
    if abs(scaled - nearest) <= 1e-12 * max(scaled, 1.0):
        scaled = nearest
    whole = math.ceil(scaled) if direction > 0 else math.floor(scaled)
    return float(f"{whole * step:.2g}") if whole else 0.0


def round_up(value: float) -> str:
    """``value`` rounded up to two significant digits, as text (``0.689 → "0.69"``)."""
    return _text(_two_digits(float(value), +1))


def round_down(value: float) -> str:
    """``value`` rounded down to two significant digits, as text (``0.415 → "0.41"``)."""
    return _text(_two_digits(float(value), -1))


def _text(value: float) -> str:
    if value == 0:
        return "0"
    if 1000 <= value < 1e9:
        return f"{value:,.0f}"
    if 1e-4 <= value < 1000:
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return f"{value:.2g}"


def share_text(share: float) -> str:
    """A share as a whole percentage that never says 0% or 100% when it is not exactly that."""
    if share <= 0:
        return "0%"
    if share >= 1:
        return "100%"
    percent = 100 * share
    if percent < 1:
        return "<1%"
    if percent > 99:
        return ">99%"
    return f"{percent:.0f}%"


def _budget_text(budget: Budget, rounding: str) -> str:
    fmt = round_up if rounding == "up" else round_down
    text = f"ε={fmt(float(budget.epsilon))}"
    if budget.delta > 0:
        text += f", δ={fmt(float(budget.delta))}"
    return text


def guarantee_words(guarantee: Budget) -> str:
    """The (ε, δ) guarantee of everything released so far, in words (rounded up).

    Example:
        >>> print(guarantee_words(Budget(0.5)))  # doctest: +NORMALIZE_WHITESPACE
        (ε=0.5)-DP: adding or removing any one person changes the chance of any answer
        by at most a factor of 1.65
    """
    if guarantee.is_zero:
        return "nothing released yet"
    epsilon = float(guarantee.epsilon)
    if epsilon > 700:  # e^ε overflows a float past 709: say it in powers of ten
        shown = f"10^{math.floor(epsilon / math.log(10)):,}"
    else:
        factor = math.exp(epsilon)
        # near 1 the digits that matter are those of factor − 1 (e^0.01 is 1.011, not 1.1)
        shown = _text(1 + _two_digits(factor - 1, +1)) if factor < 10 else round_up(factor)
    words = (
        f"({_budget_text(guarantee, 'up')})-DP: adding or removing any one person changes "
        f"the chance of any answer by at most a factor of {shown}"
    )
    if guarantee.delta > 0:
        words += f", except with probability at most {round_up(float(guarantee.delta))}"
    return words


@dataclass(frozen=True)
class BudgetStatus:
    """A session's budget in the three figures the meter, the session and refusals share.

    Attributes:
        accounting: ``pure``, ``approx``, ``zcdp`` or ``gdp``.
        total: the session's total (ε, δ).
        used_share: the share of the budget used, in the accountant's own unit
            (ε, ρ or μ²), in [0, 1]; it adds up over releases.
        delta_share: approximate DP only: the share of the session's δ used
            (δ composes linearly there too); 0 in other accountings.
        next_release: the largest ``epsilon=`` (and ``delta=``) a next release
            may ask (:attr:`dpframe.Session.remaining`).
        guarantee: the (ε, δ)-DP guarantee of everything released so far
            (:attr:`dpframe.Session.spent`).
    """

    accounting: str
    total: Budget
    used_share: Fraction
    delta_share: Fraction
    next_release: Budget
    guarantee: Budget

    @property
    def unit(self) -> str:
        """The unit the share counts in: ε, ρ or μ²."""
        return UNITS.get(self.accounting, ("ε", self.accounting))[0]

    def used_text(self) -> str:
        """``"50% of the budget used"`` (with the δ share under approximate DP)."""
        text = f"{share_text(float(self.used_share))} of the budget used"
        if self.accounting == "approx" and self.total.delta > 0:
            text += f" ({share_text(float(self.delta_share))} of δ)"
        return text

    def next_text(self) -> str:
        """``"next release up to ε=0.41"``, or that nothing more can be released."""
        if self.next_release.epsilon <= 0:
            return "no further release possible"
        text = f"next release up to ε={round_down(float(self.next_release.epsilon))}"
        if self.accounting == "approx" and self.total.delta > 0:
            text += f", δ={round_down(float(self.next_release.delta))}"
        return text

    def unit_text(self) -> str:
        """Why the share adds up: the unit it counts in."""
        unit, name = UNITS.get(self.accounting, ("ε", self.accounting))
        return f"shares of {name}'s {unit}, which add up"

    def headline(self) -> str:
        """The first line: share used, the largest next release, and the total."""
        return f"{self.used_text()} · {self.next_text()} (total {_budget_text(self.total, 'up')})"

    def guarantee_text(self) -> str:
        """The second line: the formal guarantee so far, in words."""
        return f"Guarantee so far: {guarantee_words(self.guarantee)}."

    def __str__(self) -> str:
        return f"{self.headline()}\n{self.guarantee_text()}"


def budget_status(
    accounting: str, total: Budget, guarantee: Budget, remaining: Budget
) -> BudgetStatus:
    """The three figures from a session's public budget state.

    Args:
        accounting: the session's accounting.
        total: its total (ε, δ).
        guarantee: the (ε, δ) guarantee so far (``session.spent``).
        remaining: the largest next request (``session.remaining``), whose ε is
            in share units in every accounting.

    Example:
        >>> s = budget_status("pure", Budget(1), Budget(0.25), Budget(0.75))
        >>> s.headline()
        '25% of the budget used · next release up to ε=0.75 (total ε=1)'
    """
    used = Fraction(0)
    if total.epsilon > 0:
        used = min(max(1 - remaining.epsilon / total.epsilon, Fraction(0)), Fraction(1))
    delta_used = Fraction(0)
    if accounting == "approx" and total.delta > 0:
        delta_used = min(max(1 - remaining.delta / total.delta, Fraction(0)), Fraction(1))
    return BudgetStatus(accounting, total, used, delta_used, remaining, guarantee)
