"""Everyday pandas steps as typed (issue 29): no silent trap, no raw error.

Each test runs a pandas spelling on the private frame and checks that it
either works as pandas would (with ``epsilon=`` added) or is refused before
any charge with a message that says how to fix it.  The same filters run on
Dask (``tests/dask/test_pandas_as_written_on_dask.py``) and through the
curator (``tests/curator/test_pandas_as_written_remote.py``).
"""

from __future__ import annotations

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e6


@pytest.fixture
def frame(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


# -- values that are not declared keys: refused before the charge ------------------

UNDECLARED_FILTERS = [
    ('pf[pf["region"] == "South"]', "'South' is not a declared key of 'region'.*'south'"),
    ('pf[pf["region"] != "Wesst"]', "'Wesst' is not a declared key.*Did you mean 'west'"),
    ('pf[pf["region"].isin(["south", "Wesst"])]', "'Wesst' is not a declared.*'west'"),
    ('pf[~pf["region"].isin(["NorthEast"])]', "'NorthEast'.*Did you mean 'northeast'"),
    ("pf.query(\"region == 'South'\")", "'South' is not a declared key.*Did you mean 'south'"),
    ("pf.query(\"region in ['west', 'Midwest']\")", "'Midwest'.*Did you mean 'midwest'"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "match"), UNDECLARED_FILTERS)
def test_a_value_outside_the_declared_keys_is_refused_before_any_charge(
    frame: dp.PrivateFrame, code: str, match: str
) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        eval(code, {"pf": frame})
    assert frame.session.spent == dp.Budget(0)


def test_declared_values_still_filter(frame: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    got = frame[frame["region"] == "south"].count(epsilon=BIG)
    assert abs(float(got) - int((cps["region"] == "south").sum())) <= 5
    other = frame[~frame["region"].isin(["west", "south"])].count(epsilon=BIG)
    assert abs(float(other) - int((~cps["region"].isin(["west", "south"])).sum())) <= 5


def test_text_without_declared_keys_cannot_be_checked() -> None:
    session = dp.Session(epsilon=BIG, ledger=":memory:")
    names = pd.DataFrame({"name": ["ann", "bob", "cy"] * 50})
    pf = session.private_frame(names, dtypes={"name": "string"})
    got = pf[pf["name"] == "Ann"].count(epsilon=BIG)  # no keys to check against: charged
    assert abs(float(got)) <= 5
    assert session.spent == dp.Budget(BIG)


# -- integer bounds declare the keys (no delta, nothing discovered) ----------------


def test_mean_wage_by_education_groups_by_the_whole_numbers_in_its_bounds(
    frame: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    got = frame.groupby("education")["wage"].mean(epsilon=BIG)
    assert list(got.index) == list(range(21))
    truth = cps.assign(wage=cps["wage"].clip(0, 5000)).groupby("education")["wage"].mean()
    big = cps.groupby("education").size() > 100
    for key in truth.index[big]:
        assert abs(float(got[key]) - truth[key]) <= 1e-2 * truth[key] + 1
    assert frame.session.spent == dp.Budget(BIG)  # pure DP: no delta anywhere
    sizes = frame.groupby("education").size(epsilon=BIG)
    counts = frame["education"].value_counts(epsilon=BIG, sort=False)
    assert list(sizes.index) == list(counts.index) == list(range(21))
    table = frame.pivot_table(values="wage", index="region", columns="education", epsilon=BIG)
    assert table.shape == (4, 21)


def test_integer_values_outside_the_bounds_are_undeclared_rows() -> None:
    session = dp.Session(epsilon=BIG * 10, ledger=":memory:")
    data = pd.DataFrame({"k": [1, 2, 3] * 100 + [7] * 300, "x": [1.0] * 600})
    pf = session.private_frame(data, bounds={"k": (1, 3), "x": (0, 2)})
    with pytest.warns(UserWarning, match="rows have a k outside the declared categories"):
        got = pf.groupby("k").size(epsilon=BIG)
    assert list(got.index) == [1, 2, 3]
    assert abs(float(got.dp.undeclared) - 300) <= 5
    assert all(abs(float(got[k]) - 100) <= 5 for k in (1, 2, 3))


def test_too_many_whole_numbers_and_undeclared_floats_are_refused_before_the_charge(
    frame: dp.PrivateFrame,
) -> None:
    wide = frame.with_bounds(education=(0, 20_000))
    with pytest.raises(dp.SchemaError, match=r"20,001 whole numbers.*\.cut\(bins\)"):
        wide.groupby("education")["wage"].mean(epsilon=1)
    with pytest.raises(dp.SchemaError, match=r"groupby\('wage'\) needs the public keys") as info:
        frame.groupby("wage").size(epsilon=1)
    assert "copy" not in str(info.value)  # names no release the analyst did not ask for
    assert frame.session.spent == dp.Budget(0)


# -- pandas' keywords and methods as typed -------------------------------------------


def test_clip_takes_one_end_as_pandas(frame: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    assert frame["wage"].clip(upper=1000).bounds == (0.0, 1000.0)
    assert frame["wage"].clip(lower=100).bounds == (100.0, 5000.0)
    assert frame["wage"].clip(upper=-5).bounds == (-5.0, -5.0)
    got = frame["wage"].clip(upper=1000).mean(epsilon=BIG)
    assert abs(float(got) - cps["wage"].clip(upper=1000).mean()) <= 1
    assert frame["wage"].clip().bounds == (0.0, 5000.0)
    session = dp.Session(epsilon=1, ledger=":memory:")
    loose = session.private_frame(pd.DataFrame({"x": [1.0, 2.0]}))
    with pytest.raises(dp.SchemaError, match=r"clip\(upper=3\) of 'x', which has no declared"):
        loose["x"].clip(upper=3)


def test_series_describe_is_the_frame_summary_of_one_column(
    frame: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    numbers = frame["wage"].describe(epsilon=BIG)
    assert list(numbers.index) == ["count", "mean", "std", "25%", "50%", "75%"]
    assert numbers.name == "wage"
    assert abs(float(numbers["mean"]) - cps["wage"].clip(0, 5000).mean()) <= 1
    keys = frame["region"].describe(epsilon=BIG)
    assert list(keys.index) == ["count", "unique", "top", "freq"]
    assert keys["top"] == cps["region"].mode()[0] and keys["unique"] == 4
    with pytest.raises(dp.SchemaError, match=r"describe\(\) of 'x' needs declared bounds"):
        session = dp.Session(epsilon=1, ledger=":memory:")
        session.private_frame(pd.DataFrame({"x": [1.0, 2.0]}))["x"].describe(epsilon=1)


def test_mode_is_a_series_as_pandas(frame: dp.PrivateFrame) -> None:
    got = frame["region"].mode(epsilon=BIG)
    assert isinstance(got, pd.Series) and got.name == "region"
    assert got[0] == "south"  # 8,760 rows, 1,900 more than any other region


def test_item_assignment_derives_a_column(frame: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    before = frame
    wage = frame["wage"]
    frame["weekly"] = frame["wage"] * 5
    frame["twice"] = wage * 2  # a column taken before the assignment means the same
    assert frame is before and "weekly" in frame.columns
    assert frame["weekly"].bounds == (0.0, 25000.0)
    got = frame["weekly"].mean(epsilon=BIG)
    assert abs(float(got) - 5 * cps["wage"].clip(0, 5000).mean()) <= 5
    with pytest.raises(dp.SchemaError, match="one column name"):
        frame[["a", "b"]] = 1  # type: ignore[index]


def test_loc_is_a_filter_and_a_selection(frame: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    got = frame.loc[frame["region"] == "west", "wage"].count(epsilon=BIG)
    assert abs(float(got) - int((cps["region"] == "west").sum())) <= 5
    both = frame.loc[:, ["wage", "education"]]
    assert list(both.columns) == ["wage", "education"]
    assert list(frame.loc[:, "wage":"experience"].columns) == ["wage", "education", "experience"]
    assert list(frame.loc[frame["wage"] > 100].columns) == list(frame.columns)
    with pytest.raises(dp.PrivacyViolationError, match=r"pf\.loc\[3\] picks rows by label"):
        frame.loc[3]
    with pytest.raises(dp.SchemaError, match=r"pf\['col'\] = pf\['col'\]\.mask\(condition"):
        frame.loc[frame["wage"] > 4000, "wage"] = 4000
    with pytest.raises(dp.PrivacyViolationError, match="would reveal private rows"):
        frame["wage"].loc[frame["wage"] > 1]  # a column has no .loc


def test_a_released_number_is_a_public_constant(frame: dp.PrivateFrame) -> None:
    mean = frame["wage"].mean(epsilon=BIG)
    centred = frame["wage"] - mean
    assert centred.bounds == pytest.approx((-float(mean), 5000 - float(mean)))
    filled = frame["wage"].fillna(mean)
    assert filled.bounds == (0.0, 5000.0)
    by_region = frame.groupby("region")["wage"].mean(epsilon=BIG)
    above = frame[frame["wage"] > by_region["south"]].count(epsilon=BIG)
    assert float(above) > 0
    whole = frame.fillna(frame.mean(epsilon=BIG))  # pandas' df.fillna(df.mean())
    assert whole["education"].bounds == (0.0, 20.0)


@pytest.mark.fresh_releases
def test_named_aggregation_in_one_charge(frame: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    got = frame.groupby("region").agg(n=("wage", "size"), pay=("wage", "mean"), epsilon=BIG)
    assert list(got.columns) == ["n", "pay"]
    truth = cps.groupby("region").size()
    assert all(abs(float(got.loc[k, "n"]) - truth[k]) <= 10 for k in truth.index)
    one = frame.groupby("region")["wage"].agg(n="size", pay="mean", epsilon=BIG)
    assert list(one.columns) == ["n", "pay"]
    assert list(frame.session.ledger["epsilon"]) == [BIG, BIG]
    with pytest.raises(dp.SchemaError, match=r"named aggregation takes \(column, aggregate\)"):
        frame.groupby("region").agg(n=3, epsilon=1)
    with pytest.raises(dp.SchemaError, match="agg\\(\\) needs aggregates"):
        frame.groupby("region").agg(epsilon=1)


def test_pivot_table_margins_are_sums_of_released_cells(frame: dp.PrivateFrame) -> None:
    table = frame.pivot_table(
        values="wage", index="region", columns="smsa", aggfunc="count", margins=True, epsilon=1
    )
    assert list(table.index) == [*sorted(CPS1988_CATEGORIES["region"]), "All"]
    assert list(table.columns) == ["no", "yes", "All"]
    cells = table.iloc[:4, :2].astype(float)
    assert float(table.to_numpy()[-1, -1]) == pytest.approx(cells.to_numpy().sum())
    bounds = dp.ci(table)
    corner = bounds.loc["All", ("All", "high")] - bounds.loc["All", ("All", "low")]
    cell = bounds.loc["south", ("yes", "high")] - bounds.loc["south", ("yes", "low")]
    assert corner >= 8 * cell > 0  # a total's interval is the sum of its cells'
    assert len(frame.session.ledger) == 1
    with pytest.raises(dp.SchemaError, match=r"margins=True.*aggfunc='count', 'sum' or 'mean'"):
        frame.pivot_table("wage", "region", "smsa", aggfunc="std", margins=True, epsilon=1)
    assert len(frame.session.ledger) == 1


def test_pivot_table_mean_margins_are_ratios_of_released_totals(
    frame: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    table = frame.pivot_table(
        values="wage", index="region", columns="smsa", aggfunc="mean", margins=True, epsilon=BIG
    )
    truth = cps.assign(wage=cps["wage"].clip(*CPS1988_BOUNDS["wage"])).pivot_table(
        values="wage", index="region", columns="smsa", aggfunc="mean", margins=True
    )
    # the declared order of the keys (pandas sorts them), "All" last as pandas
    assert list(table.index) == [*sorted(CPS1988_CATEGORIES["region"]), "All"]
    assert set(table.columns) == set(truth.columns) and table.columns[-1] == "All"
    assert (table.index.name, table.columns.name) == ("region", "smsa")
    got = table.to_numpy(dtype=float)
    assert got == pytest.approx(truth.loc[table.index, table.columns].to_numpy(), rel=1e-6)
    assert len(frame.session.ledger) == 1  # one charge: the cells' sums and counts
    noisy = frame.pivot_table(
        values="wage", index="region", columns="smsa", aggfunc="mean", margins=True, epsilon=0.5
    )
    bounds = dp.ci(noisy, level=1 - 1e-8)  # 12 released numbers: a false failure below 1e-6
    inside = [
        bounds.loc[row, (column, "low")]
        <= truth.loc[row, column]
        <= bounds.loc[row, (column, "high")]
        for row in noisy.index
        for column in noisy.columns
    ]
    assert all(inside), bounds  # interval arithmetic on the cells' intervals: all covered


def test_nunique_of_frames_and_groups_counts_declared_keys(
    frame: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    keyed = frame[["region", "smsa", "education"]]
    got = keyed.nunique(epsilon=BIG)
    assert got.to_dict() == cps[["region", "smsa", "education"]].nunique().to_dict()
    per_region = frame.groupby("region")["education"].nunique(epsilon=BIG)
    truth = cps.groupby("region")["education"].nunique()
    assert per_region.name == "education"
    assert per_region.to_dict() == truth.to_dict()  # at ε = 10⁶ a one-row key clears the bar
    assert len(frame.session.ledger) == 2
    assert len(frame.session.ledger) == 2
    every = frame.nunique(epsilon=BIG)  # keyless wage: a distinct count in the same charge
    assert every.to_dict() == cps.nunique().to_dict()
    assert len(frame.session.ledger) == 3
    # a keyless column alone (or per group) is a distinct count of its own (issue 29)
    wages = cps["wage"]  # distinct values are counted as they are (bounds clamp sums only)
    assert float(frame["wage"].nunique(epsilon=BIG)) == wages.nunique()
    by_region = frame.groupby("region")["wage"].nunique(epsilon=BIG)
    assert by_region.to_dict() == wages.groupby(cps["region"]).nunique().to_dict()
    assert len(frame.session.ledger) == 5


def test_hist_draws_as_pandas_and_returns_the_counts(frame: dp.PrivateFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    counts = frame["wage"].hist(bins=5, epsilon=BIG, draw=True)  # the default in IPython
    assert len(plt.get_fignums()) == 1  # drawn
    assert plt.gca().get_title() == "hist(wage, 5 bins)"
    assert len(counts) == 5 and counts.name == "count"
    frame["wage"].hist(bins=5, epsilon=BIG, draw=False)
    frame["wage"].hist(bins=2_000, epsilon=BIG, draw=True)  # too many bars to draw
    assert len(plt.get_fignums()) == 1  # not drawn again
    plt.close("all")
