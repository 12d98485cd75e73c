"""``k="auto"`` in a join on another key: its choice of k, pinned exactly.

Stated guarantee (docs/proofs/private_joins.md, "k chosen privately"): the
rank table (one row per side row whose key is present, its side and its rank
within its key value) loses at most m_L + m_R rows when one person is removed
(m_L of side "left", m_R of side "right"), so the grouped quantile by side is
calibrated to Δ·(m_L + m_R) at ``bound_epsilon`` (Δ the utility's sensitivity
at the level), and a person whose m_L and m_R rows move the two groups'
utilities by Δ·m_L and Δ·m_R loses at most ε_b in all.  The calibration is
captured from real ``merge(k="auto")`` calls; the losses are exact
(:func:`dpframe.audit.exact_outputs.permute_and_flip_distribution`), at the
tightest utility pair, and over ε_b with 0.1% less noise.

The interval ends of the choice are pinned too: each end is the exponential
mechanism at ε_b/4 over a ladder of the candidates (its distribution
computed here exactly, independently of the library's sampler), so the whole
choice (point and both ends) costs exactly ε_b; the candidate ladder
(:data:`AUTO_K_CANDIDATES`) and the ends' ladder around each point are
pinned as the code states them.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.verbs.joins import AUTO_K_CANDIDATES, AUTO_K_LEVEL, AUTO_K_MOST
from dpframe.audit.exact_divergence import dec, max_log_ratio, precise
from dpframe.audit.exact_outputs import permute_and_flip_distribution
from dpframe.mechanisms.quantiles import quantile_family
from dpframe.mechanisms.quantiles.quantile_intervals import ladder, quantile_ends, tilt
from dpframe.mechanisms.quantiles.quantiles import utility_sensitivity
from dpframe.mechanisms.selection.grouped_selection import permute_and_flip_rows
from dpframe.plan.joins import id_join
from dpframe.plan.nodes import lineage
from tests.privacy_maps.pins import LESS, Pin, assert_pinned, register

LEVEL = Fraction(AUTO_K_LEVEL).limit_denominator(1000)
#: (m_L, m_R): the sides' row limits
LIMITS = [(1, 1), (1, 2), (3, 1), (2, 5)]


def _frames(session: dp.Session, m_l: int, m_r: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(m_l * 10 + m_r)
    n = 60
    hh = rng.integers(0, 10, n).astype(float)
    left = pd.DataFrame({"pid": np.repeat(np.arange(n), m_l), "hh": np.repeat(hh, m_l)})
    right = pd.DataFrame({"id": np.repeat(np.arange(n), m_r), "hh": np.repeat(hh, m_r)})
    a = session.private_frame(left, privacy_unit=dp.PrivacyUnit("pid", m_l, id_space="p"))
    b = session.private_frame(right, privacy_unit=dp.PrivacyUnit("id", m_r, id_space="p"))
    return a, b


def _captured(m_l: int, m_r: int, epsilon: float) -> list[tuple[str, Fraction, int]]:
    """(what, ε, sensitivity) of every selection a real ``merge(k="auto")`` makes: the
    point's (permute-and-flip) and its interval ends' (each end at its own ε)."""
    calls: list[tuple[str, Fraction, int]] = []

    def point(utilities: Any, eps: Fraction, sensitivity: int, rng: Any) -> Any:
        calls.append(("point", eps, sensitivity))
        return permute_and_flip_rows(utilities, eps, sensitivity, rng)

    def ends(*args: Any) -> Any:
        calls.append(("ends", args[4], args[5]))
        return quantile_ends(*args)

    session = dp.Session(epsilon=100, ledger=":memory:")
    a, b = _frames(session, m_l, m_r)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quantile_family, "permute_and_flip_rows", point)
        patch.setattr(quantile_family, "quantile_ends", ends)
        a.merge(b, on="hh", k="auto", bound_epsilon=epsilon)
    assert session.spent == dp.Budget(Fraction(epsilon))  # one charge for both sides
    return calls


@pytest.mark.parametrize(("m_l", "m_r"), LIMITS)
def test_the_rank_table_counts_both_sides_rows_of_a_person(m_l: int, m_r: int) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    a, b = _frames(session, m_l, m_r)
    for how in ("inner", "left", "semi"):
        source, _ = id_join(
            a._handle.plan,
            a._handle.schema,
            b._handle.plan,
            b._handle.schema,
            how=how,
            on="hh",
            rows="per_key",
            k_left=5,
            k_right=5,
        )
        assert source.unit_rows == m_l + m_r and source.unit_column == ""
    assert lineage(a._handle.plan)[0].unit_rows == m_l


@pytest.mark.parametrize(("m_l", "m_r"), LIMITS)
def test_the_choice_is_calibrated_to_both_sides_rows(m_l: int, m_r: int) -> None:
    sens = utility_sensitivity(LEVEL)
    assert sens == 999
    calibration = sens * (m_l + m_r)
    eps = Fraction(1, 2)
    # one selection per level for both groups (each group's whole share), its ends likewise:
    # half of ε_b to the point, a quarter to each end (docs/proofs/grouped_quantiles.md)
    assert _captured(m_l, m_r, float(eps)) == [
        ("point", eps / 2, calibration),
        ("ends", eps / 4, calibration),
    ]


def _loss(eps: Fraction, shift: int, sensitivity: int, n: int = 40) -> Decimal:
    """The exact loss of one selection between the tightest pair of utility vectors."""
    u = [0] * n
    v = [shift] + [-shift] * (n - 1)
    p = permute_and_flip_distribution(u, eps, sensitivity)
    q = permute_and_flip_distribution(v, eps, sensitivity)
    return max(max_log_ratio(p, q), max_log_ratio(q, p))


def _pin(m_l: int, m_r: int) -> Pin:
    """A person of m_L left rows and m_R right rows: the left selection's utilities move by
    Δ·m_L, the right one's by Δ·m_R, both calibrated to Δ·(m_L + m_R) (captured)."""
    eps = Fraction(1, 2)
    [(_, captured_eps, calibration), _] = _captured(m_l, m_r, float(eps))
    sens = utility_sensitivity(LEVEL)

    def loss(e: Fraction) -> Decimal:
        return _loss(e, sens * m_l, calibration) + _loss(e, sens * m_r, calibration)

    name = f"k='auto' choice (its point), m_L={m_l}, m_R={m_r}, ε_b=1/2"
    note = "the point's share of ε_b; the ends are the quantile family's (same calibration)"
    at = loss(captured_eps)
    return Pin(name, "max loss", dec(captured_eps), at, loss(captured_eps / LESS), note=note)


