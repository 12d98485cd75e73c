"""The cryptographically secure random source behind every noise sampler.

All randomness in :mod:`dpframe.noise` comes from one byte source, by default
:func:`os.urandom` (the operating system's CSPRNG).  Uniform integers are made
from those bytes by masking and rejection, so every distribution is *exactly*
uniform: there is no modulo bias and no floating point.

Tests inject a deterministic byte source (any ``Callable[[int], bytes]``) to
make runs reproducible; production code keeps the default.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.noise._checks import (
    INT64_SAFE,
    NoiseParameterError,
    as_int_array,
    check_size,
    to_int,
)
from dpframe.noise.pool import NoisePool

__all__ = ["SecureRandom"]

# Little-endian words, so that the same bytes give the same numbers on every platform.
_WORD_DTYPES: dict[int, np.dtype[np.unsignedinteger[Any]]] = {
    1: np.dtype("<u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
    8: np.dtype("<u8"),
}


def _width(max_mask: int) -> int:
    """Bytes per word needed to cover ``max_mask`` (1, 2, 4 or 8)."""
    for width in (1, 2, 4):
        if max_mask < 1 << (8 * width):
            return width
    return 8


def _low_mask(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Return, elementwise, the smallest ``2**b - 1`` that is ``>= x``."""
    m: npt.NDArray[np.uint64] = x.copy()
    for shift in (1, 2, 4, 8, 16, 32):
        m |= m >> np.uint64(shift)
    return m


def _pick(
    a: npt.NDArray[np.uint64] | np.uint64, idx: npt.NDArray[np.intp]
) -> npt.NDArray[np.uint64] | np.uint64:
    """Index ``a`` when it is an array; pass a scalar through."""
    return a[idx] if isinstance(a, np.ndarray) else a


