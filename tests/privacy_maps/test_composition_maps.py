"""Composite releases through the public API: their parts' charges add up to the request.

The proofs of ``describe``, discovery-then-aggregate and the sanitized copies
(``docs/proofs/``) are sequential compositions; these tests pin the budget
split they rely on, from the ledger (one row per composite release, with its
parts and their charges) and the copy's metadata.  Each part's own map is
pinned exactly by the other modules here.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting.accountants import Charge
from dpframe.accounting.ledger import decode_parts

BOUNDS = {"x": (0.0, 10.0), "y": (0.0, 1.0)}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)  # test data only, not privacy noise
    data: pd.DataFrame = pd.DataFrame(
        {
            "k": rng.choice(["a", "b", "c"], 3000),
            "x": rng.uniform(0, 10, 3000),
            "y": rng.random(3000),
        }
    )
    return data


def _ledger(session: dp.Session) -> pd.DataFrame:
    ledger: pd.DataFrame = session.ledger
    return ledger


def _parts(session: dp.Session) -> list[tuple[str, Charge]]:
    """The parts of the session's one (composite) release, as the ledger recorded them."""
    rows = _ledger(session)
    assert len(rows) == 1
    parts = decode_parts(rows["parts"].iloc[0])
    assert parts is not None
    return parts


@pytest.mark.parametrize("accounting", ["approx", "zcdp"])
def test_discovery_then_aggregate_spends_half_and_all_delta_then_half(
    frame: pd.DataFrame, accounting: str
) -> None:
    session = dp.Session(epsilon=4, delta=1e-5, ledger=":memory:", accounting=accounting)
    pf = session.private_frame(frame, bounds=BOUNDS)  # "k" has no declared keys
    pf.groupby("k")["x"].mean(epsilon=1, delta=1e-6)
    (discovery, first), (aggregate, second) = _parts(session)
    assert discovery.startswith("discover keys of k") and aggregate.startswith("mean(x) by k")
    assert [first.epsilon, second.epsilon] == [Fraction(1, 2), Fraction(1, 2)]
    assert [first.delta, second.delta] == [Fraction(1, 10**6), 0]
    assert _ledger(session)["epsilon"].tolist() == [1.0]
    if accounting == "zcdp":
        assert first.rho == second.rho > 0  # ρ/2 each: the two halves compose to the request's ρ


@pytest.mark.parametrize(("accounting", "delta"), [("pure", 0.0), ("approx", 1e-6), ("zcdp", 0.0)])
def test_describe_splits_the_request_over_columns_and_halves(
    frame: pd.DataFrame, accounting: str, delta: float
) -> None:
    total_delta = 0.0 if accounting == "pure" else 1e-5
    session = dp.Session(epsilon=4, delta=total_delta, ledger=":memory:", accounting=accounting)
    pf = session.private_frame(frame, bounds=BOUNDS)
    pf.describe(epsilon=1, delta=delta) if delta else pf.describe(epsilon=1)
    parts = _parts(session)
    assert len(parts) == 4  # 2 columns x (moments, quartiles)
    assert sum(charge.epsilon for _, charge in parts) == 1
    assert {charge.epsilon for _, charge in parts} == {Fraction(1, 4)}
    assert sum(charge.delta for _, charge in parts) == Fraction(repr(delta))


@pytest.mark.parametrize("kind", ["randomized_response", "laplace_copy"])
def test_copy_length_and_reports_compose_to_the_request(frame: pd.DataFrame, kind: str) -> None:
    session = dp.Session(epsilon=4, ledger=":memory:")
    pf = session.private_frame(
        frame.assign(k=frame["k"]), bounds=BOUNDS, categories={"k": ["a", "b", "c"]}
    )
    column = "k" if kind == "randomized_response" else "x"
    copy = getattr(pf[column], kind)(epsilon=1)
    info = copy.attrs["dpframe_copy"]
    assert info.epsilon == pytest.approx(0.95, rel=1e-15)  # 1 − length_share of the request
    assert "scale 20 rows" in info.length_noise  # the length: DLap(1/(0.05·ε)), Δ = 1
    assert _ledger(session)["epsilon"].tolist() == [1.0]