def _builder(m_l: int, m_r: int) -> Callable[[], Pin]:
    return lambda: _pin(m_l, m_r)


PINS = register({f"k='auto', m_L={a}, m_R={b}": _builder(a, b) for a, b in LIMITS})


@pytest.mark.parametrize("name", PINS)
def test_the_auto_k_choice_is_tight_at_its_epsilon(name: str) -> None:
    assert_pinned(name)


# -- the interval ends of the choice ---------------------------------------------------


def exponential_distribution(
    weights: list[int], epsilon: Fraction, sensitivity: int
) -> dict[int, Decimal]:
    """P(position j) ∝ exp(ε·w_j/(2Δ)): the exponential mechanism, exactly (60 digits)."""
    top = max(weights)
    with precise():
        factor = dec(epsilon) / (2 * sensitivity)
        masses = [(factor * (w - top)).exp() for w in weights]
        total = sum(masses, Decimal(0))
        return {j: m / total for j, m in enumerate(masses)}


def end_loss(eps: Fraction, shift: int, sensitivity: int, sign: int) -> Decimal:
    """The exact loss of one end between the tightest pair of ladder utilities.

    Two ladder positions with the public tilt of the library (``tilt``: −λ·j
    for the lower end, +λ·j for the upper one); the neighbour moves the
    dominant position up by ``shift`` and the other down by ``shift``; the
    other position lies far below (60·2Δ/ε in utility), where the loss of
    the exponential mechanism approaches ε·shift/Δ.
    """
    lam = tilt(eps, sensitivity)
    far = -((60 * 2 * sensitivity) // eps.numerator * eps.denominator) - 2 * lam
    u = [0, far]
    v = [shift, far - shift]
    tilted = [[w + sign * lam * j for j, w in enumerate(x)] for x in (u, v)]
    p = exponential_distribution(tilted[0], eps, sensitivity)
    q = exponential_distribution(tilted[1], eps, sensitivity)
    return max(max_log_ratio(p, q), max_log_ratio(q, p))


def _ends_pin(m_l: int, m_r: int) -> Pin:
    """Each end of both groups' intervals: a person moves the left group's ladder utilities
    by Δ·m_L and the right one's by Δ·m_R, both ends calibrated to Δ·(m_L + m_R) at ε_b/4."""
    eps = Fraction(1, 2)
    [_, (_, end_eps, calibration)] = _captured(m_l, m_r, float(eps))
    sens = utility_sensitivity(LEVEL)

    def loss(e: Fraction) -> Decimal:
        return sum(
            (end_loss(e, sens * m, calibration, sign) for m in (m_l, m_r) for sign in (-1, 1)),
            Decimal(0),
        )

    name = f"k='auto' interval ends (both), m_L={m_l}, m_R={m_r}, ε_b=1/2"
    note = "the two ends' share of ε_b (ε_b/4 each), exact exponential mechanism"
    return Pin(name, "max loss", dec(2 * end_eps), loss(end_eps), loss(end_eps / LESS), note=note)


def _whole_pin(m_l: int, m_r: int) -> Pin:
    """The whole choice (the point and both ends of both groups) against ε_b."""
    eps = Fraction(1, 2)
    [(_, point_eps, calibration), (_, end_eps, _)] = _captured(m_l, m_r, float(eps))
    sens = utility_sensitivity(LEVEL)

    def loss(scale: Fraction) -> Decimal:
        point = _loss(point_eps / scale, sens * m_l, calibration) + _loss(
            point_eps / scale, sens * m_r, calibration
        )
        ends = sum(
            (
                end_loss(end_eps / scale, sens * m, calibration, sign)
                for m in (m_l, m_r)
                for sign in (-1, 1)
            ),
            Decimal(0),
        )
        return point + ends

    name = f"k='auto' choice, point and ends, m_L={m_l}, m_R={m_r}, ε_b=1/2"
    note = "point ε_b/2 + each end ε_b/4 (captured), exact losses"
    return Pin(name, "max loss", dec(eps), loss(Fraction(1)), loss(LESS), note=note)


def _ends_builder(m_l: int, m_r: int) -> Callable[[], Pin]:
    return lambda: _ends_pin(m_l, m_r)


def _whole_builder(m_l: int, m_r: int) -> Callable[[], Pin]:
    return lambda: _whole_pin(m_l, m_r)


END_PINS = register(
    {
        **{f"k='auto' ends, m_L={a}, m_R={b}": _ends_builder(a, b) for a, b in LIMITS},
        **{f"k='auto' whole, m_L={a}, m_R={b}": _whole_builder(a, b) for a, b in LIMITS},
    }
)


@pytest.mark.parametrize("name", END_PINS)
def test_the_auto_k_interval_ends_and_the_whole_choice_are_tight(name: str) -> None:
    assert_pinned(name)


def test_the_exact_exponential_mechanism_is_the_librarys_sampler() -> None:
    """The distribution pinned above is the one ``tilted_selection`` samples (a check, not a
    pin): 3 ladder positions, 30,000 draws, each frequency within 6 standard errors."""
    from dpframe.mechanisms.quantiles.quantile_intervals import tilted_selection
    from dpframe.noise import SecureRandom

    eps, sens, draws = Fraction(1), 2, 30_000
    weights = [0, -3, -1]
    exact = exponential_distribution(weights, eps, sens)
    rows = np.tile(np.array(weights, dtype=np.int64), (draws, 1))
    valid = np.ones(rows.shape, dtype=np.bool_)
    picked = tilted_selection(rows, valid, eps, sens, SecureRandom())
    off = exponential_distribution(weights, eps * Fraction(7, 10), sens)  # 30% less ε
    caught = False
    for j, p in exact.items():
        share = float(p)
        se = (share * (1 - share) / draws) ** 0.5
        assert abs(float((picked == j).mean()) - share) <= 6 * se
        caught = caught or abs(float(off[j]) - share) >= 12 * se
    assert caught  # a sampler 30% off would be 12 standard errors away at some position


def test_the_candidate_ladder_is_the_stated_one() -> None:
    """1 to 10, then round(10·1.25^i) capped at AUTO_K_MOST: 21 public candidates."""
    assert AUTO_K_MOST == 100 and AUTO_K_LEVEL == 0.999
    stated = (*range(1, 11), *(12, 16, 20, 24, 31, 38, 48, 60, 75, 93, 100))
    assert stated == AUTO_K_CANDIDATES
    steps = np.diff(np.array(stated[9:], dtype=float)) / np.array(stated[9:-1], dtype=float)
    # about a quarter: 20% (10 → 12) to 33% (12 → 16, from round(12.5) = 12); the cap 7.5%
    assert steps.max() <= 1 / 3 + 1e-12 and steps[:-1].min() >= 0.2


@pytest.mark.parametrize(
    ("point", "ends"),
    [
        # index 0: 0 (0 − 2^i clipped), 0, 1, 2, 4, 8, 16, 20 (32 clipped)
        (1, (1, 2, 3, 5, 9, 48, 100)),
        # index 11: 0 (11 − 32, 11 − 16 clipped), 3, 7, 9, 10, 11, 12, 13, 15, 19, 20 (27, 43)
        (16, (1, 4, 8, 10, 12, 16, 20, 24, 38, 93, 100)),
        # index 20: 0 (20 − 32 clipped), 4, 12, 16, 18, 19, 20 (and 20 + 2^i clipped)
        (100, (1, 5, 20, 48, 75, 93, 100)),
    ],
)
def test_the_interval_ends_are_on_the_stated_ladder(point: int, ends: tuple[int, ...]) -> None:
    """The ends' ladder around a chosen k: candidate positions p ± 2^i (i = 0…5), clipped to
    the 21 candidates (a repeat of the previous index is no position of its own)."""
    at = AUTO_K_CANDIDATES.index(point)
    indices, valid = ladder(np.array([at]), len(AUTO_K_CANDIDATES))
    assert indices.shape == (1, 13)
    values = tuple(AUTO_K_CANDIDATES[i] for i, ok in zip(indices[0], valid[0], strict=True) if ok)
    assert values == ends