class SecureRandom:
    """Exact uniform integers and bits from a cryptographically secure byte source.

    Privacy:
        The samplers in :mod:`dpframe.noise` are only as private as their
        randomness.  The default source, :func:`os.urandom`, is the operating
        system's CSPRNG; general-purpose generators (Mersenne Twister, PCG) are
        never used, since their state can be recovered from their outputs.
        All derived
        distributions are exact (rejection sampling, never modulo reduction),
        as required by the exact samplers of Canonne, Kamath and Steinke (2020),
        "The Discrete Gaussian for Differential Privacy".

    Accuracy:
        Not applicable: this class produces uniform randomness only.  A call to
        :meth:`randbelow` or :meth:`uniform_below` consumes on average fewer
        than two words of randomness per result (acceptance probability > 1/2).

    Args:
        read_bytes: Function returning ``n`` random bytes when called with
            ``n``.  Defaults to :func:`os.urandom`; inject a deterministic
            source only in tests.
        pool: Optional :class:`~dpframe.noise.pool.NoisePool` through which
            the array samplers serve small repeated requests.

    """

    def __init__(
        self, read_bytes: Callable[[int], bytes] = os.urandom, pool: NoisePool | None = None
    ) -> None:
        self._read_bytes = read_bytes
        self.pool = pool  # pre-drawn noise for repeated small requests (see noise/pool.py)

    def _read(self, n: int) -> bytes:
        """Read exactly ``n`` bytes from the source, checking the length."""
        data = self._read_bytes(n)
        if len(data) != n:
            raise RuntimeError(f"the random byte source returned {len(data)} bytes instead of {n}")
        return bytes(data)

    def _words(self, n: int, width: int = 8) -> npt.NDArray[np.uint64]:
        """Return ``n`` uniform ``8 * width``-bit words from a single read of the source."""
        raw = self._read(width * n)
        return np.frombuffer(raw, dtype=_WORD_DTYPES[width]).astype(np.uint64, copy=False)

    def randbits(self, k: int) -> int:
        """Return a uniform integer with ``k`` random bits, i.e. uniform on ``[0, 2**k)``.

        Args:
            k: Number of bits, ``k >= 0``.  ``k == 0`` returns 0 without reading.

        Returns:
            A Python int uniform on ``{0, ..., 2**k - 1}``.

        Raises:
            NoiseParameterError: If ``k`` is negative or not an integer.

        """
        k = to_int(k, "k")
        if k < 0:
            raise NoiseParameterError(f"k must be >= 0, got {k}")
        if k == 0:
            return 0
        nbytes = (k + 7) // 8
        return int.from_bytes(self._read(nbytes), "little") >> (8 * nbytes - k)

    def randbelow(self, m: int) -> int:
        """Return an exactly uniform integer on ``{0, ..., m-1}``.

        Rejection sampling: draw ``(m-1).bit_length()`` random bits and retry
        while the result is ``>= m`` (so a power of two never rejects, and
        ``m == 1`` reads nothing).  Works for arbitrarily large Python ints.

        Args:
            m: Exclusive upper bound, ``m >= 1``.

        Returns:
            A Python int uniform on ``{0, ..., m-1}``.

        Raises:
            NoiseParameterError: If ``m`` is not an integer ``>= 1``.

        """
        m = to_int(m, "m")
        if m < 1:
            raise NoiseParameterError(f"m must be >= 1, got {m}")
        k = (m - 1).bit_length()
        while True:
            r = self.randbits(k)
            if r < m:
                return r

    def uniform_below(
        self, m: int | npt.NDArray[np.integer[Any]], size: int
    ) -> npt.NDArray[np.int64]:
        """Return ``size`` exactly uniform integers, element ``i`` on ``{0, ..., m_i - 1}``.

        Vectorized rejection sampling: each round reads one block of words
        (one call to the byte source; 1, 2, 4 or 8 bytes per word, the
        smallest width covering every bound), masks word ``i`` to
        ``(m_i - 1).bit_length()`` bits, and keeps it if it is below ``m_i``;
        only the rejected elements are redrawn in the next round.  Each element
        is accepted with probability > 1/2 per round.

        Privacy:
            A building block, not a mechanism: exact uniformity (no modulo
            bias) is what the exact samplers of Canonne, Kamath and Steinke
            (2020), "The Discrete Gaussian for Differential Privacy", assume.

        Accuracy:
            Exactly uniform; about ``log2(size)`` rounds in the worst case.

        Args:
            m: The bounds: an int, or an integer array of shape ``(size,)``; every
                bound must satisfy ``1 <= m_i <= 2**62``.
            size: Number of draws.

        Returns:
            An int64 array of shape ``(size,)``.

        Raises:
            NoiseParameterError: If a bound is outside ``[1, 2**62]`` or the
                shapes disagree.

        """
        size = check_size(size)
        if isinstance(m, np.ndarray):
            bounds = as_int_array(m, "m", size)
            if size and (int(bounds.min()) < 1 or int(bounds.max()) > INT64_SAFE):
                raise NoiseParameterError("every bound m_i must satisfy 1 <= m_i <= 2**62")
            m_u: npt.NDArray[np.uint64] | np.uint64 = bounds.astype(np.uint64)
            mask: npt.NDArray[np.uint64] | np.uint64 = _low_mask(m_u - np.uint64(1))
            width = _width(int(mask.max()) if size else 0)
        else:
            m_int = to_int(m, "m")
            if not 1 <= m_int <= INT64_SAFE:
                raise NoiseParameterError(f"m must satisfy 1 <= m <= 2**62, got {m_int}")
            if m_int == 1:
                return np.zeros(size, dtype=np.int64)
            m_u = np.uint64(m_int)
            mask_int = (1 << (m_int - 1).bit_length()) - 1
            mask = np.uint64(mask_int)
            width = _width(mask_int)
        out = self._words(size, width) & mask
        todo = np.flatnonzero(out >= m_u)
        while todo.size:
            redraw = self._words(todo.size, width) & _pick(mask, todo)
            out[todo] = redraw
            todo = todo[redraw >= _pick(m_u, todo)]
        return out.view(np.int64)  # every value is below 2**62

    def fair_bits(self, size: int) -> npt.NDArray[np.bool_]:
        """Return ``size`` independent fair random bits (one byte read per 8 bits).

        Args:
            size: Number of bits.

        Returns:
            A bool array of shape ``(size,)``; each entry is True with probability 1/2.

        """
        size = check_size(size)
        raw = np.frombuffer(self._read((size + 7) // 8), dtype=np.uint8)
        return np.unpackbits(raw, count=size, bitorder="little").astype(np.bool_)

    def bernoulli_array(
        self,
        num: npt.NDArray[np.integer[Any]] | int,
        den: npt.NDArray[np.integer[Any]] | int,
        size: int,
    ) -> npt.NDArray[np.bool_]:
        """Return ``size`` independent Bernoulli draws with ``P(True) = num_i / den_i`` exactly.

        Computed as ``uniform_below(den) < num``.

        Privacy:
            A building block (the Bernoulli step of Canonne, Kamath and
            Steinke 2020, "The Discrete Gaussian for Differential Privacy",
            Algorithm 1); used as randomized response with
            ``num/den = e^ε/(1+e^ε)`` it is ε-DP.

        Accuracy:
            Exact: mean ``num_i/den_i``, variance ``p_i (1 - p_i)``.

        Args:
            num: Numerators (int or integer array of shape ``(size,)``), ``0 <= num_i <= den_i``.
            den: Denominators (int or integer array of shape ``(size,)``),
                ``1 <= den_i <= 2**62``.
            size: Number of draws.

        Returns:
            A bool array of shape ``(size,)``.

        Raises:
            NoiseParameterError: If a probability is outside ``[0, 1]`` or a
                denominator is outside ``[1, 2**62]``.

        """
        size = check_size(size)
        if isinstance(num, np.ndarray):
            num_a = as_int_array(num, "num", size)
        else:
            num_int = to_int(num, "num")
            if not 0 <= num_int <= INT64_SAFE:
                raise NoiseParameterError("probabilities num/den must lie in [0, 1]")
            num_a = np.full(size, num_int, dtype=np.int64)
        if isinstance(den, np.ndarray):
            den_a: npt.NDArray[np.int64] | int = as_int_array(den, "den", size)
        else:
            den_a = to_int(den, "den")
            if not 1 <= den_a <= INT64_SAFE:
                raise NoiseParameterError(f"den must satisfy 1 <= den <= 2**62, got {den_a}")
        if size and (bool(np.any(num_a < 0)) or bool(np.any(num_a > den_a))):
            raise NoiseParameterError("probabilities num/den must lie in [0, 1]")
        return self.uniform_below(den_a, size) < num_a
