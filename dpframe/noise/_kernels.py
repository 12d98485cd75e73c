"""Vectorized exact Bernoulli kernels used by :mod:`dpframe.noise.vectorized`.

Two families, with the same contracts:

* ``*_int`` work on int64 arrays whose values are at most ``2**62``; every
  product is bound-checked before it is formed, so nothing can overflow.
* ``*_obj`` work on numpy object arrays of Python ints (arbitrary size).  They
  draw one 62-bit word per Bernoulli trial and compare it with
  ``floor(p * 2**62)``; only on an exact tie (probability ``2**-62``) do they
  finish the trial with the scalar exact sampler, so they stay exact.

Loops run over *rounds* of rejection (the active set shrinks geometrically),
never over elements, except in the ``2**-62`` tie case.

Reference: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020, Algorithm 1.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.noise import exact
from dpframe.noise._checks import INT64_SAFE
from dpframe.noise.random_source import SecureRandom

IntArray = npt.NDArray[np.int64]
ObjArray = npt.NDArray[np.object_]
BoolArray = npt.NDArray[np.bool_]

_WORD_BITS = 62

#: Timing hardening: batches of at most this many elements draw a fixed block of
#: Bernoulli trials per element in one call, instead of looping until the last
#: element is decided, so the time to sample does not grow with the noise drawn.
FIXED_WORK_MAX_SIZE = 1024
#: Trials per element in the fixed block; more are needed with probability exp(-40) < 5e-18.
FIXED_WORK_ROUNDS = 40
#: Trials per element in the fixed block of Bernoulli(exp(-gamma)), gamma <= 1: more are
#: needed with probability at most 1/20! < 5e-19.
FIXED_LE1_ROUNDS = 20


def _take(den: int | IntArray, idx: npt.NDArray[np.intp]) -> int | IntArray:
    """Index ``den`` when it is an array; pass a scalar through."""
    return den if isinstance(den, int) else den[idx]


def bern_ratio_int(num: IntArray, den: int | IntArray, k: int, rng: SecureRandom) -> BoolArray:
    """Bernoulli(num_i / (den_i * k)) for ``0 <= num_i <= den_i <= 2**62`` and ``k >= 1``."""
    n = num.size
    den_max = den if isinstance(den, int) else (int(den.max()) if n else 1)
    if den_max <= INT64_SAFE // k:
        single: BoolArray = rng.uniform_below(den * k, n) < num
        return single
    # U uniform on {0..den*k-1} written as (w, u) with w uniform on {0..k-1}, u on
    # {0..den-1}: U < num <= den iff w == 0 and u < num.
    split: BoolArray = (rng.uniform_below(den, n) < num) & (rng.uniform_below(k, n) == 0)
    return split


def _bexp_le1_fixed(num: IntArray, den: int | IntArray, rng: SecureRandom) -> BoolArray:
    """:func:`bexp_le1_int` with the first FIXED_LE1_ROUNDS trials drawn in one block.

    Trial k continues with probability num/(den·k); K is the first trial that
    stops, and the result is whether K is odd.  The block's size and bounds
    depend on ``den`` (public) only, so the work does not depend on ``num``;
    an element whose block never stops (probability below 1/20!) continues
    with the loop.
    """
    n, rounds = num.size, FIXED_LE1_ROUNDS
    ks = np.tile(np.arange(1, rounds + 1, dtype=np.int64), n)
    nums = np.repeat(num, rounds)
    dens = np.repeat(np.broadcast_to(np.asarray(den, dtype=np.int64), (n,)), rounds)
    if int(dens.max()) <= INT64_SAFE // rounds:
        cont = rng.uniform_below(dens * ks, n * rounds) < nums
    else:  # as bern_ratio_int: U < num <= den on {0..den*k-1} iff w == 0 and u < num
        cont = (rng.uniform_below(dens, n * rounds) < nums) & (
            rng.uniform_below(ks, n * rounds) == 0
        )
    stops = ~cont.reshape(n, rounds)
    stopped = stops.any(axis=1)
    result: BoolArray = np.argmax(stops, axis=1) % 2 == 0  # K = index + 1 is odd
    rest = np.flatnonzero(~stopped)
    if rest.size:
        result[rest] = _bexp_le1_loop(num[rest], _take(den, rest), rng, rounds + 1)
    return result


def bexp_le1_int(num: IntArray, den: int | IntArray, rng: SecureRandom) -> BoolArray:
    """Bernoulli(exp(-num_i/den_i)) for ``0 <= num_i <= den_i <= 2**62`` (CKS Algorithm 1).

    Small batches do a fixed amount of work (timing hardening, see
    :func:`count_exp1_successes`).
    """
    if 0 < num.size <= FIXED_WORK_MAX_SIZE:
        return _bexp_le1_fixed(num, den, rng)
    return _bexp_le1_loop(num, den, rng, 1)


def _bexp_le1_loop(num: IntArray, den: int | IntArray, rng: SecureRandom, k: int) -> BoolArray:
    """The loop of CKS Algorithm 1 from trial ``k`` on (earlier trials all continued)."""
    result = np.empty(num.size, dtype=np.bool_)
    active = np.arange(num.size)
    while active.size:
        cont = bern_ratio_int(num[active], _take(den, active), k, rng)
        result[active[~cont]] = k % 2 == 1
        active = active[cont]
        k += 1
    return result


_RADIX_TOP = 12
_RADIX_SPAN = math.factorial(_RADIX_TOP)  # 12! < 2**29: 4-byte words, 89% accepted


def bexp_one(n: int, rng: SecureRandom) -> BoolArray:
    """``n`` draws of Bernoulli(exp(-1)) (CKS Algorithm 1 with gamma = 1).

    Algorithm 1 returns whether ``K`` is odd, where ``K`` is the first ``j``
    with ``U_j != 0`` for independent ``U_j`` uniform on ``{0..j-1}``
    (``U_1 = 0``).  The digits ``U_2..U_12`` are read off one uniform ``W`` on
    ``{0..12!-1}`` in mixed radix (``W = sum U_j (j-1)!``); if they are all 0
    (probability ``1/12!``) the loop continues with fresh draws from ``j = 13``.
    """
    result = np.empty(n, dtype=np.bool_)
    active = np.arange(n)
    rest = rng.uniform_below(_RADIX_SPAN, n)
    for j in range(2, _RADIX_TOP + 1):
        stop = rest % j != 0
        result[active[stop]] = j % 2 == 1
        active = active[~stop]
        rest = rest[~stop] // j
        if not active.size:
            return result
    k = _RADIX_TOP + 1
    while active.size:
        cont = rng.uniform_below(k, active.size) == 0
        result[active[~cont]] = k % 2 == 1
        active = active[cont]
        k += 1
    return result


def _first_failures(n: int, rng: SecureRandom) -> IntArray:
    """Per element, the index of the first failure among FIXED_WORK_ROUNDS Bernoulli(exp(-1))."""
    failed = ~bexp_one(n * FIXED_WORK_ROUNDS, rng).reshape(n, FIXED_WORK_ROUNDS)
    first: IntArray = np.where(
        failed.any(axis=1), np.argmax(failed, axis=1), FIXED_WORK_ROUNDS
    ).astype(np.int64)
    return first


def count_exp1_successes(n: int, rng: SecureRandom) -> IntArray:
    """Count the successes of Bernoulli(exp(-1)) before the first failure, ``n`` times.

    For small batches (the scalar releases whose timing an observer could tie
    to one noise value) the trials come in one fixed block per element, so the
    work does not depend on the counts; the rare element that succeeds in the
    whole block continues with fresh draws (the count is memoryless).
    """
    if 0 < n <= FIXED_WORK_MAX_SIZE:
        counts = _first_failures(n, rng)
        more = np.flatnonzero(counts == FIXED_WORK_ROUNDS)
        if more.size:
            counts[more] += count_exp1_successes(more.size, rng)
        return counts
    v = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while active.size:
        active = active[bexp_one(active.size, rng)]
        v[active] += 1
    return v


def _integer_part(q: IntArray | ObjArray, rng: SecureRandom) -> BoolArray:
    """AND of ``q_i`` draws of Bernoulli(exp(-1)), i.e. Bernoulli(exp(-q_i)).

    Stops each element at its first failure, so the number of rounds is about
    ``log(n)`` however large the ``q_i`` are.  Small batches use one fixed block
    of trials per element instead (see :func:`count_exp1_successes`).
    """
    n = q.shape[0]
    if 0 < n <= FIXED_WORK_MAX_SIZE:
        cap = np.minimum(q, FIXED_WORK_ROUNDS).astype(np.int64)
        alive_fixed: BoolArray = _first_failures(n, rng) >= cap
        beyond = np.flatnonzero(alive_fixed & np.asarray(q > FIXED_WORK_ROUNDS, dtype=np.bool_))
        if beyond.size:
            alive_fixed[beyond] = _integer_part(q[beyond] - FIXED_WORK_ROUNDS, rng)
        return alive_fixed
    alive = np.ones(n, dtype=np.bool_)
    idx = np.flatnonzero(np.asarray(q > 0, dtype=np.bool_))
    j = 0
    while idx.size:
        ok = bexp_one(idx.size, rng)
        alive[idx[~ok]] = False
        idx = idx[ok]
        j += 1
        idx = idx[np.asarray(q[idx] > j, dtype=np.bool_)]
    return alive


def bexp_int(num: IntArray, den: int | IntArray, rng: SecureRandom) -> BoolArray:
    """Bernoulli(exp(-num_i/den_i)) for ``0 <= num_i <= 2**62`` and ``1 <= den_i <= 2**62``."""
    q, r = np.divmod(num, den)
    alive = _integer_part(q, rng)
    live = np.flatnonzero(alive)
    alive[live] = bexp_le1_int(r[live], _take(den, live), rng)
    return alive


def bern_ratio_obj(num: ObjArray, den: ObjArray, rng: SecureRandom) -> BoolArray:
    """Bernoulli(num_i / den_i) for Python ints ``0 <= num_i <= den_i``, ``den_i >= 1``."""
    n = num.shape[0]
    scaled: Any = np.left_shift(num, _WORD_BITS)
    p0 = (scaled // den).astype(np.int64)  # floor(p * 2**62), in [0, 2**62]
    word = rng.uniform_below(1 << _WORD_BITS, n)
    out: BoolArray = word < p0
    for i in np.flatnonzero(word == p0):  # a tie: probability 2**-62 per element
        d_i = int(den[i])
        out[i] = exact.bernoulli(Fraction((int(num[i]) << _WORD_BITS) % d_i, d_i), rng)
    return out


def bexp_le1_obj(num: ObjArray, den: ObjArray, rng: SecureRandom) -> BoolArray:
    """Object-array version of :func:`bexp_le1_int` (``0 <= num_i <= den_i``)."""
    result = np.empty(num.shape[0], dtype=np.bool_)
    active = np.arange(num.shape[0])
    k = 1
    while active.size:
        cont = bern_ratio_obj(num[active], den[active] * k, rng)
        result[active[~cont]] = k % 2 == 1
        active = active[cont]
        k += 1
    return result


def bexp_obj(num: ObjArray, den: ObjArray, rng: SecureRandom) -> BoolArray:
    """Bernoulli(exp(-num_i/den_i)) for Python ints ``num_i >= 0``, ``den_i >= 1``."""
    q: ObjArray = num // den
    r: ObjArray = num - q * den
    alive = _integer_part(q, rng)
    live = np.flatnonzero(alive)
    alive[live] = bexp_le1_obj(r[live], den[live], rng)
    return alive


def bexp_mixed(num: ObjArray, den: ObjArray, rng: SecureRandom) -> BoolArray:
    """Bernoulli(exp(-num_i/den_i)) for object arrays, using int64 where values fit."""
    small = np.asarray((num <= INT64_SAFE) & (den <= INT64_SAFE), dtype=np.bool_)
    out = np.empty(num.shape[0], dtype=np.bool_)
    si = np.flatnonzero(small)
    bi = np.flatnonzero(~small)
    out[si] = bexp_int(num[si].astype(np.int64), den[si].astype(np.int64), rng)
    out[bi] = bexp_obj(num[bi], den[bi], rng)
    return out
