"""Privacy loss distributions: the composed privacy curve of a release, computed, not sampled.

The pins of :mod:`dpframe.audit.exact_divergence` check one mechanism at a
time.  A composite release (a synthetic copy: d noisy marginals, d − 1
selections, more marginals) is a *composition*, and its privacy curve
δ(ε) is not the sum of its parts' curves.  This module computes an upper
bound on it from the parts' dominating pairs (Zhu, Dong & Wang 2022,
"Optimal accounting of differential privacy via characteristic function";
Koskela, Jälkö & Honkela 2020; Meiser & Mohammadi 2018):

* a part is a pair (P, Q) of output distributions whose privacy loss
  L = ln(P(o)/Q(o)), o ~ P, is held on a grid of step ``step``, each loss
  **rounded up** to the grid ("pessimistic" discretisation); mass where Q is
  0, and P's mass outside the window the part was enumerated on, is held at
  +∞;
* independent parts compose by adding their losses: the composed loss
  distribution is the convolution of the parts' (for adaptive composition,
  each part's pair must dominate it whatever came before: true here, every
  noise scale is fixed by public inputs before anything is released);
* δ(ε) = P(L = +∞) + E[(1 − e^{ε − L})₊], the hockey-stick divergence.

Why this is an upper bound: each rounded loss is at least the exact one, so
the composed rounded loss is at least the composed exact loss, pointwise in
the outputs; (1 − e^{ε − L})₊ increases in L.  Mass moved to +∞ only adds.
The float arithmetic (exponentials, sums of non-negative terms) errs by a
few units in the 15th digit of each mass; :attr:`LossDistribution.error`
carries a generous bound and :meth:`LossDistribution.delta` adds it.

Dominating pairs used by dpframe's pins: the discrete Gaussian (and discrete
Laplace) at an integer shift, and randomized response for any ε-DP step
(Kairouz, Oh & Viswanath 2015: every ε-DP mechanism is a post-processing of
randomized response with the same ε).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "LossDistribution",
    "compose",
    "compose_all",
    "discrete_gaussian_loss",
    "discrete_laplace_loss",
    "randomized_response_loss",
]

#: Relative error bound of one float operation on a mass, generously rounded up.
_ULP = 1e-15
#: Mass of P left outside the enumerated window (held at +∞).
_TAIL = 1e-20


@dataclass(frozen=True)
class LossDistribution:
    """The privacy loss of P against Q, on the grid ``step``, losses rounded up.

    Attributes:
        step: the grid's spacing (in nats).
        offset: the grid index of ``masses[0]`` (its loss is ``offset * step``).
        masses: the probability under P of each grid loss.
        infinite: the probability under P of an infinite loss (Q = 0, or outside the window).
        error: an upper bound on the absolute error of any δ computed from the masses.
    """

    step: float
    offset: int
    masses: npt.NDArray[np.float64]
    infinite: float
    error: float

    def delta(self, epsilon: float) -> float:
        """An upper bound on δ(ε) = P(L = ∞) + E[(1 − e^{ε − L})₊] (the hockey-stick divergence)."""
        losses = (self.offset + np.arange(len(self.masses))) * self.step
        above = losses > epsilon
        weight = -np.expm1(epsilon - losses[above])
        return float(self.infinite + np.sum(self.masses[above] * weight) + self.error)

    def max_finite_loss(self) -> float:
        """The largest finite loss with positive mass (an upper bound on the exact one)."""
        nonzero = np.nonzero(self.masses > 0)[0]
        return float((self.offset + nonzero[-1]) * self.step)


def _from_losses(
    losses: npt.NDArray[np.float64],
    masses: npt.NDArray[np.float64],
    infinite: float,
    step: float,
) -> LossDistribution:
    """Round each loss up to the grid and add the masses that land on one point."""
    if step <= 0 or not math.isfinite(step):
        raise ValueError("step must be a positive finite number.")
    index = np.ceil(losses / step - 1e-12).astype(np.int64)
    # The tolerance above may round a loss *down* by at most 1e-12 steps: moving
    # every index up one more would cost a step; instead re-check and bump.
    index = np.where(index * step < losses, index + 1, index)
    low = int(index.min())
    out = np.zeros(int(index.max()) - low + 1)
    np.add.at(out, index - low, masses)
    return LossDistribution(step, low, out, infinite, _ULP * (1 + len(masses)))


def discrete_gaussian_loss(sigma2: float, shift: int, step: float) -> LossDistribution:
    """P = N_Z(0, σ²) against Q = N_Z(shift, σ²): L(x) = (s² − 2sx)/(2σ²).

    The window |x| ≤ M leaves less than 1e-20 of P outside (held at +∞).
    """
    if sigma2 <= 0 or shift < 0:
        raise ValueError("sigma2 must be positive and shift non-negative.")
    sigma = math.sqrt(sigma2)
    m = math.ceil(sigma * math.sqrt(2 * math.log(2 / _TAIL))) + 2
    x = np.arange(-m, m + 1, dtype=np.float64)
    weights = np.exp(-(x**2) / (2 * sigma2))
    # The normalising constant from the window alone overstates each mass by at
    # most a factor 1 + tail: folded into the error.
    masses = weights / weights.sum()
    losses = (shift**2 - 2 * shift * x) / (2 * sigma2)
    pld = _from_losses(losses, masses, _TAIL, step)
    return LossDistribution(pld.step, pld.offset, pld.masses, pld.infinite, pld.error + _TAIL)


def discrete_laplace_loss(scale: float, shift: int, step: float) -> LossDistribution:
    """P = DLap(0, t) against Q = DLap(shift, t): L(x) = (|x − s| − |x|)/t."""
    if scale <= 0 or shift < 0:
        raise ValueError("scale must be positive and shift non-negative.")
    m = math.ceil(scale * math.log(2 / _TAIL)) + shift + 2
    x = np.arange(-m, m + 1, dtype=np.float64)
    weights = np.exp(-np.abs(x) / scale)
    masses = weights / weights.sum()
    losses = (np.abs(x - shift) - np.abs(x)) / scale
    pld = _from_losses(losses, masses, _TAIL, step)
    return LossDistribution(pld.step, pld.offset, pld.masses, pld.infinite, pld.error + _TAIL)


def randomized_response_loss(epsilon: float, step: float) -> LossDistribution:
    """Randomized response with parameter ε: the dominating pair of every ε-DP step.

    P = (e^ε, 1)/(1 + e^ε), Q = (1, e^ε)/(1 + e^ε): loss +ε with probability
    e^ε/(1 + e^ε), −ε otherwise.
    """
    if epsilon < 0:
        raise ValueError("epsilon must be non-negative.")
    p = 1 / (1 + math.exp(-epsilon))
    losses = np.array([epsilon, -epsilon])
    return _from_losses(losses, np.array([p, 1 - p]), 0.0, step)


def compose(first: LossDistribution, second: LossDistribution) -> LossDistribution:
    """The loss distribution of both parts run independently: the convolution of the two.

    Done as a sum of shifted copies of the denser part, one per point of the
    sparser one (every term non-negative, so the float error stays relative).
    """
    if first.step != second.step:
        raise ValueError("both distributions must use the same step.")
    if np.count_nonzero(first.masses) < np.count_nonzero(second.masses):
        first, second = second, first
    dense, sparse = first.masses, second.masses
    out = np.zeros(len(dense) + len(sparse) - 1)
    for j in np.nonzero(sparse)[0]:
        out[j : j + len(dense)] += sparse[j] * dense
    infinite = first.infinite + second.infinite - first.infinite * second.infinite
    points = np.count_nonzero(sparse)
    error = first.error + second.error + _ULP * (points + 2)
    return LossDistribution(first.step, first.offset + second.offset, out, infinite, error)


def compose_all(parts: list[LossDistribution]) -> LossDistribution:
    """The composition of every part (see :func:`compose`)."""
    if not parts:
        raise ValueError("nothing to compose.")
    total = parts[0]
    for part in parts[1:]:
        total = compose(total, part)
    return total
