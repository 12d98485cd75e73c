"""Tests of SecureRandom: exact uniform integers from an injectable byte source."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from scipy import stats

from dpframe.errors import DPError
from dpframe.noise import NoiseParameterError, SecureRandom
from tests.noise._support import ALPHA, ShakeSource, bernoulli_ref, check_sampler


class Scripted:
    """Byte source returning the given chunks in order (each must match the request)."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self.chunks = list(chunks)
        self.requests: list[int] = []

    def __call__(self, n: int) -> bytes:
        self.requests.append(n)
        chunk = self.chunks.pop(0)
        assert len(chunk) == n, f"expected a request for {len(chunk)} bytes, got {n}"
        return chunk


def constant(byte: int) -> Callable[[int], bytes]:
    return lambda n: bytes([byte]) * n


def uniform_pvalue(values: np.ndarray, m: int) -> float:
    counts = np.bincount(values, minlength=m)
    assert counts.size == m
    return float(stats.chisquare(counts).pvalue)


# -- randbits / randbelow ------------------------------------------------------------


def test_default_source_is_os_urandom() -> None:
    rng = SecureRandom()
    assert rng._read_bytes is os.urandom
    assert 0 <= rng.randbelow(10) < 10


def test_randbits_reads_whole_bytes_and_shifts() -> None:
    src = Scripted([b"\xff", b"\xff\xff", b"\x01\x00\x00\x80"])
    rng = SecureRandom(src)
    assert rng.randbits(5) == 31
    assert rng.randbits(9) == 511
    assert rng.randbits(32) == 0x80000001
    assert src.requests == [1, 2, 4]


def test_randbits_zero_reads_nothing() -> None:
    src = Scripted([])
    assert SecureRandom(src).randbits(0) == 0
    assert src.requests == []


