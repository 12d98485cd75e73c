"""Permute-and-flip in many independent rows at once, with exact coins drawn in bulk.

A grouped quantile runs one selection per group (1,000 groups × 4,097
candidates is 4 million acceptance coins per release); drawing each coin
with the exact Bernoulli(exp(−x)) sampler of Canonne, Kamath and Steinke
(2020) costs about half a second at that size.  This module draws the same
coins, exactly, from one uniform 62-bit word each, and only falls back to
exact arithmetic in the rare case where floating point cannot decide.

Privacy:
    Row g's output has exactly the distribution of
    :func:`~dpframe.mechanisms.selection.selection.permute_and_flip` on row g's
    utilities (McKenna & Sheldon 2020): ε-DP for utilities of sensitivity Δ,
    and (tε)-DP when a neighbour moves row g's utilities by at most tΔ
    (t ≤ 1: the acceptance probabilities depend on ε/Δ only).  Rows are
    independent given the data.  Two facts make it the same distribution:

    * permute-and-flip visits the candidates in a uniformly random order and
      outputs the first accepted one, with independent coins; the first
      accepted candidate in a uniform order is uniform among the accepted
      ones, so drawing every coin and choosing uniformly (exactly: one
      ``uniform_below``) among the accepted ones is the same mechanism (the
      best candidate is always accepted: the set is never empty);
    * each coin is exactly Bernoulli(exp(−x)) (:func:`exp_coins`).

Accuracy:
    As permute-and-flip: with probability at least 1 − β a row's selected
    utility is at least u* − (2Δ/ε)·ln(k/β) for k candidates.
"""

from __future__ import annotations

import math
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidBudgetError
from dpframe.noise import SecureRandom, bernoulli_exp_array

__all__ = ["exp_coins", "permute_and_flip_rows"]

_WORD_BITS = 62
_WORD = 2**_WORD_BITS
#: Exponents at or above this are split: exp(−x) = exp(−CAP)·exp(−(x − CAP)).
_CAP = 40
#: Relative margin around float64's exp(−x) for x ≤ CAP (its error is below 2**-45).
_MARGIN = 2.0**-40


