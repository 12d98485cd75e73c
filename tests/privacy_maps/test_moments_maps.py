"""corr()/cov() through the public API: 1 + k + k(k+1)/2 equal parts that add up to the request.

The proof (``docs/proofs/moments.md``) is a sequential composition of additive
sums; this pins the split from the ledger, in every accounting.  Each part is
an ``Aggregate`` count or clamped sum whose own map is pinned exactly by
``test_additive_maps.py``; its sensitivity here is pinned by the part's noise
scale in ``tests/test_moments.py``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting.ledger import decode_parts


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(1)  # test data only, not privacy noise
    data: pd.DataFrame = pd.DataFrame(
        {"x": rng.uniform(0, 10, 2000), "y": rng.random(2000), "z": rng.normal(0, 1, 2000)}
    )
    return data


@pytest.mark.parametrize(("accounting", "delta"), [("pure", 0.0), ("approx", 1e-6), ("zcdp", 0.0)])
@pytest.mark.parametrize("columns", [["x", "y"], ["x", "y", "z"]])
def test_corr_splits_the_request_equally_over_its_moments(
    frame: pd.DataFrame, accounting: str, delta: float, columns: list[str]
) -> None:
    total_delta = 0.0 if accounting == "pure" else 1e-5
    session = dp.Session(epsilon=4, delta=total_delta, ledger=":memory:", accounting=accounting)
    bounds = {"x": (0.0, 10.0), "y": (0.0, 1.0), "z": (-3.0, 3.0)}
    pf = session.private_frame(frame, bounds=bounds)
    if delta:
        pf[columns].corr(epsilon=1, delta=delta)
    else:
        pf[columns].corr(epsilon=1)
    ledger = session.ledger
    assert len(ledger) == 1 and ledger["epsilon"].tolist() == [1.0]
    parts = decode_parts(ledger["parts"].iloc[0])
    assert parts is not None
    k = len(columns)
    m = 1 + k + k * (k + 1) // 2
    assert len(parts) == m
    assert {charge.epsilon for _, charge in parts} == {Fraction(1, m)}
    assert sum(charge.epsilon for _, charge in parts) == 1
    assert sum(charge.delta for _, charge in parts) == Fraction(repr(delta))
    names = [name for name, _ in parts]
    assert names[0].startswith("count()") and names[1].startswith(f"sum({columns[0]} centred)")
    if accounting == "zcdp":
        rhos = {charge.rho for _, charge in parts}
        assert len(rhos) == 1 and next(iter(rhos)) > 0  # ρ/m each: they add up to the request
