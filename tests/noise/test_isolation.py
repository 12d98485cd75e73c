"""The samplers draw all their randomness from the injected byte source, and nothing else."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpframe.noise
from dpframe.noise import (
    SecureRandom,
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_array,
    discrete_gaussian,
    discrete_gaussian_array,
    discrete_laplace,
    discrete_laplace_array,
    geometric_exp,
)
from tests.noise._support import ShakeSource

Sampler = Callable[[SecureRandom], object]

SAMPLERS: dict[str, Sampler] = {
    "bernoulli": lambda r: [bernoulli(Fraction(1, 3), r) for _ in range(50)],
    "bernoulli_exp": lambda r: [bernoulli_exp(Fraction(27, 10), r) for _ in range(50)],
    "geometric_exp": lambda r: [geometric_exp(Fraction(1, 3), r) for _ in range(50)],
    "discrete_laplace": lambda r: [discrete_laplace(Fraction(7, 3), r) for _ in range(50)],
    "discrete_gaussian": lambda r: [discrete_gaussian(Fraction(7, 3), r) for _ in range(50)],
    "bernoulli_exp_array": lambda r: bernoulli_exp_array(  # x8: two seeds must differ
        np.array([3, 27, 10**30 + 1] * 8, dtype=object),
        np.array([10, 10, 10**30] * 8, dtype=object),
        r,
    ).tolist(),
    "discrete_laplace_array": lambda r: discrete_laplace_array(1000, 500, r).tolist(),
    "discrete_laplace_array_fallback": lambda r: discrete_laplace_array(
        Fraction(2**70 + 1, 2**69), 20, r
    ).tolist(),
    "discrete_gaussian_array": lambda r: discrete_gaussian_array(10**6, 500, r).tolist(),
    "discrete_gaussian_array_object": lambda r: discrete_gaussian_array(
        Fraction(10**25 + 7, 3), 500, r
    ).tolist(),
    "uniform_below": lambda r: r.uniform_below(np.array([3, 10**12]), 2).tolist(),
    "randbelow": lambda r: r.randbelow(2**200 + 3),
    "fair_bits": lambda r: r.fair_bits(17).tolist(),
}


@pytest.fixture
def no_os_randomness(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every other source of OS randomness fail loudly."""

    def forbidden(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("a sampler read randomness other than the injected source")

    monkeypatch.setattr(os, "urandom", forbidden)
    monkeypatch.setattr(os, "getrandom", forbidden, raising=False)


@pytest.mark.usefixtures("no_os_randomness")
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_reads_only_the_injected_source(name: str) -> None:
    first = ShakeSource(f"isolation-{name}")
    out1 = SAMPLERS[name](SecureRandom(first))
    assert first.calls > 0, "the injected source was never called"
    # Same seed, same bytes, same output: no hidden randomness anywhere.
    second = ShakeSource(f"isolation-{name}")
    out2 = SAMPLERS[name](SecureRandom(second))
    assert out1 == out2
    assert (first.calls, first.bytes_read) == (second.calls, second.bytes_read)
    # A different seed changes the output (the bytes are really used).
    out3 = SAMPLERS[name](SecureRandom(ShakeSource(f"other-{name}")))
    assert out3 != out1


def test_no_general_purpose_generators_in_the_package() -> None:
    # Built from pieces so that this file does not match a repository-wide grep.
    forbidden = re.compile(
        "|".join(
            [
                r"\bnp\." + "random",
                r"\bnumpy\." + "random",
                r"^\s*import\s+" + "random",
                r"^\s*from\s+" + r"random\s+import",
                r"\bsecrets\b",
            ]
        ),
        re.MULTILINE,
    )
    package_dir = Path(dpframe.noise.__file__).parent
    files = sorted(package_dir.glob("*.py"))
    assert len(files) >= 6
    for path in files:
        match = forbidden.search(path.read_text())
        assert match is None, f"{path.name}: {match.group(0) if match else ''}"


def test_public_api_is_exported() -> None:
    for name in dpframe.noise.__all__:
        assert hasattr(dpframe.noise, name), name
    assert {"SecureRandom", "coarsen_up", "discrete_gaussian_array"} <= set(dpframe.noise.__all__)
