"""Rényi differential privacy (RDP): curves ε(α) per mechanism and for a whole session.

A mechanism is (α, ε)-RDP when the Rényi divergence of order α between its
outputs on neighbouring datasets is at most ε (Mironov 2017, "Rényi
Differential Privacy").  RDP curves add up under composition, and a curve
converts to (ε, δ)-DP by

    ε(δ) = min over α > 1 of  ε(α) + log(1/δ) / (α − 1)        (Mironov 2017, Prop. 3).

This module gives the curves of the mechanisms dpframe uses and the curve of
a session, read from its ledger.  It is a *view* of the spend: the session's
accountant (pure, approx or zCDP) remains the filter that admits releases.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.accounting.accountants import rho_from_epsilon_delta
from dpframe.errors import InvalidArgumentError, InvalidBudgetError
from dpframe.mechanisms.calibration.gdp_curves import mu_from_epsilon_delta

__all__ = [
    "DEFAULT_ORDERS",
    "RenyiCurve",
    "approx_gaussian_rho",
    "best_conversion",
    "gaussian_rdp",
    "laplace_rdp",
    "pure_dp_rdp",
    "release_rdp",
    "session_curve",
    "zcdp_rdp",
]

#: The orders α at which curves are evaluated by default (α > 1).
DEFAULT_ORDERS: tuple[float, ...] = (
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    4.0,
    5.0,
    6.0,
    8.0,
    10.0,
    12.0,
    16.0,
    20.0,
    24.0,
    32.0,
    48.0,
    64.0,
    96.0,
    128.0,
    256.0,
    512.0,
    1024.0,
)


def _check_order(alpha: float) -> float:
    value = float(alpha)
    if not value > 1 or math.isnan(value):
        raise InvalidArgumentError(f"A Rényi order alpha must be > 1, got {alpha!r}.")
    return value


def _check_positive(value: float, name: str) -> float:
    number = float(value)
    if not number > 0 or not math.isfinite(number):
        raise InvalidBudgetError(f"{name} must be a positive finite number, got {value!r}.")
    return number


def laplace_rdp(alpha: float, scale: float, sensitivity: float = 1.0) -> float:
    """The RDP curve of the (continuous) Laplace mechanism.

    For λ = scale / sensitivity and α > 1 (Mironov 2017, Prop. 6):

        ε(α) = 1/(α−1) · log( α/(2α−1) · e^{(α−1)/λ} + (α−1)/(2α−1) · e^{−α/λ} ).

    With λ = 1, ε(2) = log(2e/3 + e^{−2}/3) = 0.619124.

    Args:
        alpha: the order, α > 1 (``math.inf`` gives the pure ε = 1/λ).
        scale: the Laplace scale b > 0.
        sensitivity: the ℓ1 sensitivity Δ > 0.
    """
    lam = _check_positive(scale, "scale") / _check_positive(sensitivity, "sensitivity")
    if alpha == math.inf:
        return 1.0 / lam
    a = _check_order(alpha)
    first = math.log(a / (2 * a - 1)) + (a - 1) / lam
    second = math.log((a - 1) / (2 * a - 1)) - a / lam
    return float(np.logaddexp(first, second)) / (a - 1)


def gaussian_rdp(alpha: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The RDP curve of the Gaussian mechanism: ε(α) = α·Δ²/(2σ²) (Mironov 2017, Prop. 7).

    The same bound holds for the discrete Gaussian at integer shifts
    (Canonne, Kamath, Steinke 2020).
    """
    a = _check_order(alpha)
    sig = _check_positive(sigma, "sigma")
    sens = _check_positive(sensitivity, "sensitivity")
    return a * sens * sens / (2.0 * sig * sig)


def zcdp_rdp(alpha: float, rho: float) -> float:
    """ρ-zCDP is (α, αρ)-RDP for every α > 1 (Bun & Steinke 2016, Def. 1.1)."""
    a = _check_order(alpha)
    if rho < 0:
        raise InvalidBudgetError(f"rho must be >= 0, got {rho!r}.")
    return a * float(rho)


def pure_dp_rdp(alpha: float, epsilon: float) -> float:
    """The smallest RDP curve valid for *every* ε-DP mechanism.

    Any ε-DP pair of output distributions is a post-processing of binary
    randomized response with keep probability e^ε/(1+e^ε) (Kairouz, Oh,
    Viswanath 2015, Thm 2.1), so by the data-processing inequality

        ε(α) = 1/(α−1) · log( (e^{αε} + e^{(1−α)ε}) / (1 + e^ε) ),

    which is at most min(ε, α·ε²/2) (the bound of Bun & Steinke 2016,
    Prop. 3.3, that it improves on; the two meet for small α·ε).
    """
    a = _check_order(alpha)
    if epsilon < 0:
        raise InvalidBudgetError(f"epsilon must be >= 0, got {epsilon!r}.")
    eps = float(epsilon)
    if eps == 0:
        return 0.0
    log_num = float(np.logaddexp(a * eps, (1 - a) * eps))
    value = (log_num - float(np.logaddexp(0.0, eps))) / (a - 1)
    return max(0.0, min(value, eps, a * eps * eps / 2))


