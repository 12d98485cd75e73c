"""Private selection: permute-and-flip, the exponential mechanism's better twin (report noisy max).

Utilities are integers (counts, or sums and ranks on a public integer grid),
so every acceptance probability exp(−ε·gap/(2Δ)) is sampled exactly with
rational arithmetic (Canonne, Kamath, Steinke 2020, Algorithm 1).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidBudgetError
from dpframe.noise import SecureRandom, bernoulli_exp_array

__all__ = ["exponential_utility_bound", "permute_and_flip", "secure_permutation"]


def secure_permutation(size: int, rng: SecureRandom) -> npt.NDArray[np.intp]:
    """A uniformly random permutation of ``range(size)`` from the secure source.

    Sorts by independent 62-bit keys and redraws on any tie, so every
    permutation is exactly equally likely.
    """
    while True:
        keys = rng.uniform_below(2**62, size)
        order = np.argsort(keys, kind="stable")
        if size < 2 or bool(np.all(np.diff(keys[order]) != 0)):
            return np.asarray(order, dtype=np.intp)


def permute_and_flip(
    utilities: npt.NDArray[np.int64],
    epsilon: Fraction,
    sensitivity: int,
    rng: SecureRandom,
) -> int:
    """Select an index with high utility: ε-DP (McKenna & Sheldon 2020, "Permute-and-Flip").

    Visit the candidates in a uniformly random order and accept candidate r
    with probability exp(−ε·(u* − u_r)/(2Δ)), u* the largest utility; the
    first acceptance is the output (the best candidate is always accepted, so
    one pass suffices).  Drawing every acceptance coin at once and taking the
    first success in the random order has exactly the same distribution.

    Privacy:
        ε-DP when every utility changes by at most Δ (``sensitivity``) between
        neighbouring datasets (McKenna & Sheldon 2020, Thm. 1).  It is the
        same distribution as report-noisy-max with exponential noise
        (Ding, Kifer, et al. 2021).  Under zCDP dpframe counts it as
        ε²/2-zCDP, which holds for every ε-DP mechanism (Bun & Steinke 2016);
        the tighter ε²/8 of bounded-range mechanisms (Cesar & Rogers 2021)
        needs every utility to move in the same direction by at most Δ.

    Accuracy:
        Never worse than the exponential mechanism: with probability at least
        1 − β the selected utility is at least u* − (2Δ/ε)·ln(k/β) for k
        candidates (:func:`exponential_utility_bound`).

    Args:
        utilities: integer utility per candidate (larger is better).
        epsilon: the privacy parameter (> 0).
        sensitivity: Δ, a positive integer in the units of ``utilities``.
        rng: the secure random source.

    Returns:
        The selected index.
    """
    if epsilon <= 0:
        raise InvalidBudgetError("epsilon must be > 0.")
    if sensitivity < 1:
        raise InvalidBudgetError("sensitivity must be a positive integer.")
    values = np.asarray(utilities)
    if values.ndim != 1 or len(values) == 0:
        raise InvalidBudgetError("permute_and_flip needs at least one candidate.")
    gaps = [int(u) for u in (values.max() - values)]
    factor = epsilon / (2 * sensitivity)
    numerators = np.array([g * factor.numerator for g in gaps], dtype=object)
    if all(n < 2**62 for n in numerators) and factor.denominator < 2**62:
        numerators = numerators.astype(np.int64)
    order = secure_permutation(len(values), rng)
    accepted = bernoulli_exp_array(numerators[order], factor.denominator, rng)
    return int(order[int(np.argmax(accepted))])


def exponential_utility_bound(
    epsilon: float, sensitivity: float, candidates: int, beta: float
) -> float:
    """The utility loss exceeded with probability at most β: (2Δ/ε)·ln(k/β)."""
    return 2.0 * sensitivity / epsilon * math.log(candidates / beta)
