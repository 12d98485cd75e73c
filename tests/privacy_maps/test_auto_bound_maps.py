"""``max_rows="auto"`` in a join on the ID: its choice of the bound, pinned exactly.

Stated guarantee (docs/proofs/private_joins.md; ``dpframe.api.verbs.joins``):
on the rows-per-ID table (one row per person: removing a person removes one
row), a count of the people at :data:`AUTO_COUNT_SHARE` of ``bound_epsilon``
(sensitivity 1), then the quantile at :func:`auto_level` of that count
(at least 0.99) with the rest, by the quantile family: the point by
permute-and-flip at half of the rest, each end of its 95% interval by the
exponential mechanism at a quarter, all calibrated to Δ = max(num, den − num)
of the level times 1 row.  The count's noise, the level, the calibration and
the candidates are captured from real ``merge(max_rows="auto")`` calls; the
losses are exact (the count's: ε/scale of a sensitivity-1 count; the
selections' at the tightest utility pairs, the helpers of
``test_key_join_auto_maps``), within ``bound_epsilon`` and over it with 0.1%
less noise.
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
from dpframe.api.verbs import joins as join_verbs
from dpframe.api.verbs.joins import AUTO_COUNT_SHARE, auto_level
from dpframe.api.verbs.quantiles import quantile_node
from dpframe.audit.exact_divergence import dec
from dpframe.mechanisms.quantiles import quantile_family
from dpframe.mechanisms.quantiles.quantile_intervals import quantile_ends
from dpframe.mechanisms.quantiles.quantiles import utility_sensitivity
from dpframe.mechanisms.selection.grouped_selection import permute_and_flip_rows
from tests.privacy_maps.pins import LESS, Pin, assert_pinned, register
from tests.privacy_maps.test_key_join_auto_maps import _loss, end_loss

#: (visits' rows per person, people's rows per person): the join gives at most their product
LIMITS = [(5, 1), (3, 2), (2, 5)]


def _frames(session: dp.Session, m_v: int, m_p: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(m_v * 10 + m_p)
    visits = pd.DataFrame({"pid": rng.integers(0, 40, 150)})
    people = pd.DataFrame({"id": np.repeat(np.arange(40), m_p)})
    a = session.private_frame(visits, privacy_unit=dp.PrivacyUnit("pid", m_v, id_space="p"))
    b = session.private_frame(people, privacy_unit=dp.PrivacyUnit("id", m_p, id_space="p"))
    return a, b


def _captured(m_v: int, m_p: int, epsilon: float) -> tuple[list[tuple[str, Fraction, int]], Any]:
    """(what, ε, Δ) of every selection a real ``merge(max_rows="auto")`` makes, and the
    candidates it passed to the quantile; the first entry is ("level", the quantile's
    level, its Δ)."""
    calls: list[tuple[str, Fraction, int]] = []
    seen: list[Any] = []
    levels: list[Fraction] = []

    def level(people: float) -> Fraction:
        levels.append(auto_level(people))
        return levels[-1]

    def point(utilities: Any, eps: Fraction, sensitivity: int, rng: Any) -> Any:
        calls.append(("point", eps, sensitivity))
        return permute_and_flip_rows(utilities, eps, sensitivity, rng)

    def ends(*args: Any) -> Any:
        calls.append(("ends", args[4], args[5]))
        return quantile_ends(*args)

    real_node = quantile_node  # what the verb calls (patched there below)

    def node(*args: Any) -> Any:
        seen.append(args[3])
        return real_node(*args)

    session = dp.Session(epsilon=100, ledger=":memory:")
    a, b = _frames(session, m_v, m_p)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quantile_family, "permute_and_flip_rows", point)
        patch.setattr(quantile_family, "quantile_ends", ends)
        patch.setattr(join_verbs, "quantile_node", node)
        patch.setattr(join_verbs, "auto_level", level)
        a.merge(b, left_on="pid", right_on="id", max_rows="auto", bound_epsilon=epsilon)
    assert session.spent == dp.Budget(Fraction(epsilon))  # the two charges: ε_b in all
    count_eps = Fraction(str(epsilon)) * AUTO_COUNT_SHARE
    ledger = session.ledger
    assert list(ledger["epsilon"]) == [float(count_eps), float(Fraction(str(epsilon)) - count_eps)]
    assert str(ledger["query"].iloc[0]).startswith("count() of the rows per ID")
    assert len(seen) == 2 and len(levels) == 1  # the refusal check, then the quantile
    calls.insert(0, ("level", levels[0], utility_sensitivity(levels[0])))
    return calls, seen[1]


def _count_scale(epsilon: float) -> float:
    """The noise scale of the count a real ``merge(max_rows="auto")`` releases."""
    scales: list[float] = []
    session = dp.Session(epsilon=100, ledger=":memory:")
    a, b = _frames(session, 2, 1)
    real_run = session.run

    def run(node: Any) -> Any:
        answer = real_run(node)
        if not scales:
            scales.append(float(answer.scale))
        return answer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(session, "run", run)  # the count is the first release
        a.merge(b, left_on="pid", right_on="id", max_rows="auto", bound_epsilon=epsilon)
    return scales[0]


def test_the_count_of_people_is_calibrated_to_one_row_per_person() -> None:
    eps = Fraction(1, 2)
    assert _count_scale(float(eps)) == pytest.approx(float(1 / (eps * AUTO_COUNT_SHARE)))


@pytest.mark.parametrize(("m_v", "m_p"), LIMITS)
def test_the_bound_is_calibrated_to_one_row_per_person(m_v: int, m_p: int) -> None:
    eps = Fraction(1, 2)
    rest = eps * (1 - AUTO_COUNT_SHARE)
    calls, candidates = _captured(m_v, m_p, float(eps))
    level = calls[0][1]
    sens = utility_sensitivity(level)
    assert level >= Fraction(99, 100) and sens >= 99
    assert calls == [("level", level, sens), ("point", rest / 2, sens), ("ends", rest / 4, sens)]
    assert candidates == list(range(1, m_v * m_p + 1))  # 1 … the product of the limits


@pytest.mark.parametrize(
    ("people", "level"),
    [
        (0, Fraction(99, 100)),
        (40, Fraction(99, 100)),
        (500, Fraction(99, 100)),
        (1000, Fraction(199, 200)),
        (20_000, Fraction(3999, 4000)),
        (10**7, Fraction(1)),  # 1 − 5/n within 10^-6 of 1: the largest rows per person
    ],
)
def test_the_level_leaves_about_five_people_above_the_bound(people: int, level: Fraction) -> None:
    assert auto_level(people + 0.7) == level


def test_beyond_ten_thousand_the_candidates_are_the_integer_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over ``_LISTED`` possible bounds the quantile gets no list (its integer grid)."""
    monkeypatch.setattr(join_verbs, "_LISTED", 9)  # the product of (5, 2) is 10 > 9
    assert _captured(5, 2, 0.5)[1] is None
    monkeypatch.setattr(join_verbs, "_LISTED", 10)
    assert _captured(5, 2, 0.5)[1] == list(range(1, 11))


