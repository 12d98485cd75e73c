"""Permute-and-flip, quantiles and the pure ε of a zCDP allocation: exact output distributions.

Stated guarantee (``dpframe.mechanisms.selection.selection.permute_and_flip``): ε-DP
when every utility moves by at most Δ.  The exact distribution is computed
by :func:`dpframe.audit.exact_outputs.permute_and_flip_distribution`; that the
library samples this distribution is the statistical test
``tests/test_selection.py::test_permute_and_flip_matches_its_exact_distribution``.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpframe.audit.exact_divergence import dec, max_log_ratio, renyi
from dpframe.audit.exact_outputs import permute_and_flip_distribution
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.quantiles import quantiles
from dpframe.noise import SecureRandom
from tests.privacy_maps.pins import ALPHAS, LESS, Pin, assert_pinned, register


def _loss(p: dict[int, Decimal], q: dict[int, Decimal]) -> Decimal:
    return max(max_log_ratio(p, q), max_log_ratio(q, p))


def _by_orders(utilities: list[int], epsilon: Fraction) -> list[Decimal]:
    """The same distribution by enumerating the visiting orders (a second exact method)."""
    best = max(utilities)
    accept = [(-dec(epsilon) * (best - u) / 2).exp() for u in utilities]
    out = [Decimal(0)] * len(utilities)
    orders = list(itertools.permutations(range(len(utilities))))
    for order in orders:
        stay = Decimal(1)
        for r in order:
            out[r] += stay * accept[r] / len(orders)
            stay *= 1 - accept[r]
    return list(out)


def test_poisson_binomial_formula_matches_enumerating_the_orders() -> None:
    utilities = [10, 9, 7, 4, 0]
    fast = permute_and_flip_distribution(utilities, Fraction(1), 1)
    slow = _by_orders(utilities, Fraction(1))
    for r, mass in fast.items():
        assert abs(mass - slow[r]) < Decimal("1e-25")


def _tight_pair(k: int, sensitivity: int) -> tuple[list[int], list[int]]:
    """All utilities equal, versus candidate 0 up by Δ and every other down by Δ."""
    return [0] * k, [sensitivity] + [-sensitivity] * (k - 1)


def _pf_pin(epsilon: Fraction, sensitivity: int, k: int = 30) -> Pin:
    u, v = _tight_pair(k, sensitivity)

    def loss(eps: Fraction) -> Decimal:
        return _loss(
            permute_and_flip_distribution(u, eps, sensitivity),
            permute_and_flip_distribution(v, eps, sensitivity),
        )

    name = f"permute-and-flip, ε={epsilon}, Δ={sensitivity}, {k} candidates"
    return Pin(name, "max loss", dec(epsilon), loss(epsilon), loss(epsilon / LESS))


PF = register(
    {
        "permute-and-flip, ε=1, Δ=1": lambda: _pf_pin(Fraction(1), 1),
        "permute-and-flip, ε=1/2, Δ=3": lambda: _pf_pin(Fraction(1, 2), 3),
        "permute-and-flip, ε=2, Δ=2": lambda: _pf_pin(Fraction(2), 2, k=50),
    }
)


@pytest.mark.parametrize("name", PF)
def test_permute_and_flip_is_tight_at_epsilon(name: str) -> None:
    assert_pinned(name)


def test_permute_and_flip_small_utilities_exhaustively() -> None:
    """Every 3-candidate utility vector in {0,1,2}³ and every move in {−1,0,1}³: loss ≤ ε."""
    eps = Fraction(1)
    cache: dict[tuple[int, ...], dict[int, Decimal]] = {}

    def dist(u: tuple[int, ...]) -> dict[int, Decimal]:
        if u not in cache:
            cache[u] = permute_and_flip_distribution(list(u), eps, 1)
        return cache[u]

    worst = Decimal(0)
    for u in itertools.product(range(3), repeat=3):
        for move in itertools.product((-1, 0, 1), repeat=3):
            v = tuple(a + b for a, b in zip(u, move, strict=True))
            worst = max(worst, _loss(dist(u), dist(v)))
    assert worst <= dec(eps)
    assert worst > dec(eps) / 2  # not vacuous


# -- zCDP: the ε a selection gets from a ρ allocation ----------------------------------------


@pytest.mark.parametrize("rho", [Fraction(1, 2), Fraction(1, 1000), Fraction(3, 7)])
def test_pure_epsilon_of_rho_is_tight(rho: Fraction) -> None:
    """ε²/2 ≤ ρ (Bun & Steinke 2016, Prop. 1.4: ε-DP is ε²/2-zCDP), with ε within 2⁻⁴⁰."""
    eps = pure_epsilon(NoiseAllocation("gaussian", rho), Fraction(1, 2))
    assert eps * eps / 2 <= rho
    assert (eps / LESS) ** 2 / 2 > rho


def _pf_zcdp_pin() -> Pin:
    rho = Fraction(1, 8)
    eps = pure_epsilon(NoiseAllocation("gaussian", rho), Fraction(1, 2))
    u, v = _tight_pair(30, 1)

    def curve(e: Fraction) -> Decimal:
        p = permute_and_flip_distribution(u, e, 1)
        q = permute_and_flip_distribution(v, e, 1)
        return max(max(renyi(p, q, a), renyi(q, p, a)) / dec(a) for a in ALPHAS[:8])

    # Declared slack: ε-DP implies ε²/2-zCDP for every mechanism (Bun & Steinke 2016), but
    # on permute-and-flip's tightest pure-DP pair the exact curve is about 6.5 times lower;
    # the pure-DP pin above is the tight one, so this pin is reported, not tightened.
    name = "permute-and-flip under zCDP, ρ=1/8, 30 candidates"
    at = curve(eps)
    return Pin(name, "max_α D_α/α", dec(rho), at, curve(eps / LESS), note="ε²/2 not tight")


ZCDP = register({"permute-and-flip, zCDP ρ=1/8": _pf_zcdp_pin})


def test_permute_and_flip_renyi_within_rho() -> None:
    pin = _pf_zcdp_pin()
    assert pin.within(), pin
    assert pin.at_stated > dec(Fraction(1, 8)) / 10  # not vacuous


# -- quantiles: the utility's sensitivity and the selection -----------------------------------

Call = tuple[np.ndarray[Any, Any], Fraction, int]


def _capture(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    calls: list[Call] = []

    def fake(utilities: np.ndarray[Any, Any], epsilon: Fraction, sensitivity: int, _: Any) -> int:
        calls.append((np.asarray(utilities), epsilon, sensitivity))
        return 0

    monkeypatch.setattr(quantiles, "permute_and_flip", fake)
    return calls


def _utilities(
    calls: list[Call], data: tuple[int, ...], edges: range, q: Fraction
) -> tuple[tuple[int, ...], int]:
    values = np.array(data, dtype=np.int64)
    below = np.array([int(np.sum(values < e)) for e in edges], dtype=np.int64)
    quantiles.select_quantile(below, len(values), q, Fraction(1), SecureRandom())
    utilities, _, sensitivity = calls.pop()
    return tuple(int(u) for u in utilities), sensitivity


# A row moves #{x < e}·den by 0 or den and q·n·den by num, so each utility moves by −num or
# den − num: at most max(num, den − num), the Δ the library passes (tight: it is attained).
QUANTILE_DELTA = {Fraction(1, 2): 1, Fraction(1, 4): 3, Fraction(3, 4): 3, Fraction(1, 10): 9}


@pytest.mark.parametrize("q", list(QUANTILE_DELTA))
def test_quantile_utility_sensitivity_and_selection(
    q: Fraction, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All datasets of ≤ 3 values in 0..4 and one added value: utility moves and the exact loss."""
    calls = _capture(monkeypatch)
    edges = range(6)
    eps = Fraction(1)
    worst_move, worst_loss = 0, Decimal(0)
    dists: dict[tuple[int, ...], dict[int, Decimal]] = {}
    for n in range(4):
        for data in itertools.combinations_with_replacement(range(5), n):
            u, sens = _utilities(calls, data, edges, q)
            for x in range(5):
                v, _ = _utilities(calls, (*data, x), edges, q)
                worst_move = max(worst_move, *(abs(a - b) for a, b in zip(u, v, strict=True)))
                for w in (u, v):
                    if w not in dists:
                        dists[w] = permute_and_flip_distribution(list(w), eps, sens)
                worst_loss = max(worst_loss, _loss(dists[u], dists[v]))
    assert sens == QUANTILE_DELTA[q] == quantiles.utility_sensitivity(q)
    assert worst_move == sens  # the stated Δ is attained: no smaller one is valid
    assert worst_loss <= dec(eps)
