"""Exact divergences of the discrete output distributions dpframe's mechanisms sample.

The statistical auditor (:mod:`dpframe.audit.hockey_stick`) can show a
violation but never prove privacy.  This module is its analytic counterpart:
it computes, with 60-digit decimal arithmetic, the divergences that *define*
the guarantees, from the probability mass functions of the noise actually
sampled, written here from their definitions (nothing is imported from
:mod:`dpframe.noise`):

* discrete Laplace, P(k) ∝ exp(−|k|/t), and discrete Gaussian,
  P(k) ∝ exp(−k²/(2σ²)), over integers k, as :class:`Pmf` windows whose
  truncated tail mass is bounded and carried along (``outside``);
* the hockey-stick divergence δ(ε) = Σ_o max(0, P(o) − e^ε·Q(o)), which is
  the smallest δ for which the pair is (ε, δ)-indistinguishable in that
  direction (Barthe et al. 2012; Balle, Barthe, Gaboardi 2018);
* the Rényi divergence D_α(P‖Q) = ln(Σ_o P(o)^α Q(o)^(1−α))/(α − 1), whose
  bound D_α ≤ ρα for every α > 1 is ρ-zCDP (Bun and Steinke 2016);
* the exact largest privacy loss ln(P(k)/Q(k)) of a shifted discrete
  Laplace, as a rational number (pure ε-DP holds iff it is ≤ ε).

For the discrete Gaussian the Rényi divergence at an integer shift s is the
exact sum Σ_k P(k)^α P(k − s)^(1−α) = e^{α(α−1)s²/(2σ²)}·θ((1−α)s)/θ(0), with
θ(c) = Σ_k exp(−(k − c)²/(2σ²)); θ is summed directly around c for small σ
and by Poisson summation, θ(c) = σ√(2π)·Σ_m exp(−2π²σ²m²)·cos(2πmc), for
large σ (both exact up to a stated, negligible truncation; a test checks that
the two agree).  Every function returns a value together with an upper bound
on its absolute error (truncation and rounding), so callers can compare
against a claimed cost conservatively.

Used by ``tests/privacy_maps`` to pin every privacy map of the library:
at the stated noise the divergence is within the stated cost, and with 0.1%
less noise it is over (see ``docs/proofs/README.md``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext
from fractions import Fraction
from typing import TypeVar

__all__ = [
    "DIGITS",
    "Bound",
    "Pmf",
    "dec",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian_shift_renyi",
    "gaussian_theta",
    "hockey_stick",
    "hockey_stick_shift",
    "laplace_max_loss",
    "laplace_shift_hockey",
    "max_log_ratio",
    "precise",
    "renyi",
]

#: Significant digits of every computation.
DIGITS = 60
#: Default bound on the probability mass left outside a pmf window.
TAIL = Decimal("1e-30")
_ROUNDING = Decimal("1e-55")  # per-operation relative rounding, generously rounded up
_CONTEXT = Context(prec=DIGITS)

Number = Decimal | Fraction | int | float
Outcome = TypeVar("Outcome", bound=Hashable)


def precise() -> AbstractContextManager[Context]:
    """A local decimal context at :data:`DIGITS` digits (for callers' own sums and logs)."""
    return localcontext(_CONTEXT)


def dec(value: Number) -> Decimal:
    """``value`` as a Decimal at :data:`DIGITS` digits (Fractions divided exactly there)."""
    with localcontext(_CONTEXT):
        if isinstance(value, Fraction):
            return Decimal(value.numerator) / Decimal(value.denominator)
        if isinstance(value, float):
            return Decimal(value) + 0  # exact binary value, then rounded to the context
        return Decimal(value) + 0


@dataclass(frozen=True)
class Bound:
    """A computed value and an upper bound on its absolute error."""

    value: Decimal
    error: Decimal

    @property
    def upper(self) -> Decimal:
        """The largest value the exact quantity can have."""
        return self.value + self.error

    @property
    def lower(self) -> Decimal:
        """The smallest value the exact quantity can have."""
        return self.value - self.error


@dataclass(frozen=True)
class Pmf:
    """A pmf over the integers, held on the window ``start .. start + len(masses) − 1``.

    Attributes:
        start: the first integer of the window.
        masses: the normalised probabilities on the window.
        outside: an upper bound on the probability outside the window.
        error: an upper bound on the absolute error of each mass.
    """

    start: int
    masses: tuple[Decimal, ...]
    outside: Decimal
    error: Decimal

    @property
    def stop(self) -> int:
        """One past the last integer of the window."""
        return self.start + len(self.masses)

    def at(self, k: int) -> Decimal:
        """P(k) (0 outside the window)."""
        i = k - self.start
        return self.masses[i] if 0 <= i < len(self.masses) else Decimal(0)

    def tail_from(self, k: int) -> Decimal:
        """P(X ≥ k), summed over the window (add ``outside`` for an upper bound)."""
        with localcontext(_CONTEXT):
            return sum(self.masses[max(k - self.start, 0) :], Decimal(0))

    def shifted(self, s: int) -> Pmf:
        """The distribution of X + s."""
        return Pmf(self.start + s, self.masses, self.outside, self.error)


def _normalised(start: int, weights: list[Decimal], tail_weight: Decimal) -> Pmf:
    """Normalise window weights whose mass outside the window is at most ``tail_weight``."""
    with localcontext(_CONTEXT):
        total = sum(weights, Decimal(0))
        masses = tuple(w / total for w in weights)
        outside = tail_weight / total
        # Normalising by the window's total instead of the full sum inflates each mass
        # by a factor at most 1 + outside; plus rounding (a few ulps per recurrence step).
        error = outside + _ROUNDING * (len(weights) + 10)
    return Pmf(start, masses, outside, error)


def discrete_laplace(scale: Number, tail: Decimal = TAIL) -> Pmf:
    """The discrete Laplace distribution P(k) ∝ exp(−|k|/t), t = ``scale``.

    The window is |k| ≤ M with M = ⌈t·ln(2/tail)⌉, so the mass outside,
    2a^(M+1)/(1 + a) with a = e^(−1/t), is below ``tail``.
    """
    t = dec(scale)
    with localcontext(_CONTEXT):
        a = (-1 / t).exp()
        m = math.ceil(float(t) * math.log(2 / float(tail))) + 1
        half = [Decimal(1)]
        for _ in range(m):
            half.append(half[-1] * a)
        weights = half[:0:-1] + half
        tail_weight = 2 * half[-1] * a / (1 - a)  # Σ_{|k| > M} a^|k|
    return _normalised(-m, weights, tail_weight)


def discrete_gaussian(sigma2: Number, tail: Decimal = TAIL) -> Pmf:
    """The discrete Gaussian P(k) ∝ exp(−k²/(2σ²)), σ² = ``sigma2``.

    Weights q^(k²) (q = e^(−1/(2σ²))) by the recurrence q^((k+1)²) = q^(k²)·q^(2k+1);
    the window |k| ≤ M leaves at most 2q^((M+1)²)/(1 − q^(2M+3)) outside.
    """
    v = dec(sigma2)
    with localcontext(_CONTEXT):
        q = (-1 / (2 * v)).exp()
        m = math.ceil(math.sqrt(2 * float(v) * math.log(2 / float(tail)))) + 2
        half = [Decimal(1)]
        step = q  # q^(2k+1) for k = 0
        q2 = q * q
        for _ in range(m):
            half.append(half[-1] * step)
            step *= q2
        weights = half[:0:-1] + half
        # beyond M the weights fall faster than the geometric ratio `step` = q^(2M+1)
        tail_weight = 2 * half[-1] * step / (1 - step)
    return _normalised(-m, weights, tail_weight)


def hockey_stick_shift(p: Pmf, q: Pmf, epsilon: Number) -> Bound:
    """δ(ε) = Σ_k max(0, P(k) − e^ε·Q(k)) for two pmfs on the integers (ε ≥ 0).

    The error covers each mass's error and P's mass outside its window (which
    can add at most that much).
    """
    lo, hi = min(p.start, q.start), max(p.stop, q.stop)
    zero = Decimal(0)
    pm = [zero] * (p.start - lo) + list(p.masses) + [zero] * (hi - p.stop)
    qm = [zero] * (q.start - lo) + list(q.masses) + [zero] * (hi - q.stop)
    with localcontext(_CONTEXT):
        factor = dec(epsilon).exp()
        total = Decimal(0)
        for a, b in zip(pm, qm, strict=True):
            if a > b:  # the gap can be positive only where P(k) > Q(k) (e^ε ≥ 1)
                gap = a - factor * b
                if gap > 0:
                    total += gap
        error = p.outside + (1 + factor) * (p.error + q.error) * (hi - lo) + _ROUNDING
    return Bound(total, error)


def hockey_stick(
    p: Mapping[Outcome, Number], q: Mapping[Outcome, Number], epsilon: Number
) -> Decimal:
    """δ(ε) = Σ_o max(0, P(o) − e^ε·Q(o)) over finite outcome sets (absent: probability 0)."""
    with localcontext(_CONTEXT):
        factor = dec(epsilon).exp()
        total = Decimal(0)
        for outcome, mass in p.items():
            gap = dec(mass) - factor * dec(q.get(outcome, 0))
            if gap > 0:
                total += gap
    return total


def max_log_ratio(p: Mapping[Outcome, Number], q: Mapping[Outcome, Number]) -> Decimal:
    """max_o ln(P(o)/Q(o)) over P's support; ``Infinity`` when Q(o) = 0 < P(o)."""
    with localcontext(_CONTEXT):
        best = Decimal("-Infinity")
        for outcome, mass in p.items():
            pm, qm = dec(mass), dec(q.get(outcome, 0))
            if pm <= 0:
                continue
            if qm <= 0:
                return Decimal("Infinity")
            best = max(best, (pm / qm).ln())
    return best


def renyi(p: Mapping[Outcome, Number], q: Mapping[Outcome, Number], alpha: Number) -> Decimal:
    """D_α(P‖Q) = ln(Σ_o P(o)^α Q(o)^(1−α))/(α − 1) over finite outcome sets."""
    a = dec(alpha)
    with localcontext(_CONTEXT):
        total = Decimal(0)
        for outcome, mass in p.items():
            pm, qm = dec(mass), dec(q.get(outcome, 0))
            if pm <= 0:
                continue
            if qm <= 0:
                return Decimal("Infinity")
            total += (a * pm.ln() + (1 - a) * qm.ln()).exp()
        return total.ln() / (a - 1)


def laplace_max_loss(scale: Fraction, shift: int) -> Fraction:
    """The exact largest privacy loss ln(P(k)/P(k − s)) of the discrete Laplace with scale t.

    ln P(k) − ln P(k − s) = (|k − s| − |k|)/t, rational and piecewise linear in k
    with breakpoints at 0 and s, constant beyond them: its maximum over the
    integers is attained at a breakpoint or next to one, so it is evaluated
    exactly at k ∈ {−1, 0, 1, s − 1, s, s + 1}.
    """
    s = abs(shift)
    points = {-1, 0, 1, s - 1, s, s + 1}
    return max(Fraction(abs(k - s) - abs(k), 1) / scale for k in points)


def laplace_shift_hockey(scale: Fraction, shift: int, epsilon: Fraction) -> Bound:
    """δ(ε) of the discrete Laplace with scale t against its shift by s, in closed form.

    With a = e^(−1/t), c = (1 − a)/(1 + a), P(k) = c·a^|k − s| and Q(k) = c·a^|k|
    (s ≥ 0; the other direction is the same by the reflection k ↦ s − k):

    * k ≥ s: P(k) − e^ε·Q(k) = c·a^(k−s)·(1 − e^ε·a^s), positive iff s/t > ε,
      summing to (1 − e^ε·a^s)/(1 + a);
    * 0 < k < s: c·(a^(s−k) − e^ε·a^k), positive iff k > (s + εt)/2 (exact,
      rational), two geometric sums;
    * k ≤ 0: the loss is −s/t < 0.

    No window and no truncation: usable at any scale (a Laplace copy's t is about 10⁶).
    """
    s = abs(shift)
    t = dec(scale)
    with localcontext(_CONTEXT):
        a = (-1 / t).exp()
        factor = dec(epsilon).exp()
        c = (1 - a) / (1 + a)
        total = Decimal(0)
        upper = (1 - factor * a**s) / (1 + a)
        if upper > 0:
            total += upper
        k0 = math.floor((s + epsilon * scale) / 2) + 1  # smallest k with 2k − s > εt
        if k0 <= s - 1:
            n = s - k0  # k = k0 .. s − 1
            near = a * (1 - a**n) / (1 - a)  # Σ_{j=1}^{n} a^j, j = s − k
            far = a**k0 * (1 - a**n) / (1 - a)  # Σ_{k=k0}^{s−1} a^k
            total += c * (near - factor * far)
        error = _ROUNDING * 100 * (1 + factor)
    return Bound(total, error)


@functools.cache
def _pi() -> Decimal:
    """π to :data:`DIGITS` digits (the series recipe of the ``decimal`` documentation)."""
    with localcontext(Context(prec=DIGITS + 5)):
        lasts, t, total, n, na, d, da = Decimal(0), Decimal(3), Decimal(3), 1, 0, 0, 24
        while total != lasts:
            lasts = total
            n, na = n + na, na + 8
            d, da = d + da, da + 32
            t = (t * n) / d
            total += t
    with localcontext(_CONTEXT):
        return total + 0


def gaussian_theta(c: Number, sigma2: Number) -> Bound:
    """θ(c) = Σ_k exp(−(k − c)²/(2σ²)) over all integers k.

    Summed directly over |k − c| ≤ 13σ + 2 when σ² ≤ 400 (the rest is below
    10⁻³⁶ relative), else by Poisson summation with the terms m = 0..3 (the
    rest is below exp(−32π²σ²) relative: nothing at σ > 20).
    """
    v, cc = dec(sigma2), dec(c)
    with localcontext(_CONTEXT):
        if v <= 400:
            width = math.ceil(13 * math.sqrt(float(v))) + 2
            centre = int(cc.to_integral_value())
            k0 = centre - width
            x = Decimal(k0) - cc
            term = (-(x * x) / (2 * v)).exp()
            ratio = (-(2 * x + 1) / (2 * v)).exp()  # term(k+1)/term(k)
            q2 = (-1 / v).exp()
            total = Decimal(0)
            for _ in range(2 * width + 1):
                total += term
                term *= ratio
                ratio *= q2
            # outside: two tails below the geometric bound of the window's end terms
            error = total * Decimal("1e-36") + _ROUNDING * (2 * width + 10) * total
            return Bound(total, error)
        frac = cc - cc.to_integral_value(rounding="ROUND_FLOOR")
        pi = _pi()
        total = Decimal(1)
        for m in range(1, 4):
            weight = (-2 * pi * pi * v * m * m).exp()
            total += 2 * weight * dec(math.cos(2 * math.pi * m * float(frac)))
        scale = (2 * pi * v).sqrt()
        value = scale * total
        tiny = (-2 * pi * pi * v).exp()  # bounds the float cosines' error and the m ≥ 4 terms
        return Bound(value, value * (tiny * Decimal("1e-12") + _ROUNDING * 20))


def gaussian_shift_renyi(sigma2: Number, shift: int, alpha: Number) -> Bound:
    """D_α(N_Z(0, σ²) ‖ N_Z(s, σ²)) for the discrete Gaussian and an integer shift s.

    Σ_k P(k)^α P(k − s)^(1−α): the exponent αk² + (1 − α)(k − s)² equals
    (k − (1 − α)s)² + α(1 − α)s², so the sum is e^{α(α−1)s²/(2σ²)}·θ((1−α)s)/θ(0)
    and D_α = αs²/(2σ²) + ln(θ((1 − α)s)/θ(0))/(α − 1) (exact; θ by :func:`gaussian_theta`).
    """
    v, a = dec(sigma2), dec(alpha)
    s = Decimal(shift)
    with localcontext(_CONTEXT):
        top = gaussian_theta((1 - a) * s, sigma2)
        base = gaussian_theta(0, sigma2)
        log_ratio = (top.value / base.value).ln()
        value = a * s * s / (2 * v) + log_ratio / (a - 1)
        rel = top.error / top.value + base.error / base.value
        error = 2 * rel / (a - 1) + _ROUNDING * 10
    return Bound(value, error)
