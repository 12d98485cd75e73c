"""value_counts(normalize=True) as pandas (shares with simultaneous intervals), and x ** k."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES


def _frame(cps: pd.DataFrame, epsilon: float = 1e4) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:", name="shares")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


@pytest.mark.fresh_releases
def test_normalized_value_counts_match_pandas(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = pf["region"].value_counts(normalize=True, epsilon=100)
    want = cps["region"].value_counts(normalize=True)
    assert got.name == want.name == "proportion"
    assert list(got.index) == list(want.index)  # sorted by the released counts, as pandas
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), atol=1e-3)
    assert got.sum() == pytest.approx(1.0)
    unsorted = pf["region"].value_counts(normalize=True, sort=False, epsilon=100)
    assert list(unsorted.index) == sorted(CPS1988_CATEGORIES["region"])  # pandas' group order
    assert pf.session.ledger["epsilon"].tolist() == [100, 100]  # shares: no extra charge


@pytest.mark.fresh_releases  # repeats one request to sample its noise: new releases
def test_share_intervals_cover_every_share_at_once() -> None:
    """Over 300 releases at ε = 0.05 on 2,000 rows, every share's interval contains the true
    share in at least 95% of releases (they are simultaneous, so usually all of them)."""
    rng = np.random.default_rng(5)  # data only
    frame = pd.DataFrame({"k": rng.choice(["a", "b", "c"], size=2000, p=[0.5, 0.3, 0.2])})
    truth = frame["k"].value_counts(normalize=True)
    session = dp.Session(epsilon=1e6, ledger=":memory:", name="share-coverage")
    pf = session.private_frame(frame, categories={"k": ["a", "b", "c"]})
    all_covered = 0
    for _ in range(300):
        shares = pf["k"].value_counts(normalize=True, epsilon=0.05)
        intervals = dp.ci(shares)
        inside = (intervals["low"] <= truth[shares.index]) & (
            truth[shares.index] <= intervals["high"]
        )
        all_covered += int(inside.all())
    assert all_covered >= 0.95 * 300, all_covered


def test_whole_powers_are_products_with_interval_bounds(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    squared = pf["education"] ** 2
    assert squared.bounds == (0.0, 400.0)
    mean = pf.assign(e2=squared)["e2"].mean(epsilon=1000)
    assert mean.value == pytest.approx((cps["education"].clip(0, 20) ** 2).mean(), rel=1e-3)
    assert (pf["education"] ** 1).bounds == (0.0, 20.0)


@pytest.mark.parametrize(
    ("exponent", "match"),
    [
        (0.5, "whole powers 1 to 4"),
        (5, r"x \*\* 5: a private column takes whole powers"),
        (True, "whole powers 1 to 4"),
    ],
)
def test_other_powers_are_refused(cps: pd.DataFrame, exponent: object, match: str) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        _frame(cps)["education"] ** exponent


@pytest.mark.fresh_releases
def test_nunique_counts_the_keys_that_occur(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=100, ledger=":memory:", name="nunique")
    regions = [*CPS1988_CATEGORIES["region"], "mars"]  # declared, but no row
    pf = session.private_frame(cps, categories={**CPS1988_CATEGORIES, "region": regions})
    # The empty key passes the threshold in at most 5% of releases (whatever ε; 3.6% at
    # ε = 1, discrete Laplace scale 1).  Over 40 releases, 4 found fewer than 29 times (12 or
    # more passes) has chance 9.4e-10 at 3.6% and 4.1e-8 at 5%.  (The earlier bar of 30 had
    # 1.3e-7 and 2.9e-6.)  A key shown without a threshold passes about half the time.
    found = [pf["region"].nunique(epsilon=1) for _ in range(40)]
    assert sum(int(f) == cps["region"].nunique() == 4 for f in found) >= 29
    assert all(int(f) in (4, 5) for f in found)
    assert repr(found[0]).startswith(f"Release({int(found[0])}, no value interval, cost ε=1")
    with pytest.raises(dp.DPError, match="nunique counts the declared keys"):
        found[0].ci()
    assert session.ledger["epsilon"].tolist() == [1] * 40
