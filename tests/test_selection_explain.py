"""How sure a mode or argmax winner is: the explanation's gap, checked exactly.

``explain`` states that the chosen key's count (or sum) is within
(2Δ/ε)·ln(k/β) of the largest at 95%.  For permute-and-flip the chance of
choosing a key ``d`` below the best is computable exactly in the worst case
(one best key, k − 1 keys all ``d`` below it): here it is computed at ``d`` =
the stated gap and must be at most 5%, for several k and ε; the explanation's
text is checked against the formula; nothing is charged.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.core.explanations import plain_number
from dpframe.mechanisms.selection.selection_family import winner_gap


def _loser_probability(candidates: int, epsilon: float, sensitivity: float, gap: float) -> float:
    """P(permute-and-flip picks one of k − 1 keys all ``gap`` below the single best).

    Each loser is accepted with p = exp(−ε·gap/(2Δ)) when visited, the best
    always; the best is at a uniform position j among k, so the output is a
    loser unless all j losers before it are rejected: 1 − mean_j (1 − p)^j.
    """
    p = math.exp(-epsilon * gap / (2 * sensitivity))
    return 1 - sum((1 - p) ** j for j in range(candidates)) / candidates


@pytest.mark.parametrize("candidates", [2, 4, 50, 1_000])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_the_stated_gap_holds_at_95_percent_in_the_worst_case(
    candidates: int, epsilon: float
) -> None:
    gap = winner_gap(epsilon, 1.0, candidates)
    assert gap == pytest.approx(2 / epsilon * math.log(candidates / 0.05), rel=1e-12)
    assert _loser_probability(candidates, epsilon, 1.0, gap) <= 0.05
    assert _loser_probability(candidates, epsilon, 1.0, gap / 4) > 0.05  # not vacuous


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=10, ledger=":memory:")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_explain_states_the_gap_of_a_mode_and_of_an_argmax(pf: dp.PrivateFrame) -> None:
    mode = pf.session.explain(lambda: pf["region"].mode(epsilon=0.5)).plain()
    count_gap = plain_number(2 * 1 / 0.5 * math.log(4 / 0.05))
    assert f"a key whose count is within {count_gap} of the largest count at 95%" in mode
    assert "among 4 declared keys" in mode
    total = pf.session.explain(lambda: pf.groupby("region").argmax("sum", "wage", epsilon=1))
    sum_gap = plain_number(2 * 5000 / 1 * math.log(4 / 0.05))  # Δ: the bound 5,000
    assert f"within {sum_gap} of the largest sum" in total.plain()
    mean = pf.session.explain(lambda: pf.groupby("region").argmax("mean", "wage", epsilon=1))
    assert mean.plain().startswith("argmax mean(wage) by region = the key of the largest noisy")
    assert pf.session.ledger.empty
