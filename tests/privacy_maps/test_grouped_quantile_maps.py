"""Quantiles per group and with explicit candidates: exact output distributions.

Stated guarantee (``dpframe.mechanisms.quantiles.quantile_family``,
docs/proofs/grouped_quantiles.md):
the tie-aware utility −max(den·#{x < c} − num·n, num·n − den·#{x ≤ c}, 0) moves by at
most Δ = max(num, den − num) per row; each group's selection gets the whole ε,
calibrated to k·Δ for a privacy unit of k rows, so a unit whose rows fall k_g in
group g (and k_u in the undeclared cell) loses Σ_g (k_g/k)·ε (+ the cell's) ≤ ε.
The library's calibration is captured from real releases; the losses are exact
(:func:`dpframe.audit.exact_outputs.permute_and_flip_distribution`).
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.audit.exact_divergence import dec, laplace_max_loss, max_log_ratio
from dpframe.audit.exact_outputs import permute_and_flip_distribution
from dpframe.backends.evaluate import bucket_codes
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.quantiles import quantile_family
from dpframe.mechanisms.quantiles.quantile_family import GroupedQuantileNoise
from dpframe.mechanisms.quantiles.quantile_intervals import quantile_ends
from dpframe.mechanisms.quantiles.quantiles import (
    below_candidates,
    candidate_bins,
    quantile_utilities,
    utility_sensitivity,
)
from dpframe.mechanisms.selection.grouped_selection import permute_and_flip_rows
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import GroupedQuantile
from tests.privacy_maps.pins import LESS, Pin, assert_pinned, grid_shift, register

Dist = dict[int, Decimal]


def _loss(p: Dist, q: Dist) -> Decimal:
    return max(max_log_ratio(p, q), max_log_ratio(q, p))


def _utilities(data: tuple[int, ...], candidates: np.ndarray, q: Fraction) -> tuple[int, ...]:
    """The library's utilities of ``data`` (integers) at explicit ``candidates``."""
    bins = candidate_bins(candidates, (0.0, 4.0), ties=True)
    codes = bucket_codes(np.asarray(data, dtype=np.float64), bins.edges.tolist(), clamp=True)
    counts = np.bincount(codes, minlength=bins.bins).astype(np.float64)[None, :]
    below, upto, totals = below_candidates(counts, bins)
    return tuple(int(u) for u in quantile_utilities(below, upto, totals, q)[0])


def test_candidate_bins_count_below_and_up_to_every_candidate() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        values = rng.integers(-2, 12, 40).astype(np.float64)
        chosen = np.unique(rng.integers(0, 11, 5)).astype(np.float64)
        bins = candidate_bins(chosen, (0.0, 10.0), ties=True)
        codes = bucket_codes(values, bins.edges.tolist(), clamp=True)
        counts = np.bincount(codes, minlength=bins.bins).astype(np.float64)[None, :]
        below, upto, totals = below_candidates(counts, bins)
        clamped = np.clip(values, 0.0, 10.0)
        assert below[0].tolist() == [int(np.sum(clamped < c)) for c in chosen]
        assert upto[0].tolist() == [int(np.sum(clamped <= c)) for c in chosen]
        assert int(totals[0]) == len(values)


TIES_DELTA = {Fraction(1, 2): 1, Fraction(1, 4): 3, Fraction(9, 10): 9}


@pytest.mark.parametrize("q", list(TIES_DELTA))
def test_tie_aware_utility_moves_by_delta_and_selection_is_within_epsilon(q: Fraction) -> None:
    """All datasets of ≤ 3 values in 0..4 (ties at the candidates 0..4) and one added value."""
    candidates = np.arange(5, dtype=np.float64)
    sens = utility_sensitivity(q)
    eps = Fraction(1)
    worst_move, worst_loss = 0, Decimal(0)
    dists: dict[tuple[int, ...], Dist] = {}
    for n in range(4):
        for data in itertools.combinations_with_replacement(range(5), n):
            u = _utilities(data, candidates, q)
            for x in range(5):
                v = _utilities((*data, x), candidates, q)
                worst_move = max(worst_move, *(abs(a - b) for a, b in zip(u, v, strict=True)))
                for w in (u, v):
                    if w not in dists:
                        dists[w] = permute_and_flip_distribution(list(w), eps, sens)
                worst_loss = max(worst_loss, _loss(dists[u], dists[v]))
    assert sens == TIES_DELTA[q]
    assert worst_move == sens  # attained: no smaller Δ is valid
    assert worst_loss <= dec(eps)
    assert worst_loss > dec(eps) / 3  # not vacuous


