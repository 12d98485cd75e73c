"""Rows whose key is not declared: one more disjoint cell, counted free, warned of, never shown.

End to end on the bundled CPS 1988 data (28,155 rows; region: 6,441
northeast, 6,863 midwest, 8,760 south, 6,091 west) with declared categories
that miss a region or get its case wrong.  The privacy argument and its
exact pins are in docs/proofs/undeclared_cell.md and
tests/privacy_maps/test_undeclared_maps.py; the noise's statistical test in
tests/test_undeclared_statistical.py.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.moments.aggregates import IntervalModel
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate
from dpframe.plan.privacy import PrivacyRequest
from tests.sessions import local
from tests.stats_helpers import ALPHA

BIG = 50.0  # noise scale 1/50 row for the counts: the answers are the truth to within 1
REGIONS = ["northeast", "midwest", "south", "west"]


@pytest.fixture(scope="module")
def cps() -> pd.DataFrame:
    return load_cps1988()


def _frame(
    df: pd.DataFrame, categories: dict[str, list[Any]] | None = None, **session: Any
) -> dp.PrivateFrame:
    declared = {**CPS1988_CATEGORIES, **(categories or {})}
    budget = {"epsilon": 10_000.0, **session}
    pf: dp.PrivateFrame = dp.Session(ledger=":memory:", **budget).private_frame(
        df, bounds=CPS1988_BOUNDS, categories=declared
    )
    return pf


def _quiet(release: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return release()


def _undeclared(result: pd.Series) -> float:
    count = result.dp.undeclared
    assert isinstance(count, dp.Release)
    return float(count)


# -- the released answer near the truth ----------------------------------------------------


def test_a_region_missing_from_the_declared_categories_is_counted_apart(cps: pd.DataFrame) -> None:
    pf = _frame(cps, {"region": ["northeast", "midwest", "south"]})
    counts = _quiet(lambda: pf.groupby("region").size(epsilon=BIG))
    assert list(counts.index) == ["midwest", "northeast", "south"]  # sorted; never an index entry
    truth = cps["region"].value_counts()
    assert np.allclose(counts.to_numpy(), truth[counts.index].to_numpy(), atol=1)
    assert _undeclared(counts) == pytest.approx(6091, abs=1)


def test_wrong_case_puts_the_whole_region_in_the_undeclared_cell(cps: pd.DataFrame) -> None:
    pf = _frame(cps, {"region": ["Northeast", "Midwest", "south", "west"]})
    sums = _quiet(lambda: pf.groupby("region")["wage"].sum(epsilon=BIG))
    # A count cell even in a sum query: rows, not wages.
    assert _undeclared(sums) == pytest.approx(6441 + 6863, abs=1)
    assert sums.dp.undeclared.scale == pytest.approx(1 / BIG)
    truth = cps.assign(wage=cps["wage"].clip(0, 5000)).groupby("region")["wage"].sum()
    assert sums["south"] == pytest.approx(truth["south"], rel=1e-3)


@pytest.mark.parametrize("statistic", ["count", "mean", "var", "std"])
def test_every_statistic_counts_the_same_rows(cps: pd.DataFrame, statistic: str) -> None:
    pf = _frame(cps, {"region": ["northeast", "midwest", "south"]})
    grouped = pf.groupby("region") if statistic == "count" else pf.groupby("region")["wage"]
    result = _quiet(lambda: getattr(grouped, statistic)(epsilon=BIG))
    assert _undeclared(result) == pytest.approx(6091, abs=1)
    if statistic == "mean":
        truth = cps.assign(wage=cps["wage"].clip(0, 5000)).groupby("region")["wage"].mean()
        assert result["south"] == pytest.approx(truth["south"], rel=1e-3)


def test_several_keys_have_one_undeclared_cell(cps: pd.DataFrame) -> None:
    pf = _frame(cps, {"region": ["northeast", "midwest", "south"], "smsa": ["yes"]})
    sizes = _quiet(lambda: pf.groupby(["region", "smsa"]).size(epsilon=BIG))
    assert len(sizes) == 3
    outside = (cps["region"] == "west") | (cps["smsa"] == "no")  # any key column undeclared
    assert _undeclared(sizes) == pytest.approx(int(outside.sum()), abs=1)


def test_missing_keys_and_filtered_rows_are_in_no_cell() -> None:
    frame = pd.DataFrame(
        {
            "k": ["a", "b", "B", None, "zz", "a", np.nan, "zz"],
            "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -1.0],
        }
    )
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"x": (-10, 10)}, categories={"k": ["a", "b"]})
    counts = _quiet(lambda: pf.groupby("k").size(epsilon=BIG))
    assert counts.round().tolist() == [2, 1]
    assert _undeclared(counts) == pytest.approx(3, abs=0.5)  # "B", "zz", "zz"; not the missing
    kept = pf[pf["x"] > 0]
    assert _undeclared(_quiet(lambda: kept.groupby("k").size(epsilon=BIG))) == pytest.approx(
        2, abs=0.5
    )


def test_with_privacy_units_the_cell_is_near_the_truth(cps: pd.DataFrame) -> None:
    """The undeclared cell (6,091 west rows) of three releases, each within its noise.

    Each cell is the count (rounded to the noise's grid) plus discrete Laplace
    noise of scale b, as the release records it: P(|noise| > t) <= 2 exp(-t/b).
    With t = b ln(2k/α) per cell (k = 3 releases, α = ALPHA = 1e-7; the suite's rule
    is 1e-6), one cell lies farther than t (plus the rounding) from the truth with
    probability below α.  The mean's cell has b = 0.8 (its count's share of ε, two
    rows per person): the former ±3 (P(|noise| >= 4) = 1.0%) failed about once in
    100 runs.
    """
    people = cps.assign(person=np.arange(len(cps)) // 2)  # two rows per person
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    pf = session.private_frame(
        people,
        bounds=CPS1988_BOUNDS,
        categories={"region": ["northeast", "midwest", "south"]},
        privacy_unit="person",
        max_rows_per_unit=2,
    )
    releases = (
        lambda: pf.groupby("region")["wage"].sum(epsilon=BIG),
        lambda: pf.groupby("region")["wage"].mean(epsilon=BIG),
        lambda: pf.groupby("region").size(epsilon=BIG),
    )
    for release in releases:
        cell = _quiet(release).dp.undeclared
        assert isinstance(cell, dp.Release)
        assert isinstance(cell.intervals, IntervalModel)
        (noise,) = cell.intervals.noise  # the noise actually added
        assert noise.kind == "laplace"
        scale = float(noise.parameter) * noise.grid  # its parameter is in grid units
        assert scale <= 1  # near the truth: within a row or so
        tolerance = scale * math.log(2 * len(releases) / ALPHA) + noise.rounding
        assert abs(float(cell) - 6091) <= tolerance


# -- value counts and histograms ----------------------------------------------------------


def test_value_counts_keep_the_cell_when_sorted(cps: pd.DataFrame) -> None:
    pf = _frame(cps, {"region": ["northeast", "midwest", "south"]})
    counts = _quiet(lambda: pf["region"].value_counts(epsilon=BIG))
    assert list(counts.index) == ["south", "midwest", "northeast"]
    assert _undeclared(counts) == pytest.approx(6091, abs=1)


def test_histograms_count_the_values_outside_explicit_edges(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # hist never warns: its edges are a choice
        explicit = pf["wage"].hist(bins=[0, 500, 1000], epsilon=BIG)
        clamped = pf["wage"].hist(bins=4, epsilon=BIG)
    assert _undeclared(explicit) == pytest.approx(int((cps["wage"] > 1000).sum()), abs=1)
    assert _undeclared(clamped) == pytest.approx(0, abs=1)  # k bins clamp: nothing outside
    assert "outside the bins" in explicit.attrs["dpframe"].undeclared.message()


# -- the warning ----------------------------------------------------------------------------


def test_the_warning_gives_a_rounded_noisy_count_and_never_a_value(cps: pd.DataFrame) -> None:
    pf = _frame(cps, {"region": ["Northeast", "midwest", "south", "west"]})
    expected = (
        "about 6,400 rows have a region outside the declared categories; check spelling and case"
    )
    with pytest.warns(UserWarning, match=expected) as caught:
        pf.groupby("region")["wage"].mean(epsilon=BIG)
    text = str(caught[0].message)
    assert caught[0].filename == __file__  # pointed at the analyst's line
    for value in cps["region"].unique():  # no value, undeclared or declared
        assert value not in text.lower()


def test_no_warning_when_every_key_is_declared(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        result = pf.groupby(["region", "smsa"])["wage"].mean(epsilon=BIG)
    assert _undeclared(result) <= result.attrs["dpframe"].undeclared.threshold


def test_the_threshold_is_the_noise_quantile_for_one_in_a_million() -> None:
    frame = pd.DataFrame({"k": ["a"] * 10})
    pf = dp.Session(epsilon=10, ledger=":memory:").private_frame(frame, categories={"k": ["a"]})
    meta = pf.groupby("k").size(epsilon=1).attrs["dpframe"].undeclared
    # Discrete Laplace of scale 1: P(Z ≥ t) = e^(−t)/(1 + e^(−1)); it warns above 13, and
    # P(Z ≥ 14) = 6.1e-7 ≤ 1e-6 < P(Z ≥ 13) = 1.7e-6.
    assert meta.threshold == 13
    assert meta.count.cost == dp.Budget(0)


# -- the ledger: the cell is free -------------------------------------------------------------


@pytest.mark.parametrize("accounting", ["pure", "zcdp"])
@pytest.mark.parametrize("statistic", ["count", "sum", "mean", "var"])
def test_the_ledger_is_charged_exactly_the_stated_epsilon(
    cps: pd.DataFrame, accounting: str, statistic: str
) -> None:
    """The same release with and without the cell: the same charge, one ledger row each."""
    spent = []
    for cell in (True, False):
        delta = 0.0 if accounting == "pure" else 1e-6
        session = dp.Session(epsilon=3, delta=delta, ledger=":memory:", accounting=accounting)
        declared = {**CPS1988_CATEGORIES, "region": ["northeast", "midwest", "south"]}
        pf = session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=declared)
        keys = pf.groupby("region").__dpframe__().keys
        expr, bounds = (None, None) if statistic == "count" else (Col("wage"), (0.0, 5000.0))
        request = PrivacyRequest(epsilon=0.7)
        node = Aggregate(pf.plan, statistic, expr, bounds, keys, "q", request, undeclared=cell)  # type: ignore[arg-type]
        result = session.run(node)
        assert (result.attrs["dpframe"].undeclared is not None) is cell
        assert len(session.ledger) == 1
        spent.append(session.spent)
    assert spent[0] == spent[1]
    if accounting == "pure":
        assert spent[0] == dp.Budget(0.7)


def test_discovered_keys_have_no_undeclared_cell(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=10, delta=1e-6, accounting="approx", ledger=":memory:")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS)
    result = pf.groupby("region")["wage"].mean(epsilon=5, delta=1e-7)
    assert result.attrs["dpframe"].undeclared is None
    assert result.dp.undeclared is None


def test_explain_lists_the_cell_and_charges_nothing(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    text = str(pf.session.explain(lambda: pf.groupby("region")["wage"].sum(epsilon=1), detail=True))
    assert "rows with undeclared keys (one more cell, free): sensitivity 1" in text
    assert pf.session.spent == dp.Budget(0)


def test_only_released_series_have_an_undeclared_count() -> None:
    with pytest.raises(dp.DPError, match="undeclared needs a grouped result returned by dpframe"):
        _ = pd.Series([1.0, 2.0]).dp.undeclared


def test_a_batch_keeps_the_cell(cps: pd.DataFrame) -> None:
    pf = _frame(cps, {"region": ["northeast", "midwest", "south"]})
    with local(pf).batch() as batch:
        pending = batch.add(lambda: _quiet(lambda: pf.groupby("region").size(epsilon=BIG)))
    assert _undeclared(pending.result) == pytest.approx(6091, abs=1)


# -- "Releases as data": a bounded column is read as numbers ------------------------------


def test_a_dirty_bounded_column_is_read_as_numbers_not_text(cps: pd.DataFrame) -> None:
    """A stray "unknown" in a bounded column is a missing value (see also
    tests/test_declared_kinds.py); the column is not turned into text and no
    advice to declare categories is given."""
    dirty = cps.astype({"wage": object})
    dirty.loc[::100, "wage"] = "unknown"
    pf = _frame(dirty)
    assert pf.column_info("wage").kind == "numeric"
    clean = pd.to_numeric(dirty["wage"], errors="coerce").clip(0, 5000)
    assert float(pf["wage"].count(epsilon=BIG)) == pytest.approx(clean.count(), abs=1)
    assert float(pf["wage"].mean(epsilon=BIG)) == pytest.approx(clean.mean(), rel=1e-3)


def test_an_epsilon_beyond_float_range_releases_the_exact_count() -> None:
    """No noise at all (ε = 10⁴⁰⁰): the threshold is the rounding, and any row warns."""
    from fractions import Fraction

    frame = pd.DataFrame({"k": ["a", "a", "zz"]})
    session = dp.Session(epsilon=Fraction(10**500), ledger=":memory:")
    pf = session.private_frame(frame, categories={"k": ["a"]})
    with pytest.warns(UserWarning, match="about 1 row has a k outside the declared categories"):
        counts = pf.groupby("k").size(epsilon=Fraction(10**400))
    assert counts.tolist() == [2.0]
    assert float(counts.dp.undeclared) == 1.0
    assert counts.attrs["dpframe"].undeclared.threshold == 0.0


def test_an_undeclared_cell_needs_group_keys() -> None:
    from dpframe.plan.nodes import Source

    with pytest.raises(dp.SchemaError, match=r"undeclared=True counts rows outside group keys"):
        Aggregate(Source("d"), "count", None, None, (), "q", undeclared=True)
