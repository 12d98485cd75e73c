"""Composition readouts: what a session's releases add up to under several theorems.

The session's accountant is the filter that admits or refuses a release; this
module only *reads* the ledger and reports the total under

* basic composition (Dwork, McSherry, Nissim, Smith 2006): Σε, Σδ;
* advanced composition (Dwork, Rothblum, Vadhan 2010; Dwork & Roth 2014,
  Thm 3.20): for k releases of ε each, ε' = sqrt(2k·ln(1/δ'))·ε + k·ε·(e^ε − 1)
  at δ' + Σδ (the same martingale proof gives sqrt(2·ln(1/δ')·Σε_i²) +
  Σε_i·(e^{ε_i} − 1) when the ε_i differ);
* zCDP (Bun & Steinke 2016): Σρ, converted with ε = ρ + 2·sqrt(ρ·ln(1/δ'));
* RDP (Mironov 2017): the best conversion of the composed Rényi curve;
* GDP (Dong, Roth & Su 2019), in a gdp session: sqrt(Σμ_i²) through the
  exact Gaussian curve.

Advanced composition is reported only where it is valid: every release must
be (ε_i, δ_i)-DP with a known ε_i (pure or approx accounting), and it assumes
the ε_i were fixed in advance (an adaptive choice of ε_i needs a privacy
filter, with worse constants: Rogers, Roth, Ullman, Vadhan 2016).  A zCDP
session's releases are ρ-zCDP Gaussians, which have no finite pure ε.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import pandas as pd

from dpframe.accounting.renyi import approx_gaussian_rho, session_curve
from dpframe.errors import InvalidBudgetError
from dpframe.mechanisms.calibration.gdp_curves import gdp_epsilon
from dpframe.mechanisms.core.allocation import zcdp_epsilon

__all__ = ["CompositionReadout", "CompositionSummary", "advanced_composition", "summarize"]


@dataclass(frozen=True)
class CompositionReadout:
    """The session's total under one composition theorem.

    Attributes:
        name: ``basic``, ``advanced``, ``zCDP``, ``RDP`` or ``GDP``.
        epsilon: the total ε (NaN when not valid).
        delta: the total δ (NaN when not valid).
        valid: whether the theorem applies to these releases.
        note: how the number was obtained, or why it does not apply.
    """

    name: str
    epsilon: float
    delta: float
    valid: bool
    note: str


@dataclass(frozen=True)
class CompositionSummary:
    """Readouts of one session's spend, and which one its accountant uses.

    Attributes:
        accounting: the session's accounting (``pure``, ``approx``, ``zcdp``).
        used: the name of the readout the accountant enforces.
        releases: number of releases composed.
        readouts: one :class:`CompositionReadout` per theorem.
    """

    accounting: str
    used: str
    releases: int
    readouts: tuple[CompositionReadout, ...]

    def to_frame(self) -> pd.DataFrame:
        """One row per theorem: epsilon, delta, valid, used, note."""
        frame: pd.DataFrame = pd.DataFrame(
            {
                "epsilon": [r.epsilon for r in self.readouts],
                "delta": [r.delta for r in self.readouts],
                "valid": [r.valid for r in self.readouts],
                "used": [r.name == self.used for r in self.readouts],
                "note": [r.note for r in self.readouts],
            },
            index=pd.Index([r.name for r in self.readouts], name="composition"),
        )
        return frame

    def __str__(self) -> str:
        lines = [f"{self.releases} releases, {self.accounting} accounting (uses: {self.used})"]
        for r in self.readouts:
            mark = "*" if r.name == self.used else " "
            if r.valid:
                lines.append(f" {mark} {r.name:>8}: ε={r.epsilon:.6g}, δ={r.delta:.3g}  ({r.note})")
            else:
                lines.append(f" {mark} {r.name:>8}: not valid here ({r.note})")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return "<pre class='dpframe-composition'>" + html.escape(str(self)) + "</pre>"


def advanced_composition(epsilons: list[float], delta_prime: float) -> float:
    """ε' of advanced composition for releases of ε_i each, at slack δ'.

    sqrt(2·ln(1/δ')·Σε_i²) + Σε_i·(e^{ε_i} − 1), which for k equal ε is
    sqrt(2k·ln(1/δ'))·ε + k·ε·(e^ε − 1) (Dwork & Roth 2014, Thm 3.20).
    """
    if not 0 < delta_prime < 1:
        raise InvalidBudgetError("Advanced composition needs 0 < delta' < 1.")
    squares = sum(e * e for e in epsilons)
    drift = sum(e * math.expm1(e) for e in epsilons)
    return math.sqrt(2 * math.log(1 / delta_prime) * squares) + drift


def summarize(
    accounting: str, total_delta: float, ledger: pd.DataFrame, delta_prime: float | None = None
) -> CompositionSummary:
    """Composition readouts of a session's ledger.

    Args:
        accounting: the session's accounting.
        total_delta: the session's total δ.
        ledger: ``session.ledger``.
        delta_prime: the conversion slack δ' for advanced composition, zCDP
            and RDP; default: what the session has left for it (its δ minus
            the δ of mechanisms with their own), or 1e-6 in a pure session.
    """
    eps = [float(e) for e in ledger["epsilon"]]
    dlt = [float(d) for d in ledger["delta"]]
    k = len(eps)
    own_delta = sum(dlt) if accounting != "approx" else 0.0
    if delta_prime is None:
        slack = total_delta - own_delta if total_delta > 0 else 1e-6
        delta_prime = slack if slack > 0 else 1e-6
    if not 0 < delta_prime < 1:
        raise InvalidBudgetError("delta must be in (0, 1) for composition readouts.")
    readouts = []
    gaussian = [
        d > 0 and "gaussian" in str(m).lower()
        for m, d in zip(ledger["mechanism"], dlt, strict=True)
    ]
    if accounting in ("zcdp", "gdp"):  # gdp rows record ρ = μ²/2 (a μ-GDP release is ρ-zCDP)
        rhos = [float(r) for r in ledger["rho"]]
        per = delta_prime / max(k, 1)
        basic_eps = sum(zcdp_epsilon(r, per) for r in rhos)
        readouts.append(
            CompositionReadout(
                "basic",
                basic_eps,
                sum(dlt) + (delta_prime if k else 0.0),
                True,
                f"each ρ_i-zCDP release taken as (ε_i, δ'/{max(k, 1)})-DP, then summed",
            )
        )
        readouts.append(
            CompositionReadout(
                "advanced",
                math.nan,
                math.nan,
                False,
                "the releases are ρ-zCDP Gaussians with no finite pure ε",
            )
        )
        rho_total = sum(rhos)
    else:
        readouts.append(
            CompositionReadout("basic", sum(eps), sum(dlt), True, "Σε_i, Σδ_i (exact ledger sum)")
        )
        adv = advanced_composition(eps, delta_prime) if k else 0.0
        readouts.append(
            CompositionReadout(
                "advanced",
                min(adv, sum(eps)),
                sum(dlt) + delta_prime,
                True,
                f"sqrt(2·ln(1/δ')·Σε_i²) + Σε_i(e^ε_i − 1), δ'={delta_prime:.3g}"
                + ("; never above basic" if adv > sum(eps) else ""),
            )
        )
        rho_total = 0.0
        for e, d, g in zip(eps, dlt, gaussian, strict=True):
            if g:
                rho_total += approx_gaussian_rho(e, d)
            else:
                rho_total += e * e / 2  # ε-DP is ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4)
        own_delta = sum(d for d, g in zip(dlt, gaussian, strict=True) if not g)
    zcdp_eps = zcdp_epsilon(rho_total, delta_prime)
    readouts.append(
        CompositionReadout(
            "zCDP",
            zcdp_eps,
            own_delta + (delta_prime if rho_total > 0 else 0.0),
            True,
            f"Σρ_i = {rho_total:.4g}, ε = ρ + 2·sqrt(ρ·ln(1/δ'))",
        )
    )
    curve = session_curve(accounting, ledger)
    rdp_eps, alpha = curve.to_dp(delta_prime)
    readouts.append(
        CompositionReadout(
            "RDP",
            rdp_eps,
            curve.mechanism_delta + (delta_prime if k else 0.0),
            True,
            f"min over α of ε(α) + log(1/δ')/(α−1), best α={alpha:g}",
        )
    )
    if accounting == "gdp":
        mu = math.sqrt(2 * rho_total)
        gdp_eps = gdp_epsilon(mu, delta_prime) if rho_total > 0 else 0.0
        readouts.append(
            CompositionReadout(
                "GDP",
                gdp_eps,
                own_delta + (delta_prime if rho_total > 0 else 0.0),
                True,
                f"μ = sqrt(Σμ_i²) = {mu:.4g}, least ε with δ_μ(ε) ≤ δ' (exact Gaussian curve)",
            )
        )
    used = {"pure": "basic", "approx": "basic", "zcdp": "zCDP", "gdp": "GDP"}[accounting]
    return CompositionSummary(accounting, used, k, tuple(readouts))
