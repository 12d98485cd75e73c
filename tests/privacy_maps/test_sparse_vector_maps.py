"""The sparse vector technique: Lyu–Su–Li Alg. 1's scales and the exact output distribution.

Stated guarantee (``dpframe.mechanisms.thresholds.sparse_vector.sparse_vector``): ε-DP
for counting queries of sensitivity Δ = 1 with ρ ~ DLap(Δ/ε1) and
ν_i ~ DLap(2cΔ/ε2), ε1 = ε2 = ε/2 (numeric: ε/3 each, answers DLap(cΔ/ε3)).
The analysis (a shift of ρ by Δ and of the hits' ν by 2Δ) is not tight, so
the exact pin is declared with its slack: the largest exact privacy loss
over every pair of neighbouring count vectors tried.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from dpframe.audit.exact_divergence import dec, max_log_ratio
from dpframe.audit.exact_outputs import sparse_vector_distribution
from dpframe.mechanisms.thresholds.sparse_vector import sparse_vector
from dpframe.noise import SecureRandom
from tests.privacy_maps.pins import LESS, Pin, assert_pinned, laplace_pin, register

RNG = SecureRandom()
_BITS = Fraction(1, 2**20)  # coarsen_up: at most this relative increase


@pytest.mark.parametrize("epsilon", [Fraction(1), Fraction(1, 3), Fraction(5, 2)])
@pytest.mark.parametrize("max_hits", [1, 3])
@pytest.mark.parametrize("numeric", [False, True])
def test_scales_are_lyu_su_li_algorithm_1(epsilon: Fraction, max_hits: int, numeric: bool) -> None:
    """Δ/ε1, 2cΔ/ε2 and cΔ/ε3 with ε1 = ε2 (= ε3) = ε/2 (ε/3), rounded up by < 2⁻²⁰."""
    out = sparse_vector(np.array([0]), 5.0, epsilon, max_hits, RNG, numeric=numeric)
    share = epsilon / (3 if numeric else 2)
    expected = {
        "threshold": 1 / share,
        "query": 2 * max_hits / share,
        "answer": max_hits / share if numeric else None,
    }
    got = {"threshold": out.threshold_scale, "query": out.query_scale, "answer": out.answer_scale}
    for key, value in expected.items():
        if value is None:
            assert got[key] is None
            continue
        actual = got[key]
        assert actual is not None
        assert value <= Fraction(actual) <= value * (1 + _BITS)
    # the parts compose to ε: ε1 + ε2 (+ c answers at ε3/c each)
    eps1 = 1 / Fraction(out.threshold_scale)
    eps2 = 2 * max_hits / Fraction(out.query_scale)
    eps3 = max_hits / Fraction(out.answer_scale) if out.answer_scale else 0
    assert eps1 + eps2 + eps3 <= epsilon


def _scales(epsilon: Fraction, max_hits: int) -> tuple[Fraction, Fraction]:
    out = sparse_vector(np.array([0]), 5.0, epsilon, max_hits, RNG)
    return Fraction(out.threshold_scale), Fraction(out.query_scale)


def _worst_loss(
    epsilon: Fraction, max_hits: int, shrink: Fraction = Fraction(1)
) -> tuple[Decimal, Decimal]:
    """Max exact loss over count vectors of 3 queries around T and every move in {−1,0,1}³."""
    threshold, query = _scales(epsilon, max_hits)
    cache: dict[tuple[int, ...], dict[tuple[int, ...], Decimal]] = {}
    left = Decimal(0)

    def dist(counts: tuple[int, ...]) -> dict[tuple[int, ...], Decimal]:
        nonlocal left
        if counts not in cache:
            out, missing = sparse_vector_distribution(
                counts, 0, threshold * shrink, query * shrink, max_hits
            )
            cache[counts], left = dict(out), max(left, missing)
        return cache[counts]

    worst = Decimal(0)
    for base in itertools.product((-1, 1), repeat=3):
        for move in itertools.product((-1, 0, 1), repeat=3):
            other = tuple(b + m for b, m in zip(base, move, strict=True))
            p, q = dist(base), dist(other)
            worst = max(worst, max_log_ratio(p, q), max_log_ratio(q, p))
    return worst, left


def _svt_pin(epsilon: Fraction, max_hits: int) -> Pin:
    at, left = _worst_loss(epsilon, max_hits)
    assert left < Decimal("1e-15")
    less, _ = _worst_loss(epsilon, max_hits, LESS)
    name = f"sparse vector, ε={epsilon}, c={max_hits}, 3 queries (exact loss over neighbours)"
    return Pin(name, "max loss", dec(epsilon), at, less, note="analysis not tight")


SVT = register(
    {
        "sparse vector ε=1 c=1": lambda: _svt_pin(Fraction(1), 1),
        "sparse vector ε=1 c=2": lambda: _svt_pin(Fraction(1), 2),
    }
)


@pytest.mark.parametrize("name", SVT)
def test_sparse_vector_exact_loss_within_epsilon(name: str) -> None:
    """Declared slack: Alg. 1's proof is not tight; the exact worst loss is reported."""
    epsilon, hits = (Fraction(1), 1) if name.endswith("c=1") else (Fraction(1), 2)
    loss, left = _worst_loss(epsilon, hits)  # the pin's first half (the report adds the second)
    assert left < Decimal("1e-15")
    assert dec(epsilon) / 4 < loss <= dec(epsilon)  # within, and not vacuous


def _answers_pin(epsilon: Fraction, max_hits: int) -> Pin:
    out = sparse_vector(np.array([0]), 5.0, epsilon, max_hits, RNG, numeric=True)
    assert out.answer_scale is not None
    per_answer = epsilon / 3 / max_hits
    pin = laplace_pin("answer", Fraction(out.answer_scale), 1, per_answer)
    name = f"numeric sparse vector answers, ε={epsilon}, c={max_hits}: c answers at ε/(3c)"
    c = dec(max_hits)
    return Pin(name, "max loss", dec(epsilon / 3), c * pin.at_stated, c * pin.at_less)


ANSWERS = register({"sparse vector answers": lambda: _answers_pin(Fraction(1), 3)})


def test_numeric_answers_compose_to_a_third() -> None:
    assert_pinned("sparse vector answers")
