"""Quantiles that fit the data: ``candidates=`` (public values chosen among) and integer columns
(declared ``dtypes={col: "integer"}``) answering with whole numbers."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.core.explanations import plain_number
from dpframe.mechanisms.quantiles.quantiles import MAX_CANDIDATES, integer_candidates, rank_error
from dpframe.plan.nodes import Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import Quantile

BIG = 1e5


def _frame(
    cps: pd.DataFrame, dtypes: dict[str, str] | None = None, epsilon: float = 1e7
) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:")
    return session.private_frame(
        cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, dtypes=dtypes
    )


def test_given_candidates_are_the_only_answers(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    grid = np.arange(0, 5001, 10)
    median = pf["wage"].median(epsilon=BIG, candidates=grid)
    wages = np.sort(cps["wage"].clip(0, 5000).to_numpy())
    ranks = np.abs(np.searchsorted(wages, grid) - len(wages) / 2)
    assert float(median) == grid[np.argmin(ranks)]  # the best candidate at ε = 10⁵
    many = pf["wage"].quantile([0.1, 0.9], epsilon=BIG, candidates=pd.Series(grid))
    assert set(many.to_numpy()) <= set(grid.astype(float))
    grouped = pf.groupby("region")["wage"].median(epsilon=BIG, candidates=range(0, 5001, 10))
    assert set(grouped.to_numpy()) <= set(grid.astype(float))
    want = cps.groupby("region")["wage"].median()
    np.testing.assert_allclose(grouped.to_numpy(), want[grouped.index].to_numpy(), atol=10)


def test_ties_at_a_candidate_count_as_that_candidate(cps: pd.DataFrame) -> None:
    """education's median is 12 (53% are at most 12, 20% below): with 12 a candidate, 12."""
    pf = _frame(cps, dtypes={"education": "numeric"})  # not integer: the candidates are given
    assert float(pf["education"].median(epsilon=BIG, candidates=[8, 10, 12, 14, 16])) == 12
    west = pf.groupby("region")["education"].median(epsilon=BIG, candidates=[10, 12, 13, 16])
    assert west.to_dict() == cps.groupby("region")["education"].median().to_dict()
    # The default grid: values equal to a grid point count as above it, so it misses 12.
    assert float(pf["education"].median(epsilon=BIG)) != 12


def test_integer_columns_choose_among_the_integers_in_their_bounds(cps: pd.DataFrame) -> None:
    pf = _frame(cps, dtypes={"education": "integer", "experience": "int64"})
    assert pf["experience"].dtype == "Int64"
    release = pf["experience"].quantile(0.9, epsilon=BIG)
    assert float(release) == cps["experience"].quantile(0.9) and float(release).is_integer()
    quartiles = pf["education"].quantile([0.25, 0.5, 0.75], epsilon=BIG)
    assert quartiles.tolist() == cps["education"].quantile([0.25, 0.5, 0.75]).tolist()
    # half the ε picks the point (the rest its interval's ends)
    assert release.scale == pytest.approx(rank_error(BIG / 2, 0.95, Fraction(9, 10), 1, 73))
    assert integer_candidates((-8.0, 64.0)) == tuple(float(v) for v in range(-8, 65))


def test_the_integer_kind_comes_from_the_declaration_or_the_frames_dtype(cps: pd.DataFrame) -> None:
    """An int64 column with bounds is integer (issue 26); a float one only when declared.

    The kind comes from the dtype of the frame the analyst passed, never from
    its values: a float column holding whole numbers stays numeric.
    """
    assert cps["education"].dtype == np.int64
    pf = _frame(cps)
    assert pf["education"].dtype == "Int64"
    assert float(pf["education"].median(epsilon=BIG)) == 12
    floats = _frame(cps.astype({"education": "float64"}))
    assert floats["education"].dtype == "float64"
    assert float(floats["education"].median(epsilon=BIG)) != 12  # the default grid misses it
    declared = _frame(cps.astype({"education": "float64"}), dtypes={"education": "integer"})
    assert float(declared["education"].median(epsilon=BIG)) == 12