@pytest.mark.parametrize("k", [1, 7, 8, 9, 63, 64, 65, 200])
def test_randbits_range(rng: SecureRandom, k: int) -> None:
    values = [rng.randbits(k) for _ in range(200)]
    assert all(0 <= v < 2**k for v in values)
    assert max(values) >= 2 ** (k - 1) or k == 1  # the top bit is used


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (-1, "k must be >= 0, got -1"),
        (1.5, "k must be an integer, got float"),
        ("3", "k must be an integer, got str"),
        (True, "k must be an integer, not a bool"),
        (None, "k must be an integer, got NoneType"),
    ],
)
def test_randbits_rejects_bad_k(bad: object, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        SecureRandom().randbits(bad)  # type: ignore[arg-type]


def test_randbelow_rejection_redraws() -> None:
    # m = 5 needs 3 bits: 0xff -> 7 (rejected), 0xa0 -> 5 (rejected), 0x60 -> 3.
    src = Scripted([b"\xff", b"\xa0", b"\x60"])
    assert SecureRandom(src).randbelow(5) == 3
    assert src.requests == [1, 1, 1]


def test_randbelow_one_reads_nothing() -> None:
    src = Scripted([])
    assert SecureRandom(src).randbelow(1) == 0


def test_randbelow_huge_bound(rng: SecureRandom) -> None:
    m = 2**200 + 3
    values = [rng.randbelow(m) for _ in range(400)]
    assert all(0 <= v < m for v in values)
    # Each draw exceeds 2**199 with probability about 1/2 (and 2**200 with ~2**-200).
    assert 100 < sum(v >= 2**199 for v in values) < 300


def test_randbelow_huge_bound_rejects_above_m() -> None:
    m = 2**200 + 3
    src = Scripted([b"\xff" * 26, b"\x00" * 26])  # 201 bits: all ones is >= m
    assert SecureRandom(src).randbelow(m) == 0


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (0, "m must be >= 1, got 0"),
        (-5, "m must be >= 1, got -5"),
        (2.0, "m must be an integer, got float"),
        (False, "m must be an integer, not a bool"),
    ],
)
def test_randbelow_rejects_bad_bound(bad: object, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        SecureRandom().randbelow(bad)  # type: ignore[arg-type]


def test_randbelow_is_uniform(rng: SecureRandom) -> None:
    values = np.array([rng.randbelow(10) for _ in range(20_000)])
    assert uniform_pvalue(values, 10) >= ALPHA


# -- uniform_below -------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 2, 3, 7, 255, 256, 257, 2**32 + 1, 2**61 + 1, 2**62])
def test_uniform_below_scalar_bounds(rng: SecureRandom, m: int) -> None:
    out = rng.uniform_below(m, 5000)
    assert out.dtype == np.int64
    assert out.shape == (5000,)
    assert out.min() >= 0
    assert out.max() < m
    if m > 2**32:
        assert out.max() > m // 4  # the high bits are used


def test_uniform_below_array_bounds(rng: SecureRandom) -> None:
    m = np.array([1, 2, 3, 1000, 2**40 + 7, 2**62] * 1000, dtype=np.int64)
    out = rng.uniform_below(m, m.size)
    assert out.dtype == np.int64
    assert np.all(out >= 0)
    assert np.all(out < m)
    assert np.all(out[m == 1] == 0)


def test_uniform_below_accepts_other_integer_dtypes(rng: SecureRandom) -> None:
    for dtype in (np.int32, np.uint8, np.uint64):
        out = rng.uniform_below(np.full(10, 7, dtype=dtype), 10)
        assert out.dtype == np.int64
        assert np.all((out >= 0) & (out < 7))


def test_uniform_below_size_zero(rng: SecureRandom) -> None:
    assert rng.uniform_below(7, 0).shape == (0,)
    assert rng.uniform_below(np.zeros(0, dtype=np.int64), 0).shape == (0,)


@pytest.mark.parametrize(
    ("m", "size", "match"),
    [
        (0, 3, r"m must satisfy 1 <= m <= 2\*\*62, got 0"),
        (-1, 3, r"m must satisfy 1 <= m <= 2\*\*62, got -1"),
        (2**62 + 1, 3, r"m must satisfy 1 <= m <= 2\*\*62, got 4611686018427387905"),
        (np.array([1, 0, 2]), 3, r"every bound m_i must satisfy 1 <= m_i <= 2\*\*62"),
        (np.array([1, 2**62 + 1, 2]), 3, r"every bound m_i must satisfy 1 <= m_i <= 2\*\*62"),
        (np.array([2**63 + 5], dtype=np.uint64), 1, "m has values that do not fit in int64"),
        (np.array([1, 2]), 3, r"m must have shape \(3,\), got \(2,\)"),
        (np.array([1.0, 2.0, 3.0]), 3, "m must have an integer dtype, got float64"),
        (np.array([True, True, True]), 3, "m must have an integer dtype, got bool"),
        (5, -1, "size must be >= 0, got -1"),
        (5, 2.5, "size must be an integer, got float"),
    ],
)
def test_uniform_below_validation(m: object, size: object, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        SecureRandom().uniform_below(m, size)  # type: ignore[arg-type]


def test_uniform_below_redraws_only_rejected() -> None:
    # m = 3: mask 0b11, one byte per word.  Round 1: [3, 1, 3, 2] rejects elements
    # 0 and 2; round 2 redraws those two: [0, 3]; round 3 redraws element 2: [1].
    src = Scripted([bytes([3, 1, 3, 2]), bytes([0, 3]), bytes([1])])
    out = SecureRandom(src).uniform_below(3, 4)
    assert out.tolist() == [0, 1, 1, 2]
    assert src.requests == [4, 2, 1]


def test_uniform_below_word_width_follows_bound() -> None:
    for m, width in [(2, 1), (256, 1), (257, 2), (2**16, 2), (2**16 + 1, 4), (2**33, 8)]:
        src = Scripted([b"\x00" * (width * 3)])
        assert SecureRandom(src).uniform_below(m, 3).tolist() == [0, 0, 0]
        assert src.requests == [width * 3]


def test_uniform_below_power_of_two_single_read(source: ShakeSource) -> None:
    rng = SecureRandom(source)
    rng.uniform_below(2**40, 10_000)
    assert source.calls == 1


def test_uniform_below_is_uniform(rng: SecureRandom) -> None:
    assert uniform_pvalue(rng.uniform_below(7, 70_000), 7) >= ALPHA
    m = np.tile(np.array([3, 5], dtype=np.int64), 30_000)
    out = rng.uniform_below(m, m.size)
    assert uniform_pvalue(out[m == 3], 3) >= ALPHA
    assert uniform_pvalue(out[m == 5], 5) >= ALPHA


def test_uniform_below_detects_bias(rng: SecureRandom) -> None:
    # Power check for the uniformity test: "modulo" sampling of 8 bits into 0..99
    # (values below 56 are 3/256 likely instead of 2/256) must be rejected.
    biased = rng.uniform_below(256, 70_000) % 100
    assert uniform_pvalue(biased, 100) < ALPHA


def test_wrong_length_source_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="returned 1 bytes instead of 8"):
        SecureRandom(lambda n: b"\x00").uniform_below(2**40, 1)


# -- fair bits and Bernoulli arrays ------------------------------------------------------


def test_fair_bits_layout() -> None:
    src = Scripted([bytes([0b00000101, 0b1])])
    assert SecureRandom(src).fair_bits(9).tolist() == [1, 0, 1, 0, 0, 0, 0, 0, 1]


def test_fair_bits_balanced(rng: SecureRandom) -> None:
    bits = rng.fair_bits(100_001)
    assert bits.dtype == np.bool_
    assert float(stats.binomtest(int(bits.sum()), bits.size).pvalue) >= ALPHA


def test_bernoulli_array_extremes(rng: SecureRandom) -> None:
    assert not rng.bernoulli_array(0, 5, 1000).any()
    assert rng.bernoulli_array(5, 5, 1000).all()
    num = np.array([0, 3, 3] * 100)
    den = np.array([4, 3, 10**12] * 100)
    out = rng.bernoulli_array(num, den, 300)
    assert out.dtype == np.bool_
    assert not out[0::3].any()
    assert out[1::3].all()


@pytest.mark.parametrize(
    ("num", "den", "match"),
    [
        (-1, 3, r"probabilities num/den must lie in \[0, 1\]"),
        (4, 3, r"probabilities num/den must lie in \[0, 1\]"),
        (1, 0, r"den must satisfy 1 <= den <= 2\*\*62, got 0"),
        (1, 2**62 + 1, r"den must satisfy 1 <= den <= 2\*\*62, got 4611686018427387905"),
        (np.array([1, 5]), 3, r"probabilities num/den must lie in \[0, 1\]"),
        (1.0, 2, "num must be an integer, got float"),
    ],
)
def test_bernoulli_array_validation(num: object, den: object, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        SecureRandom().bernoulli_array(num, den, 2)  # type: ignore[arg-type]


def test_errors_are_dp_errors() -> None:
    with pytest.raises(DPError, match="m must be >= 1"):
        SecureRandom().randbelow(0)
    with pytest.raises(ValueError, match="m must be >= 1"):
        SecureRandom().randbelow(0)


def test_bernoulli_array_statistics(rng: SecureRandom) -> None:
    # 40,000 draws: predicted power against p = 0.7/3 and 1.3/3 is > 1 - 1e-6.
    check_sampler(
        lambda n: rng.bernoulli_array(1, 3, n).astype(np.int64),
        40_000,
        bernoulli_ref(1 / 3),
        [bernoulli_ref(0.7 / 3), bernoulli_ref(1.3 / 3)],
    )