def _thresholds(p: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Integers A ≤ p·2⁶² ≤ B for float approximations ``p`` of exp(−x), x ≤ CAP.

    ``p`` is within a relative 2⁻⁴⁵ of the true value (x is computed with a
    relative error below 3·2⁻⁵³, so its absolute error is below 2⁻⁴⁶ for
    x ≤ 40, and float64's exp adds a few units in the last place); the
    margin of 2⁻⁴⁰, and one more word on each side, cover both and the
    rounding of the margins themselves.
    """
    scaled = p * float(_WORD)
    low = np.floor(scaled * (1.0 - _MARGIN)) - 1.0
    high = np.ceil(scaled * (1.0 + _MARGIN)) + 1.0
    return np.maximum(low, 0.0).astype(np.int64), high.astype(np.int64)


def _exp_bounds(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rational bounds lo ≤ exp(−x) ≤ hi for 0 < x ≤ CAP, about ``digits`` digits apart.

    ``Context.divide`` and ``Context.exp`` are correctly rounded (Python's
    decimal module), so each is within a relative 10^(1 − digits) of the
    exact value: |x̃ − x| ≤ δ = x·10^(1 − digits), and exp(−x) lies in
    exp(−x̃)·[e^(−δ), e^(δ)] ⊂ ẽ·(1 ∓ r)·[1 − δ, 1 + 2δ] with r = 10^(1 − digits).
    """
    context = Context(prec=digits, Emin=MIN_EMIN, Emax=MAX_EMAX)
    approx = context.divide(Decimal(x.numerator), Decimal(x.denominator))
    value = Fraction(context.exp(context.minus(approx)))
    r = Fraction(1, 10 ** (digits - 1))
    delta = x * r
    return value * (1 - r) * (1 - delta), value * (1 + r) * (1 + 2 * delta)


def _settle(x: Fraction, word: int, rng: SecureRandom) -> bool:
    """Decide (word + W)/2⁶² < exp(−x) for W uniform on [0, 1), drawing W's bits lazily.

    Exact: W's bits are drawn 64 at a time and exp(−x) is bounded ever more
    tightly until the comparison is decided; exp(−x) is irrational for
    rational x > 0 (Lindemann), so this ends with probability 1 (each round
    continues with probability below 2⁻⁶⁰).
    """
    bits, w, digits = 0, 0, 40
    while True:
        lo, hi = _exp_bounds(x, digits)
        t_lo, t_hi = lo * _WORD - word, hi * _WORD - word  # (word + W) < p·2⁶²  ⟺  W < t
        if Fraction(w + 1, 2**bits) <= t_lo:
            return True
        if Fraction(w, 2**bits) >= t_hi:
            return False
        w = (w << 64) | rng.randbits(64)
        bits += 64
        digits += 25


#: Bits of every coin's word drawn first; the rest (54 bits) only where they are needed.
_TOP_BITS = 8
_REST_BITS = _WORD_BITS - _TOP_BITS


def _decide(
    words: npt.NDArray[np.int64],
    gaps: npt.NDArray[Any],
    factor: Fraction,
    p: npt.NDArray[np.float64],
    rng: SecureRandom,
) -> npt.NDArray[np.bool_]:
    """V = (U + W)/2⁶² < exp(−gap·factor) for 62-bit words U: float bounds, else exact."""
    low, high = _thresholds(p)
    coins = words < low
    for i in np.flatnonzero((words >= low) & (words < high)):
        coins[i] = _settle(int(gaps[i]) * factor, int(words[i]), rng)
    return coins


def _accepted(flat: npt.NDArray[Any], factor: Fraction, rng: SecureRandom) -> npt.NDArray[np.intp]:
    """The sorted positions i whose coin of exp(−flat_i·factor) succeeds (see :func:`exp_coins`).

    Every coin's uniform 62-bit word U = T·2⁵⁴ + R is drawn in two parts:
    the top 8 bits T for every coin, and the rest R only where T does not
    decide.  With integer bounds a ≤ exp(−x)·2⁸ ≤ b (from float64, with the
    margin of :func:`_thresholds`), T < a accepts (U < (T + 1)·2⁵⁴ ≤ a·2⁵⁴)
    and T ≥ b rejects; a far coin (x ≥ 40: exp(−40)·2⁶² < 21) can only
    succeed when T = 0.  U is exactly uniform either way, so the coins are
    those of :func:`exp_coins`.
    """
    n = flat.shape[0]
    top = rng.uniform_below(2**_TOP_BITS, n)
    # x ≥ CAP exactly: gap ≥ ceil(CAP / factor), an exact integer threshold.
    far = np.asarray(flat >= math.ceil(Fraction(_CAP) / factor), dtype=np.bool_)
    found: list[npt.NDArray[np.intp]] = []
    hits = np.flatnonzero((top == 0) & far)  # U < 2⁵⁴: the first stage may succeed
    if hits.size:
        rest = rng.uniform_below(2**_REST_BITS, hits.size)  # U = 0·2⁵⁴ + rest
        cap = np.full(hits.size, _CAP, dtype=np.int64)
        p_cap = np.full(hits.size, math.exp(-_CAP))
        survivors = hits[_decide(rest, cap, Fraction(1), p_cap, rng)]
        if survivors.size:  # x − CAP = (gap·a − CAP·b)/b for factor = a/b
            a, b = factor.numerator, factor.denominator
            left = np.array([int(flat[i]) * a - _CAP * b for i in survivors], dtype=object)
            found.append(survivors[bernoulli_exp_array(left, b, rng)])
    everything = not far.any()
    near = np.arange(n) if everything else np.flatnonzero(~far)
    if near.size:
        values = flat if everything else flat[near]
        x = values.astype(np.float64)
        x *= -float(factor)
        p = np.exp(x, out=x)
        scaled = p * float(2**_TOP_BITS)
        upper = np.ceil(scaled * (1.0 + _MARGIN))
        upper += 1.0
        scaled *= 1.0 - _MARGIN
        lower = np.floor(scaled, out=scaled)
        lower -= 1.0
        word_top = top if everything else top[near]
        coins = word_top < lower
        coins |= values == 0
        pending = np.flatnonzero((word_top >= lower) & (word_top < upper) & (values != 0))
        if pending.size:
            rest = rng.uniform_below(2**_REST_BITS, pending.size)
            words = (word_top[pending] << _REST_BITS) + rest
            coins[pending] = _decide(words, values[pending], factor, p[pending], rng)
        found.append(near[coins])
    return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.intp)


def exp_coins(gaps: npt.NDArray[Any], factor: Fraction, rng: SecureRandom) -> npt.NDArray[np.bool_]:
    """Independent coins, coin i True with probability exactly exp(−gaps_i·factor).

    For x = gap·factor < 40 a uniform 62-bit word U is compared with integer
    bounds A ≤ exp(−x)·2⁶² ≤ B from float64: U < A accepts, U ≥ B rejects
    (both exact consequences of V = (U + W)/2⁶² < exp(−x) for a uniform
    real V whose first 62 bits are U), and A ≤ U < B (probability below
    2⁻³⁹) is settled exactly by :func:`_settle`.  For x ≥ 40 the coin is
    the product of a coin of exp(−40) drawn the same way (:func:`_accepted`)
    and, when that one succeeds (probability 4·10⁻¹⁸), an exact coin of
    exp(−(x − 40)) from :func:`~dpframe.noise.bernoulli_exp_array`.  A gap
    of 0 is always accepted.

    Args:
        gaps: non-negative integer gaps (int64 or Python ints in an object array).
        factor: ε/(2Δ) > 0, exact.
        rng: the secure random source.
    """
    flat = np.asarray(gaps).reshape(-1)
    coins = np.zeros(flat.shape[0], dtype=np.bool_)
    coins[_accepted(flat, factor, rng)] = True
    return coins.reshape(np.shape(gaps))


def permute_and_flip_rows(
    utilities: npt.NDArray[Any],
    epsilon: Fraction,
    sensitivity: int,
    rng: SecureRandom,
) -> npt.NDArray[np.intp]:
    """One permute-and-flip selection per row of ``utilities``: ε-DP per row (module docstring).

    Args:
        utilities: integer utilities, shape (rows, candidates) (int64 or object).
        epsilon: the privacy parameter of each row's selection (> 0).
        sensitivity: Δ, a positive integer in the units of ``utilities``.
        rng: the secure random source.

    Returns:
        The selected candidate index of each row.
    """
    if epsilon <= 0:
        raise InvalidBudgetError("epsilon must be > 0.")
    if sensitivity < 1:
        raise InvalidBudgetError("sensitivity must be a positive integer.")
    values = np.asarray(utilities)
    if values.ndim != 2 or values.shape[1] == 0:
        raise InvalidBudgetError("permute_and_flip_rows needs a 2-D array with candidates.")
    if values.shape[0] == 0:
        return np.zeros(0, dtype=np.intp)
    rows, width = values.shape
    gaps = values.max(axis=1, keepdims=True) - values
    accepted = _accepted(gaps.reshape(-1), Fraction(epsilon) / (2 * sensitivity), rng)
    # Each row's best candidate is accepted: every row has at least one position.
    row_of = accepted // width
    first = np.searchsorted(row_of, np.arange(rows))
    count = np.diff(np.append(first, accepted.size))
    rank = rng.uniform_below(count.astype(np.int64), rows)
    return np.asarray(accepted[first + rank] - np.arange(rows) * width, dtype=np.intp)
