"""Private partition selection: the exact tail at the threshold τ and the exact (ε, δ).

Stated guarantee (``dpframe.mechanisms.thresholds.partition_selection.select_partitions``):
(ε, δ)-DP under adding or removing one row; τ is the smallest integer with
P(1 + Y ≥ τ) ≤ δ, Y ~ DLap(1/ε rounded up).  Two worst-case neighbours:

* a new key of count 1: shown (with its noisy count) with probability
  P(1 + Y ≥ τ), otherwise the output is exactly the neighbour's, so
  δ(ε) = P(1 + Y ≥ τ) exactly; with τ − 1 it must exceed δ;
* an existing key, count c versus c + 1: the thresholded discrete Laplace,
  whose δ(ε) is 0; with 0.1% less noise it exceeds δ.

Privacy units (``dpframe.mechanisms.thresholds.discovery_family.discovered_counts``): a unit of
up to k rows in up to g keys; scale k/ε, and a key is kept when its noisy
count reaches τ(ε/k, δ/g) + k − 1.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction
from functools import partial

import numpy as np
import pytest

from dpframe.audit.exact_divergence import dec, discrete_laplace, hockey_stick, precise
from dpframe.audit.exact_outputs import thresholded_laplace
from dpframe.mechanisms.thresholds.partition_selection import select_partitions, selection_threshold
from dpframe.noise import SecureRandom
from tests.privacy_maps.pins import LESS, Pin, assert_pinned, register

PARAMETERS = [
    (Fraction(1), Fraction(1, 10**6)),
    (Fraction(1, 10), Fraction(1, 10**8)),
    (Fraction(3), Fraction(1, 1000)),
]


def _scale(epsilon: Fraction, delta: Fraction) -> Fraction:
    empty = np.zeros(0, dtype=np.int64)
    return Fraction(select_partitions(empty, epsilon, delta, SecureRandom()).scale)


def _both(p: dict[object, Decimal], q: dict[object, Decimal], epsilon: Fraction) -> Decimal:
    return max(hockey_stick(p, q, epsilon), hockey_stick(q, p, epsilon))


def _new_key_pin(epsilon: Fraction, delta: Fraction) -> Pin:
    tau = selection_threshold(epsilon, delta)
    scale = _scale(epsilon, delta)
    absent: dict[object, Decimal] = {"hidden": Decimal(1)}
    at = _both(thresholded_laplace(1, scale, tau), absent, epsilon)
    lower = _both(thresholded_laplace(1, scale, tau - 1), absent, epsilon)
    name = f"partition selection, new key, (ε, δ)=({epsilon}, {float(delta):g}), τ={tau}"
    return Pin(name, "δ(ε); less = τ−1", dec(delta), at, lower)


def _existing_key_pin(epsilon: Fraction, delta: Fraction) -> Pin:
    tau = selection_threshold(epsilon, delta)
    scale = _scale(epsilon, delta)
    c = tau + 3

    def divergence(t: Fraction) -> Decimal:
        return _both(thresholded_laplace(c + 1, t, tau), thresholded_laplace(c, t, tau), epsilon)

    name = f"partition selection, count c→c+1, (ε, δ)=({epsilon}, {float(delta):g})"
    return Pin(name, "δ(ε)", dec(delta), divergence(scale), divergence(scale * LESS))


NEW = register({f"partition new key {e} {d}": partial(_new_key_pin, e, d) for e, d in PARAMETERS})
OLD = register(
    {f"partition existing key {e} {d}": partial(_existing_key_pin, e, d) for e, d in PARAMETERS}
)


@pytest.mark.parametrize("name", NEW + OLD)
def test_partition_selection_is_exact(name: str) -> None:
    assert_pinned(name)


@pytest.mark.parametrize(("epsilon", "delta"), PARAMETERS)
def test_threshold_tail_from_the_pmf(epsilon: Fraction, delta: Fraction) -> None:
    """P(1 + Y ≥ τ) ≤ δ < P(1 + Y ≥ τ − 1), summed over the pmf (tail bound added)."""
    tau = selection_threshold(epsilon, delta)
    noise = discrete_laplace(_scale(epsilon, delta))
    with precise():
        assert noise.tail_from(tau - 1) + noise.outside <= dec(delta)
        assert noise.tail_from(tau - 2) - noise.error * len(noise.masses) > dec(delta)


def _unit_pin(k: int, groups: int, epsilon: Fraction, delta: Fraction) -> Pin:
    """Every way one unit of ≤ k rows can create ≤ g new keys: P(some new key is shown)."""
    scale = _scale(epsilon / k, delta / groups)
    keep_at = selection_threshold(epsilon / k, delta / groups) + k - 1
    noise = discrete_laplace(scale)

    def shown(count: int, threshold: int) -> Decimal:
        return noise.tail_from(threshold - count) + noise.outside

    def worst(threshold: int) -> Decimal:
        best = Decimal(0)
        with precise():
            for parts in range(1, groups + 1):
                for counts in itertools.product(range(1, k + 1), repeat=parts):
                    if sum(counts) > k:
                        continue
                    hidden = Decimal(1)
                    for c in counts:
                        hidden *= 1 - shown(c, threshold)
                    best = max(best, 1 - hidden)
        return best

    name = f"key discovery, unit ≤{k} rows in ≤{groups} keys, (ε, δ)=({epsilon}, {float(delta):g})"
    return Pin(name, "δ (new keys); less = τ−1", dec(delta), worst(keep_at), worst(keep_at - 1))


UNITS = register(
    {
        "discovery unit k=3 g=1": lambda: _unit_pin(3, 1, Fraction(1), Fraction(1, 10**6)),
        "discovery unit k=4 g=2": lambda: _unit_pin(4, 2, Fraction(1, 2), Fraction(1, 10**6)),
    }
)


def test_unit_of_k_rows_in_one_key_is_tight() -> None:
    assert_pinned("discovery unit k=3 g=1")


def test_unit_of_k_rows_in_several_keys_is_within_delta() -> None:
    """Declared slack: the union bound over g keys is loose (a unit's rows add up to ≤ k).

    Each key is shown with probability ≤ δ/g, but the g keys share the k rows:
    for k = 4, g = 2, ε = 1/2 the worst split (2 + 2 rows) shows a key with
    probability 6.93e-7 against δ = 1e-6 (slack 1.44).
    """
    from tests.privacy_maps.pins import CASES

    pin = CASES["discovery unit k=4 g=2"]()
    assert pin.within(), pin
    assert pin.at_stated > pin.stated / 2  # more than δ/g: splitting the rows is the worst case
