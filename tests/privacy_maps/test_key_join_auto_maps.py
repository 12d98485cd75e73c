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
from dpframe.api.verbs.joins import AUTO_K_LEVEL
from dpframe.audit.exact_divergence import dec, max_log_ratio
from dpframe.audit.exact_outputs import permute_and_flip_distribution
from dpframe.mechanisms.quantiles import quantile_family
from dpframe.mechanisms.quantiles.quantile_intervals import quantile_ends
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
