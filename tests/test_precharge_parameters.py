"""Parameters a selection mechanism cannot use are refused before anything is charged.

Found by the curator's plausible-call fuzzer: a zCDP session's tiny ρ became a
pure ε of exactly 0 (and a huge ``max_hits`` an unusable noise scale), which
the sparse vector and partition selection rejected only after the charge.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10**6), st.integers(0, 900))
def test_pure_epsilon_is_positive_and_within_rho(numerator: int, exponent: int) -> None:
    rho = Fraction(numerator, 10**exponent)
    eps = pure_epsilon(NoiseAllocation("gaussian", rho), Fraction(1, 2))
    assert eps > 0
    assert eps * eps / 2 <= rho  # ε-DP is ε²/2-zCDP: within the allocation, exactly
    if exponent < 300:
        assert float(eps) >= 0.99 * (2 * float(rho)) ** 0.5  # and not needlessly small


@pytest.fixture
def frame() -> tuple[dp.Session, dp.PrivateFrame]:
    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:", accounting="zcdp")
    df = pd.DataFrame({"g": ["a", "b"] * 50, "x": np.arange(100.0)})
    return session, session.private_frame(df, bounds={"x": (0, 100)})


TINY_RHO = Fraction(1, 10**40)
UNUSABLE = {
    "sparse vector, huge max_hits": lambda pf: pf.above_threshold(
        {"big": pf["x"] > 50}, 10, max_hits=10**18, epsilon=0.5
    ),
    "sparse vector, tiny rho": lambda pf: pf.above_threshold(
        {"big": pf["x"] > 50}, 10, rho=TINY_RHO
    ),
    "key discovery, tiny rho": lambda pf: pf.discover_keys("g", rho=TINY_RHO, delta=1e-7),
}
# What each refusal says.  The tiny-rho ones speak of epsilon (the converted cost).
UNUSABLE_MATCH = {
    "sparse vector, huge max_hits": r"too small for this max_hits: .* would exceed 2\*\*52",
    "sparse vector, tiny rho": r"\(epsilon, or rho in a zCDP session\) is too small for this",
    "key discovery, tiny rho": r"\(epsilon, or rho in a zCDP session\) is too small: the noise",
}


@pytest.mark.parametrize("case", sorted(UNUSABLE))
def test_unusable_parameters_are_refused_before_the_charge(
    case: str, frame: tuple[dp.Session, dp.PrivateFrame]
) -> None:
    session, pf = frame
    with pytest.raises(dp.InvalidBudgetError, match=UNUSABLE_MATCH[case]):
        UNUSABLE[case](pf)
    assert session.ledger.empty
    assert session.spent == dp.Budget(0)