# -- the calibration a grouped release uses, captured from the library --------------------


def _captured(
    unit_rows: int, levels: list[float], epsilon: float
) -> list[tuple[str, Fraction, int]]:
    """Each selection's (what, ε, Δ): the point's, then its interval's ends, per level."""
    calls: list[tuple[str, Fraction, int]] = []
    real = permute_and_flip_rows
    real_ends = quantile_ends

    def spy(utilities: Any, eps: Fraction, sensitivity: int, rng: Any) -> Any:
        calls.append(("point", eps, sensitivity))
        return real(utilities, eps, sensitivity, rng)

    def spy_ends(*args: Any) -> Any:
        eps, sensitivity = args[4], args[5]
        calls.append(("each end", eps, sensitivity))
        return real_ends(*args)

    frame = pd.DataFrame({"g": ["a", "b", "a", "b", "a", "b"], "x": [1.0, 2.0, 3.0, 1.0, 2.0, 0.0]})
    frame["unit"] = np.arange(len(frame)) // max(unit_rows, 1)
    session = dp.Session(epsilon=100, ledger=":memory:")
    unit = dp.PrivacyUnit("unit", max_rows=unit_rows) if unit_rows > 1 else None
    pf = session.private_frame(
        frame, bounds={"x": (0, 4)}, categories={"g": ["a", "b"]}, privacy_unit=unit
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quantile_family, "permute_and_flip_rows", spy)
        patch.setattr(quantile_family, "quantile_ends", spy_ends)
        pf.groupby("g")["x"].quantile(levels, epsilon=epsilon, candidates=[0, 1, 2, 3, 4])
    return calls


@pytest.mark.parametrize("k", [1, 2, 3])
def test_each_group_gets_the_whole_epsilon_calibrated_to_the_units_rows(k: int) -> None:
    """Per level: the point at half its ε, each end of its interval at a quarter (sum: ε)."""
    half, quarter = Fraction(1, 2), Fraction(1, 4)
    assert _captured(k, [0.5], 1.0) == [("point", half, k), ("each end", quarter, k)]
    assert _captured(k, [0.25, 0.9], 2.0) == [
        ("point", half, 3 * k),
        ("each end", quarter, 3 * k),
        ("point", half, 9 * k),
        ("each end", quarter, 9 * k),
    ]


def test_a_unit_spread_over_groups_loses_at_most_epsilon() -> None:
    """Two groups, every dataset of ≤ 2 values per group in 0..4, plus a unit of 2 rows
    anywhere (both in one group, or one in each): Σ_g loss_g ≤ ε at calibration 2Δ."""
    k, q, eps = 2, Fraction(1, 2), Fraction(1)
    sens = utility_sensitivity(q) * k  # what the release passes (captured above)
    candidates = np.arange(5, dtype=np.float64)
    utilities: dict[tuple[int, ...], tuple[int, ...]] = {}
    dists: dict[tuple[int, ...], Dist] = {}
    losses: dict[tuple[tuple[int, ...], tuple[int, ...]], Decimal] = {}

    def moved(data: tuple[int, ...], added: tuple[int, ...]) -> Decimal:
        """The exact loss of one group's selection when ``added`` joins its ``data``."""
        ends = []
        for rows in (data, tuple(sorted((*data, *added)))):
            if rows not in utilities:
                utilities[rows] = _utilities(rows, candidates, q)
            ends.append(utilities[rows])
        pair = (ends[0], ends[1])
        if pair not in losses:
            for u in pair:
                if u not in dists:
                    dists[u] = permute_and_flip_distribution(list(u), eps, sens)
            losses[pair] = _loss(dists[pair[0]], dists[pair[1]])
        return losses[pair]

    small = [d for n in range(3) for d in itertools.combinations_with_replacement(range(5), n)]
    worst = Decimal(0)
    for a, b in itertools.product(small, repeat=2):
        for x, y in itertools.product(range(5), repeat=2):
            for into_a, into_b in (((x, y), ()), ((x,), (y,)), ((), (x, y))):
                worst = max(worst, moved(a, into_a) + moved(b, into_b))
    assert worst <= dec(eps)
    assert worst > dec(eps) / 2  # not vacuous