def test_many_integers_are_thinned_to_the_candidate_limit() -> None:
    frame = pd.DataFrame({"n": np.arange(20_000, dtype=np.int64)})
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"n": (0, 1e6)}, dtypes={"n": "integer"})
    median = float(pf["n"].median(epsilon=BIG))
    assert median.is_integer() and abs(median - 10_000) <= 250  # spaced 1e6/4096 apart
    assert session.ledger["query"].iloc[0] == f"quantile(n, q=[0.5], {MAX_CANDIDATES} candidates)"
    spaced = integer_candidates((0.0, 1e6))
    assert len(spaced) == MAX_CANDIDATES and all(c.is_integer() for c in spaced)
    assert integer_candidates((0.2, 0.8)) == ()  # no integer inside: the default grid


def test_one_candidate_is_released_without_reading_the_data(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    assert float(pf["wage"].median(epsilon=1, candidates=[700])) == 700
    grouped = pf.groupby("region")["wage"].quantile([0.1, 0.9], epsilon=1, candidates=[700])
    assert set(grouped) == {700.0}
    assert len(pf.session.ledger) == 2  # still charged: the request is what was asked


def test_explain_names_the_candidates(cps: pd.DataFrame) -> None:
    pf = _frame(cps, dtypes={"education": "integer"})
    text = pf.session.explain(lambda: pf["education"].median(epsilon=0.5)).plain()
    expected = plain_number(rank_error(0.25, 0.95, Fraction(1, 2), 1, 21))  # point: half ε
    assert text.startswith(
        f"quantile(education, q=[0.5], 21 candidates) = a value whose rank is within "
        f"±{expected} rows"
    )
    assert "among 21 public candidates" in text
    grouped = pf.session.explain(
        lambda: pf.groupby("region")["wage"].median(epsilon=0.5, candidates=[100, 200, 300])
    ).plain()
    assert "among 3 public candidates" in grouped
    assert pf.session.ledger.empty


CASES: list[tuple[Callable[[dp.PrivateFrame], object], str]] = [
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[]), "empty"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[3, 1, 2]), "sorted in increasing"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[1, 1, 2]), "no repeats"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[1, float("nan")]), "finite"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[1, float("inf")]), "finite"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[-1, 2]), r"bounds \[0, 5000\]"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=["a", "b"]), "must be numbers"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[True, False]), "must be numbers"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=[None]), "must be numbers"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates="100"), "sorted list of numbers"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates=5), "sorted list of numbers"),
    (lambda pf: pf["wage"].median(epsilon=1, candidates={1: 2}), "sorted list of numbers"),
    (
        lambda pf: pf["wage"].median(epsilon=1, candidates=np.linspace(0, 1, 4098)),
        "at most 4,097 candidates",
    ),
    (
        lambda pf: pf["wage"].quantile([0.2], epsilon=1, candidates=iter(range(5000))),
        "at most 4,097 candidates",
    ),
    (
        lambda pf: pf.groupby("region")["wage"].median(epsilon=1, candidates=[5, 4]),
        "sorted in increasing",
    ),
]


@pytest.mark.parametrize(("call", "match"), CASES)
def test_bad_candidates_are_refused_before_the_charge(
    cps: pd.DataFrame, call: Callable[[dp.PrivateFrame], object], match: str
) -> None:
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(cps, bounds={"wage": (0, 5000)}, categories=CPS1988_CATEGORIES)
    with pytest.raises(dp.DPError, match=match):
        call(pf)
    assert session.spent == dp.Budget(0) and session.ledger.empty


@pytest.mark.parametrize(
    ("candidates", "match"),
    [
        ((2.0, 1.0), "sorted"),
        ((float("nan"),), "finite"),
        ((-1.0,), "within the column's bounds"),
        (tuple(float(v) for v in range(MAX_CANDIDATES + 1)), "at most"),
    ],
)
def test_nodes_check_their_candidates_also_off_the_facade(
    candidates: tuple[float, ...], match: str
) -> None:
    """A node decoded from the wire is checked by the same rule (before any charge)."""
    with pytest.raises(dp.DPError, match=match):
        Quantile(
            plan=Source("d"),
            privacy=PrivacyRequest(epsilon=1),
            expr=dp.col("x"),
            bounds=(0.0, 5000.0),
            levels=(Fraction(1, 2),),
            candidates=candidates,
        )