def best_conversion(
    orders: Sequence[float], epsilons: Sequence[float], delta: float
) -> tuple[float, float]:
    """The best (ε, α) from an RDP curve: ε = min over α of ε(α) + log(1/δ)/(α − 1).

    Mironov 2017, Prop. 3.  Returns ``(epsilon, alpha)``.
    """
    dlt = float(delta)
    if not 0 < dlt < 1:
        raise InvalidBudgetError(
            f"Converting to (epsilon, delta) needs 0 < delta < 1, got {delta}."
        )
    if len(orders) != len(epsilons) or not orders:
        raise InvalidArgumentError("best_conversion() needs one epsilon per order.")
    log_term = math.log(1.0 / dlt)
    values = [e + log_term / (_check_order(a) - 1) for a, e in zip(orders, epsilons, strict=True)]
    best = int(np.argmin(values))
    return float(values[best]), float(orders[best])


@dataclass(frozen=True)
class RenyiCurve:
    """An RDP curve ε(α) on a grid of orders, plus any δ of mechanisms that have their own.

    Attributes:
        orders: the orders α (> 1).
        epsilons: ε(α) at each order.
        mechanism_delta: the total δ of releases analysed as δ-approximate
            RDP (key discovery, sanitized copies with δ > 0): the conversion
            adds it to the δ it is asked for.
        releases: how many releases the curve composes.
    """

    orders: tuple[float, ...]
    epsilons: tuple[float, ...]
    mechanism_delta: float = 0.0
    releases: int = 0

    def epsilon(self, alpha: float) -> float:
        """ε(α) at one of the grid's orders."""
        try:
            return self.epsilons[self.orders.index(float(alpha))]
        except ValueError:
            raise InvalidArgumentError(
                f"alpha={alpha} is not on this curve's grid; pass orders=[...] to compute it."
            ) from None

    def to_dp(self, delta: float) -> tuple[float, float]:
        """The (ε, α) of the best conversion to (ε, δ + mechanism_delta)-DP.

        Args:
            delta: the δ spent by the conversion itself (0 < δ < 1).
        """
        if not self.releases:
            return 0.0, float(self.orders[-1])
        return best_conversion(self.orders, self.epsilons, delta)

    def to_frame(self) -> pd.DataFrame:
        """The curve as a table: one row per order."""
        table: pd.DataFrame = pd.DataFrame(
            {"epsilon": self.epsilons}, index=pd.Index(self.orders, name="alpha")
        )
        return table

    def plot(self, delta: float | None = None, ax: Any = None) -> Any:
        """Draw ε(α) (log-log); with ``delta``, also ε(α) + log(1/δ)/(α−1) and its minimum."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            from dpframe.errors import DPError

            raise DPError("Plotting needs matplotlib: pip install matplotlib.") from None
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(self.orders, self.epsilons, marker=".", label="RDP ε(α)")
        if delta is not None and self.releases:
            total = [
                e + math.log(1 / delta) / (a - 1)
                for a, e in zip(self.orders, self.epsilons, strict=True)
            ]
            eps, alpha = self.to_dp(delta)
            ax.plot(self.orders, total, ls="--", label=f"ε(α) + log(1/δ)/(α−1), δ={delta:g}")
            ax.scatter(
                [alpha], [eps], color="#c62828", zorder=3, label=f"best: ε={eps:.4g} at α={alpha:g}"
            )
        ax.set_xscale("log")
        ax.set_xlabel("order α")
        ax.set_ylabel("ε")
        ax.legend(fontsize=8)
        return ax

    def to_svg(self, delta: float | None = None, width: int = 360, height: int = 180) -> str:
        """A small SVG line chart of ε(α) over log α (no matplotlib needed; for the meter)."""
        pad = 30
        xs = [math.log(a) for a in self.orders]
        ys = list(self.epsilons)
        top = max(max(ys), 1e-12)
        x0, x1 = min(xs), max(xs)

        def px(x: float) -> float:
            return pad + (x - x0) / ((x1 - x0) or 1.0) * (width - 2 * pad)

        def py(y: float) -> float:
            return height - pad - y / top * (height - 2 * pad)

        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
        caption = f"ε(α), {self.releases} releases; max {top:.4g}"
        if delta is not None and self.releases:
            eps, alpha = self.to_dp(delta)
            caption += f"; best (ε, δ={delta:g}): ε={eps:.4g} at α={alpha:g}"
        return (
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"
            f"<line x1='{pad}' y1='{height - pad}' x2='{width - pad}' y2='{height - pad}' "
            "stroke='#999'/>"
            f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{height - pad}' stroke='#999'/>"
            f"<polyline fill='none' stroke='#4c72b0' stroke-width='2' points='{points}'/>"
            f"<text x='{pad}' y='{pad - 10}' font-size='11'>{html.escape(caption)}</text>"
            f"<text x='{width - pad}' y='{height - 8}' font-size='11' text-anchor='end'>"
            f"α = {self.orders[0]:g} … {self.orders[-1]:g} (log scale)</text></svg>"
        )

    def __str__(self) -> str:
        shown = ", ".join(
            f"ε({a:g})={e:.4g}" for a, e in zip(self.orders, self.epsilons, strict=True)
        )
        extra = f"; plus δ={self.mechanism_delta:.3g} of mechanisms" if self.mechanism_delta else ""
        return f"RenyiCurve({self.releases} releases: {shown}{extra})"

    def _repr_html_(self) -> str:
        return "<pre class='dpframe-renyi'>" + html.escape(str(self)) + "</pre>"


def release_rdp(
    accounting: str,
    mechanism: str,
    epsilon: float,
    delta: float,
    rho: float,
    orders: Sequence[float],
) -> tuple[list[float], float]:
    """The RDP curve of one ledger row and the δ it carries as a mechanism δ.

    What is used, per accounting:

    * ``zcdp``: every row records its ρ (Gaussian noise, and ε-DP selection
      mechanisms charged as ε²/2-zCDP), so ε(α) = αρ; a row's own δ
      (key discovery, copies with δ > 0) is carried to the conversion.
    * ``pure`` and ``approx`` with δ = 0: the row is ε-DP, and
      :func:`pure_dp_rdp` is the tightest curve valid for every ε-DP
      mechanism.  It is loose for a Laplace release by up to a factor of
      about 2 at small α (see :func:`laplace_rdp`), because the ledger
      records the guarantee, not the noise ratio.
    * ``gdp``: every row records ρ = μ²/2 of its μ-GDP charge; a μ-GDP
      mechanism is (μ²/2)-zCDP (it is a post-processing of N(0,1) against
      N(μ,1): Dong, Roth & Su 2019, Thm 2.10, Blackwell), so ε(α) = αρ.
    * ``approx`` with δ > 0: a Gaussian release (its mechanism name says so)
      is μ-GDP with μ the largest whose curve is within (ε, δ) (rows written
      before this calibration used the smaller zCDP ρ; the larger μ²/2
      covers both), so ε(α) = αμ²/2 and no δ is carried; any other
      mechanism is an (ε, δ) mechanism, analysed as δ-approximately ε-DP
      (pure curve plus δ), as the zCDP accountant does.
    """
    if accounting in ("zcdp", "gdp"):  # a μ-GDP release is (μ²/2)-zCDP; gdp records ρ = μ²/2
        return [zcdp_rdp(a, rho) for a in orders], float(delta)
    if delta > 0 and "gaussian" in mechanism.lower():
        return [zcdp_rdp(a, approx_gaussian_rho(epsilon, delta)) for a in orders], 0.0
    return [pure_dp_rdp(a, epsilon) for a in orders], float(delta)


def approx_gaussian_rho(epsilon: float, delta: float) -> float:
    """The zCDP ρ of an approx-accounting Gaussian row of (ε, δ): μ²/2 of its μ-GDP calibration.

    At least the ρ = (sqrt(ln(1/δ)+ε) − sqrt(ln(1/δ)))² that rows used before
    the GDP calibration (and regressions still use), so it covers every row.
    """
    from fractions import Fraction

    mu = float(mu_from_epsilon_delta(Fraction(epsilon), Fraction(delta)))
    older = float(rho_from_epsilon_delta(Fraction(epsilon), Fraction(delta)))
    return max(mu * mu / 2, older)


def session_curve(
    accounting: str, ledger: pd.DataFrame, orders: Iterable[float] | None = None
) -> RenyiCurve:
    """The composed RDP curve of every release in a session's ledger.

    Args:
        accounting: the session's accounting (``pure``, ``approx``, ``zcdp``).
        ledger: the session's ledger (``session.ledger``): columns
            ``mechanism``, ``epsilon``, ``delta``, ``rho``; every row counts,
            failed ones too (their charge stands).
        orders: the orders α (default :data:`DEFAULT_ORDERS`).
    """
    grid = tuple(sorted({_check_order(a) for a in (orders or DEFAULT_ORDERS)}))
    if not grid:
        raise InvalidArgumentError("orders= needs at least one order alpha > 1.")
    total = np.zeros(len(grid))
    mech_delta = 0.0
    for mechanism, eps, dlt, rho in zip(
        ledger["mechanism"], ledger["epsilon"], ledger["delta"], ledger["rho"], strict=True
    ):
        curve, carried = release_rdp(
            accounting, str(mechanism), float(eps), float(dlt), float(rho), grid
        )
        total += np.asarray(curve)
        mech_delta += carried
    return RenyiCurve(grid, tuple(float(e) for e in total), mech_delta, len(ledger))