# -- pins: the tightest pairs, per group and for the undeclared cell ----------------------


def _tight(k: int, shift: int) -> tuple[list[int], list[int]]:
    return [0] * k, [shift] + [-shift] * (k - 1)


def _pf_loss(eps: Fraction, shift: int, sensitivity: int, k: int = 40) -> Decimal:
    u, v = _tight(k, shift)
    return _loss(
        permute_and_flip_distribution(u, eps, sensitivity),
        permute_and_flip_distribution(v, eps, sensitivity),
    )


def _split_pin() -> Pin:
    """A unit of 2 rows, one in each of two groups: two selections calibrated to 2Δ, each
    moved by Δ (the tightest utility pair): the losses add up to ε."""
    eps, q, k = Fraction(1), Fraction(1, 2), 2
    sens = utility_sensitivity(q) * k

    def loss(e: Fraction) -> Decimal:
        return 2 * _pf_loss(e, utility_sensitivity(q), sens)

    name = "grouped quantile, unit of 2 rows split over 2 groups, ε=1"
    return Pin(name, "max loss", dec(eps), loss(eps), loss(eps / LESS))


def _undeclared_noise(k: int, epsilon: Fraction) -> GroupedQuantileNoise:
    key = GroupKey("g", Col("g"), ("a", "b"))
    node = GroupedQuantile(
        plan=Source("d", unit_rows=k),
        privacy=PrivacyRequest(epsilon=epsilon),
        expr=Col("x"),
        bounds=(0.0, 4.0),
        levels=(Fraction(1, 2),),
        by=(key,),
    )
    planned: GroupedQuantileNoise = quantile_family.GroupedQuantileFamily().privacy_map(
        node, NoiseAllocation("laplace", epsilon)
    )
    return planned


def _mixed_pin() -> Pin:
    """A unit of 2 rows, one in a group and one undeclared: the selection's loss plus the
    undeclared count's (Laplace of scale 2/ε, a shift of one row) add up to ε."""
    eps, q, k = Fraction(1), Fraction(1, 2), 2
    grid, _, spec = _undeclared_noise(k, eps).undeclared.noise
    assert grid == 1

    def loss(e: Fraction) -> Decimal:
        count = laplace_max_loss(spec.parameter * eps / e, 1)
        return _pf_loss(e, utility_sensitivity(q), utility_sensitivity(q) * k) + dec(count)

    name = "grouped quantile, unit of 2 rows: one in a group, one undeclared, ε=1"
    return Pin(name, "max loss", dec(eps), loss(eps), loss(eps / LESS))


PINS = register(
    {
        "grouped quantile, unit split over 2 groups": _split_pin,
        "grouped quantile, unit in a group and the undeclared cell": _mixed_pin,
    }
)


@pytest.mark.parametrize("name", PINS)
def test_grouped_quantile_maps_are_tight_at_epsilon(name: str) -> None:
    assert_pinned(name)


@pytest.mark.parametrize(
    ("k", "epsilon"),
    [(1, Fraction(1)), (2, Fraction(1)), (3, Fraction(1, 1000)), (7, Fraction(1, 10**6))],
)
def test_the_undeclared_cell_loses_its_share_of_a_unit(k: int, epsilon: Fraction) -> None:
    """k_u of a unit's k rows undeclared move the rounded count by at most ⌊k_u/g⌋ + 1 grid
    units (``grid_shift``): its loss is at most (k_u/k)·ε for every k_u, also with a grid."""
    planned = _undeclared_noise(k, epsilon).undeclared
    grid, _, spec = planned.noise
    assert planned.allocation == NoiseAllocation("laplace", epsilon)  # the whole allocation
    for k_u in range(1, k + 1):
        loss = laplace_max_loss(spec.parameter, grid_shift(k_u, grid))
        assert loss <= epsilon * k_u / k
