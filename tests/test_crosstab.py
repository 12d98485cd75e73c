"""dp.crosstab and pf.pivot_table, as pandas spells them: one charge over disjoint key pairs,
margins and shares as free post-processing, every cell's interval from dp.ci."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e5


def _frame(cps: pd.DataFrame, epsilon: float = 1e7) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:", name="crosstab")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def _pandas(cps: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
    table = pd.crosstab(cps["region"], cps["smsa"], **kwargs)
    rows = sorted(CPS1988_CATEGORIES["region"]) + (["All"] if kwargs.get("margins") else [])
    cols = sorted(CPS1988_CATEGORIES["smsa"]) + (["All"] if kwargs.get("margins") else [])
    shaped: pd.DataFrame = table.reindex(
        index=rows, columns=[c for c in cols if c in table.columns]
    )
    return shaped


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"margins": True}, {"normalize": "index"}, {"normalize": "columns"}, {"normalize": True}],
    ids=["counts", "margins", "index", "columns", "all"],
)
def test_crosstab_matches_pandas(cps: pd.DataFrame, kwargs: dict[str, Any]) -> None:
    pf = _frame(cps)
    got = dp.crosstab(pf["region"], pf["smsa"], epsilon=BIG, **kwargs)
    want = _pandas(cps, **kwargs)
    assert list(got.index) == list(want.index) and list(got.columns) == list(want.columns)
    assert got.index.name == "region" and got.columns.name == "smsa"
    np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), rtol=1e-3, atol=1e-3)
    assert pf.session.ledger["epsilon"].tolist() == [BIG]  # one charge; margins/shares free


def test_a_cut_column_crosses_without_a_declaration(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = dp.crosstab(pf["region"], pf["education"].cut([0, 12, 16, 20]), epsilon=BIG)
    want = pd.crosstab(cps["region"], pd.cut(cps["education"], [0, 12, 16, 20]))
    want = want.reindex(sorted(CPS1988_CATEGORIES["region"]))
    np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), atol=1)


@pytest.mark.fresh_releases
def test_margin_intervals_cover_their_totals() -> None:
    """Over 300 tables of noisy counts, the 95% intervals (a margin's is the exact-sum bound of
    its cells' noises) cover the truth in at least 92% of the 3,600 cell-runs pooled, and each
    cell in at least 87% of its 300 runs.

    Thresholds, from 2 million simulated tables (discrete Laplace of scale 5 in the six cells,
    the margins their sums, the half-widths dp.ci gives: 15, 21.1, 25.2, 35.3): every cell
    covers 95.5-95.8%.  A table's 12 cells share noise (a margin misses with its cells), so a
    table's covered count has variance 1.11, not the binomial 0.51: pooled over 300 tables,
    the 300-fold convolution of its distribution puts fewer than 3,312 (92%) at 2.0e-10, and
    the earlier bar of 93% at 1.7e-6 (not the 2e-8 a binomial gives).  Per cell, fewer than
    261 (87%) of 300 has chance 1.0e-8 over the 12 cells.  A per-cell bar of 93% failed by
    chance about one run in five.  Margins given one cell's half-width (covering 87.5%, 80%
    and 63%) fail the pooled bar except with chance 1.5e-5 and the grand total's per-cell
    bar always; intervals for a 30% smaller scale (86-88% each) fail the pooled bar always."""
    rng = np.random.default_rng(3)  # data only
    frame = pd.DataFrame(
        {"a": rng.choice(["x", "y", "z"], 1500), "b": rng.choice(["p", "q"], 1500)}
    )
    truth = pd.crosstab(frame["a"], frame["b"], margins=True)
    session = dp.Session(epsilon=1e6, ledger=":memory:", name="margins")
    pf = session.private_frame(frame, categories={"a": ["x", "y", "z"], "b": ["p", "q"]})
    covered = np.zeros(truth.shape)
    for _ in range(300):
        table = dp.crosstab(pf["a"], pf["b"], margins=True, epsilon=0.2)
        ci = dp.ci(table)
        for j, column in enumerate(table.columns):
            low, high = ci[(column, "low")].to_numpy(), ci[(column, "high")].to_numpy()
            exact = truth[column].reindex(table.index).to_numpy()
            covered[:, j] += (low <= exact) & (exact <= high)
    assert covered.sum() >= 0.92 * 300 * covered.size, covered
    assert (covered >= 0.87 * 300).all(), covered


def test_pivot_table_matches_pandas(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    clipped = cps.assign(wage=cps["wage"].clip(*CPS1988_BOUNDS["wage"]))
    got = pf.pivot_table("wage", "region", "smsa", epsilon=BIG)
    want = clipped.pivot_table("wage", "region", "smsa", aggfunc="mean")
    want = want.reindex(
        index=sorted(CPS1988_CATEGORIES["region"]), columns=sorted(CPS1988_CATEGORIES["smsa"])
    )
    np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), rtol=1e-3)
    both = pf.pivot_table("wage", "region", "smsa", ["mean", "count"], epsilon=BIG)
    assert list(both.columns) == [  # type: ignore[comparison-overlap]
        (a, k) for a in ("mean", "count") for k in sorted(CPS1988_CATEGORIES["smsa"])
    ]
    intervals = dp.ci(both)
    assert intervals.shape == (4, 8)
    ledger = pf.session.ledger
    assert ledger["epsilon"].tolist() == [BIG, BIG]


BAD: list[tuple[Callable[[dp.PrivateFrame], Any], str]] = [
    (lambda pf: dp.crosstab(pf["region"], pf["wage"], epsilon=1), "public keys of 'wage'"),
    (lambda pf: dp.crosstab(pf["region"], pf["region"], epsilon=1), "are the same column"),
    (
        lambda pf: dp.crosstab(pf["region"], ["a"], epsilon=1),  # type: ignore[arg-type]
        "two columns of one private frame",
    ),
    (
        lambda pf: dp.crosstab(pf["region"], pf["smsa"], normalize="rows", epsilon=1),
        r"normalize=\.\.\.\) takes False, True",
    ),
    (lambda pf: dp.crosstab(pf["region"], pf["smsa"]), "epsilon"),
    (
        lambda pf: pf.pivot_table("education", "region", "wage", epsilon=1),
        "public keys of 'wage'",
    ),
    (
        lambda pf: pf.pivot_table("wage", "region", "smsa", "max", epsilon=1),
        "unknown aggregate 'max'",
    ),
]


@pytest.mark.parametrize(("call", "match"), BAD)
def test_bad_input_charges_nothing(
    cps: pd.DataFrame, call: Callable[[dp.PrivateFrame], Any], match: str
) -> None:
    pf = _frame(cps, epsilon=10)
    with pytest.raises(dp.DPError, match=match):
        call(pf)
    assert pf.session.ledger.empty


def test_other_frames_are_refused(cps: pd.DataFrame) -> None:
    one, other = _frame(cps), _frame(cps)
    with pytest.raises(dp.SchemaError, match="same private frame"):
        dp.crosstab(one["region"], other["smsa"], epsilon=1)