def _pin(m_v: int, m_p: int, part: str) -> Pin:
    """A person moves the count by 1 and the rows-per-ID utilities by Δ (one row); the
    count at ε_b/10, the point at 9ε_b/20 and each end at 9ε_b/40, calibrated to Δ (captured)."""
    eps = Fraction(1, 2)
    calls, _ = _captured(m_v, m_p, float(eps))
    [(_, _, shift), (_, point_eps, calibration), (_, end_eps, _)] = calls
    count_scale = Fraction(_count_scale(float(eps))).limit_denominator(10**9)

    def loss(scale: Fraction) -> Decimal:
        point = _loss(point_eps / scale, shift, calibration)
        ends = end_loss(end_eps / scale, shift, calibration, -1) + end_loss(
            end_eps / scale, shift, calibration, 1
        )
        count = dec(1 / (count_scale * scale))  # a count of sensitivity 1: loss Δ/b
        return {"point": point, "ends": ends, "whole": count + point + ends}[part]

    stated = {"point": point_eps, "ends": 2 * end_eps, "whole": eps}[part]
    name = f"max_rows='auto' choice ({part}), limits {m_v}×{m_p}, ε_b=1/2"
    note = "rows per ID: one row per person; whole = the count at ε_b/10 + the quantile's parts"
    return Pin(name, "max loss", dec(stated), loss(Fraction(1)), loss(LESS), note=note)


def _builder(m_v: int, m_p: int, part: str) -> Callable[[], Pin]:
    return lambda: _pin(m_v, m_p, part)


PINS = register(
    {
        f"max_rows='auto' {part}, {a}x{b}": _builder(a, b, part)
        for a, b in LIMITS
        for part in ("point", "ends", "whole")
    }
)


@pytest.mark.parametrize("name", PINS)
def test_the_auto_bound_is_tight_at_its_epsilon(name: str) -> None:
    assert_pinned(name)
