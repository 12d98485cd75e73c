"""The 60 everyday pandas operations of issue 15, typed as an analyst would, against dpframe.

Re-runs ``/work/shared/reference/everyday_pandas.md`` (also quoted in the
issue) on the bundled CPS 1988 data, with the columns analysts reach for
added deterministically: ``earnings`` (the wage), ``age`` (from education
and experience), ``gender`` and ``name`` (synthetic), ``date`` (synthetic,
2005-2014).  Pure DP, ε = 1 per call.  Each row holds one or more attempts,
each classified:

* **W** works: an answer of pandas' shape (checked against plain pandas
  where a check is given);
* **R** a clear refusal: a ``dp.DPError`` (or dpframe's ``AttributeError``
  subclass) saying what to do instead;
* **C** a crash or confusing result: any other exception, or a failed check;
* **S** silently surprising (only row 59 can be: too narrow bounds clamp).

A row is W when every attempt works, C when any crashes, S when its check
says so, else R (some attempts refused).  Run: ``python -m benchmarks.everyday_pandas``.
"""

# ruff: noqa: E501  (the 60 rows are a table: one attempt per line, as the analyst typed it)
from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.releases import new_releases
from dpframe.examples.datasets import CPS1988_CATEGORIES, load_cps1988

EPS = 1.0


def analyst_table() -> pd.DataFrame:
    """The CPS rows with the columns the 60 operations use (deterministic)."""
    data = load_cps1988().copy()
    rng = np.random.default_rng(60)
    n = len(data)
    data["earnings"] = data["wage"]
    data["age"] = (data["education"] + data["experience"] + 6).clip(16, 90).astype(float)
    data.loc[rng.random(n) < 0.02, "age"] = np.nan
    data["gender"] = np.where(rng.random(n) < 0.5, "female", "male")
    names = np.asarray(["Smith", "Jones", "Garcia", "Lee", "Brown", "Nguyen"], dtype=object)
    data["name"] = names[rng.integers(0, len(names), n)]
    start = pd.Timestamp("2005-01-01").value // 86_400_000_000_000
    days = rng.integers(start, start + 3650, n)
    data["date"] = pd.to_datetime(days * 86_400_000_000_000)
    table: pd.DataFrame = data
    return table


BOUNDS: dict[str, Any] = {
    "earnings": (0.0, 5000.0),
    "wage": (0.0, 5000.0),
    "education": (0.0, 20.0),
    "experience": (-8.0, 64.0),
    "age": (16.0, 90.0),
    "date": (pd.Timestamp("2005-01-01"), pd.Timestamp("2014-12-31")),
}
CATEGORIES: dict[str, Any] = {**CPS1988_CATEGORIES, "gender": ["female", "male"]}
LOOKUP = pd.DataFrame(
    {
        "region": ["northeast", "midwest", "south", "west"],
        "division_count": [2, 2, 3, 2],
    }
)


@dataclass
class Ctx:
    """What an attempt can use: the private frame, its session, and the public truth."""

    pf: Any
    session: dp.Session
    df: pd.DataFrame


def _frame(df: pd.DataFrame, **overrides: Any) -> tuple[Any, dp.Session]:
    session = dp.Session(epsilon=1e6, ledger=":memory:", name="everyday")
    bounds = {**BOUNDS, **overrides.pop("bounds", {})}
    categories = {**CATEGORIES, **overrides.pop("categories", {})}
    pf = session.private_frame(
        df, bounds=bounds, categories=categories, dtypes={"name": "text(20)"}, **overrides
    )
    return pf, session


Check = Callable[[Any, Ctx], bool]
Attempt = tuple[str, Callable[[Ctx], Any], Check | None]


def _near(want: float, tol: float) -> Check:
    return lambda got, ctx: abs(float(got) - want) <= tol


def _series_like(got: Any, ctx: Ctx) -> bool:
    return isinstance(got, (pd.Series, pd.DataFrame)) and len(got) > 0


def _plot(result: pd.Series) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    return result.unstack().plot.bar()


def rows(df: pd.DataFrame) -> list[tuple[int, str, list[Attempt]]]:
    """The 60 rows, each a list of attempts as an analyst types them."""
    mean_age = float(df["age"].mean())
    return [
        (1, "len(df), df.shape", [
            ("len(pf)", lambda c: len(c.pf), None),
            ("pf.shape", lambda c: c.pf.shape, None),
        ]),
        (2, "head, sample, to_numpy, np.asarray, loc", [
            ("pf.head()", lambda c: c.pf.head(), None),
            ("pf.sample(100)", lambda c: c.pf.sample(100), None),
            ("pf.to_numpy()", lambda c: c.pf.to_numpy(), None),
            ("np.asarray(pf.earnings)", lambda c: np.asarray(c.pf.earnings), None),
            ("pf.loc[mask, 'earnings']", lambda c: c.pf.loc[c.pf.age > 30, "earnings"], None),
        ]),
        (3, "df.dtypes, df.columns", [
            ("pf.dtypes", lambda c: c.pf.dtypes, None),
            ("pf.columns", lambda c: c.pf.columns, None),
        ]),
        (4, "df.info()", [("pf.info()", lambda c: c.pf.info(), None)]),
        (5, "df.earnings.mean() (no ε)", [("pf.earnings.mean()", lambda c: c.pf.earnings.mean(), None)]),
        (6, "df.describe()", [("pf.describe(epsilon=1)", lambda c: c.pf.describe(epsilon=EPS), _series_like)]),
        (7, "df.describe(include='all')", [(
            "pf.describe(include='all', epsilon=1)",
            lambda c: c.pf.describe(include="all", epsilon=EPS),
            lambda got, c: "top" in got.index and got.loc["top", "region"] == "south",
        )]),
        (8, "s.value_counts()", [("pf.region.value_counts(epsilon=1)", lambda c: c.pf.region.value_counts(epsilon=EPS), _series_like)]),
        (9, "value_counts(normalize=True)", [(
            "pf.region.value_counts(normalize=True, epsilon=1)",
            lambda c: c.pf.region.value_counts(normalize=True, epsilon=EPS),
            lambda got, c: abs(float(got.sum()) - 1) < 1e-6,
        )]),
        (10, "groupby('region').earnings.mean()", [("pf.groupby('region').earnings.mean(epsilon=1)", lambda c: c.pf.groupby("region").earnings.mean(epsilon=EPS), _series_like)]),
        (11, "groupby(['region','gender']).earnings.mean()", [("pf.groupby(['region','gender']).earnings.mean(epsilon=1)", lambda c: c.pf.groupby(["region", "gender"]).earnings.mean(epsilon=EPS), _series_like)]),
        (12, ".agg({'earnings':'mean','age':'median'})", [(
            "pf.agg({'earnings': 'mean', 'age': 'median'}, epsilon=1)",
            lambda c: c.pf.agg({"earnings": "mean", "age": "median"}, epsilon=EPS),
            _series_like,
        )]),
        (13, ".earnings.agg(['mean','std'])", [("pf.earnings.agg(['mean', 'std'], epsilon=1)", lambda c: c.pf.earnings.agg(["mean", "std"], epsilon=EPS), _series_like)]),
        (14, "groupby('gender').size()", [("pf.groupby('gender').size(epsilon=1)", lambda c: c.pf.groupby("gender").size(epsilon=EPS), _series_like)]),
        (15, "groupby('region').earnings.median()", [("pf.groupby('region').earnings.median(epsilon=1)", lambda c: c.pf.groupby("region").earnings.median(epsilon=EPS), _series_like)]),
        (16, "groupby(...).std()", [("pf.groupby('region').earnings.std(epsilon=1)", lambda c: c.pf.groupby("region").earnings.std(epsilon=EPS), _series_like)]),
        (17, "s.quantile([.1,.5,.9])", [("pf.earnings.quantile([.1, .5, .9], epsilon=1)", lambda c: c.pf.earnings.quantile([0.1, 0.5, 0.9], epsilon=EPS), _series_like)]),
        (18, "s.max(), s.min()", [
            ("pf.earnings.max()", lambda c: c.pf.earnings.max(), None),
            ("pf.earnings.min()", lambda c: c.pf.earnings.min(), None),
        ]),
        (19, "pd.crosstab(df.region, df.gender)", [
            ("pd.crosstab(pf.region, pf.gender)", lambda c: pd.crosstab(c.pf.region, c.pf.gender), None),
            ("dp.crosstab(pf.region, pf.gender, epsilon=1)", lambda c: dp.crosstab(c.pf.region, c.pf.gender, epsilon=EPS), _series_like),
        ]),
        (20, "pivot_table('earnings','region','gender','mean')", [(
            "pf.pivot_table('earnings', 'region', 'gender', 'mean', epsilon=1)",
            lambda c: c.pf.pivot_table("earnings", "region", "gender", "mean", epsilon=EPS),
            _series_like,
        )]),
        (21, "df[['a','b']].corr(), s.corr(t)", [
            ("pf[['earnings', 'age']].corr(epsilon=1)", lambda c: c.pf[["earnings", "age"]].corr(epsilon=EPS), lambda got, c: got.shape == (2, 2)),
            ("pf.earnings.corr(pf.age, epsilon=1)", lambda c: c.pf.earnings.corr(c.pf.age, epsilon=EPS), lambda got, c: -1 <= got <= 1),
        ]),
        (22, "s.cov(t)", [("pf.earnings.cov(pf.age, epsilon=1)", lambda c: c.pf.earnings.cov(c.pf.age, epsilon=EPS), lambda got, c: np.isfinite(got))]),
        (23, "pd.cut -> derived column", [
            ("pd.cut(pf.age, [0, 30, 50, 100])", lambda c: pd.cut(c.pf.age, [0, 30, 50, 100]), None),
            ("pf.assign(band=dp.cut(pf.age, [0, 30, 50, 100]))", lambda c: c.pf.assign(band=dp.cut(c.pf.age, [0, 30, 50, 100])), None),
        ]),
        (24, "pd.cut(...).value_counts()", [("dp.cut(pf.age, [0, 30, 50, 100]).value_counts(epsilon=1)", lambda c: dp.cut(c.pf.age, [0, 30, 50, 100]).value_counts(epsilon=EPS), _series_like)]),
        (25, "pd.qcut(s, 4)", [
            ("pd.qcut(pf.earnings, 4)", lambda c: pd.qcut(c.pf.earnings, 4), None),
            ("dp.qcut(pf.earnings, 4, epsilon=1)", lambda c: dp.qcut(c.pf.earnings, 4, epsilon=EPS), None),
        ]),
        (26, "df.date.dt.year / dt.month", [
            ("pf.date.dt.year.value_counts(epsilon=1)", lambda c: c.pf.date.dt.year.value_counts(epsilon=EPS), _series_like),
            ("pf.date.dt.month.value_counts(epsilon=1)", lambda c: c.pf.date.dt.month.value_counts(epsilon=EPS), _series_like),
        ]),
        (27, "df[df.date >= '2010-01-01']", [("pf[pf.date >= '2010-01-01'].count(epsilon=1)", lambda c: c.pf[c.pf.date >= "2010-01-01"].count(epsilon=EPS), None)]),
        (28, "df.name.str.lower(), .str.contains", [
            ("pf.name.str.lower().value_counts(epsilon=1)", lambda c: c.pf.name.str.lower().value_counts(epsilon=EPS), None),
            ("pf.name.str.contains('mi').sum(epsilon=1)", lambda c: c.pf.name.str.contains("mi").sum(epsilon=EPS), None),
        ]),
        (29, "df[df.name=='Smith']", [("pf[pf.name == 'Smith'].count(epsilon=1)", lambda c: c.pf[c.pf.name == "Smith"].count(epsilon=EPS), None)]),
        (30, "s.fillna(15)", [("pf.age.fillna(15).mean(epsilon=1)", lambda c: c.pf.age.fillna(15).mean(epsilon=EPS), _near(float(df["age"].fillna(15).mean()), 1))]),
        (31, "s.astype(float)", [("pf.age.astype(float).mean(epsilon=1)", lambda c: c.pf.age.astype(float).mean(epsilon=EPS), _near(mean_age, 1))]),
        (32, "df.rename(columns=...)", [("pf.rename(columns={'earnings': 'pay'}).pay.mean(epsilon=1)", lambda c: c.pf.rename(columns={"earnings": "pay"}).pay.mean(epsilon=EPS), None)]),
        (33, "df.query('age > 30')", [("pf.query('age > 30').count(epsilon=1)", lambda c: c.pf.query("age > 30").count(epsilon=EPS), None)]),
        (34, "df[df.age>30].earnings.mean()", [("pf[pf.age > 30].earnings.mean(epsilon=1)", lambda c: c.pf[c.pf.age > 30].earnings.mean(epsilon=EPS), None)]),
        (35, "df.age attribute access", [("pf.age", lambda c: c.pf.age, None)]),
        (36, "s.isna().sum()", [(
            "pf.age.isna().sum(epsilon=1)",
            lambda c: c.pf.age.isna().sum(epsilon=EPS),
            lambda got, c: float(got).is_integer(),
        )]),
        (37, "s.count() (non-null)", [("pf.age.count(epsilon=1)", lambda c: c.pf.age.count(epsilon=EPS), None)]),
        (38, "s.nunique()", [("pf.region.nunique(epsilon=1)", lambda c: c.pf.region.nunique(epsilon=EPS), None)]),
        (39, "df.merge(lookup, on='region'), s.map({...})", [
            ("pf.merge(lookup, on='region').division_count.mean(epsilon=1)", lambda c: c.pf.merge(LOOKUP, on="region").division_count.mean(epsilon=EPS), None),
            ("pf.region.map({...}).value_counts(epsilon=1)", lambda c: c.pf.region.map({"south": "S", "west": "W"}).value_counts(epsilon=EPS), _series_like),
        ]),
        (40, "pd.concat([df1, df2])", [("pd.concat([pf, pf])", lambda c: pd.concat([c.pf, c.pf]), None)]),
        (41, "count by month (dt.to_period('M'))", [(
            "pf.groupby(pf.date.dt.to_period('M')).size(epsilon=1)",
            lambda c: c.pf.groupby(c.pf.date.dt.to_period("M")).size(epsilon=EPS),
            lambda got, c: len(got) == 120,
        )]),
        (42, ".rolling(3).mean() over monthly counts", [(
            "...size(epsilon=1).rolling(3).mean()",
            lambda c: c.pf.assign(m=c.pf.date.dt.to_period("M")).groupby("m").size(epsilon=EPS).rolling(3).mean(),
            _series_like,
        )]),
        (43, "top-k categories", [("pf.region.value_counts(epsilon=1).nlargest(3)", lambda c: c.pf.region.value_counts(epsilon=EPS).nlargest(3), _series_like)]),
        (44, "histogram plot", [("pf.earnings.hist(bins=20, epsilon=1)", lambda c: c.pf.earnings.hist(bins=20, epsilon=EPS), _series_like)]),
        (45, "grouped bar plot", [("pf.groupby(['region','gender']).size(epsilon=1).unstack().plot.bar()", lambda c: _plot(c.pf.groupby(["region", "gender"]).size(epsilon=EPS)), None)]),
        (46, "df.boxplot('earnings', by='region')", [("pf.boxplot('earnings', by='region')", lambda c: c.pf.boxplot("earnings", by="region"), None)]),
        (47, "groupby(pd.cut(age,...)).earnings.mean()", [
            ("pf.groupby(pd.cut(pf.age, bins)).earnings.mean(epsilon=1)", lambda c: c.pf.groupby(pd.cut(c.pf.age, [0, 30, 50, 100])).earnings.mean(epsilon=EPS), None),
            ("pf.groupby(dp.cut(pf.age, bins)).earnings.mean(epsilon=1)", lambda c: c.pf.groupby(dp.cut(c.pf.age, [0, 30, 50, 100])).earnings.mean(epsilon=EPS), _series_like),
        ]),
        (48, "(df.age>40).mean()", [("(pf.age > 40).mean(epsilon=1)", lambda c: (c.pf.age > 40).mean(epsilon=EPS), None)]),
        (49, "ratio of two sums", [("pf.earnings.sum(epsilon=1) / pf.age.sum(epsilon=1)", lambda c: c.pf.earnings.sum(epsilon=EPS) / c.pf.age.sum(epsilon=EPS), None)]),
        (50, "np.average(x, weights=w)", [
            ("np.average(pf.earnings, weights=pf.age)", lambda c: np.average(c.pf.earnings, weights=c.pf.age), None),
            ("(pf.earnings * pf.age).sum(epsilon=1) / pf.age.sum(epsilon=1)", lambda c: (c.pf.earnings * c.pf.age).sum(epsilon=EPS) / c.pf.age.sum(epsilon=EPS), None),
        ]),
        (51, "sort_values().head(), nlargest", [
            ("pf.sort_values('earnings').head()", lambda c: c.pf.sort_values("earnings").head(), None),
            ("pf.nlargest(5, 'earnings')", lambda c: c.pf.nlargest(5, "earnings"), None),
        ]),
        (52, "drop_duplicates, dropna, set_index, where, apply", [
            ("pf.drop_duplicates()", lambda c: c.pf.drop_duplicates(), None),
            ("pf.dropna().count(epsilon=1)", lambda c: c.pf.dropna().count(epsilon=EPS), None),
            ("pf.set_index('region')", lambda c: c.pf.set_index("region"), None),
            ("pf.age.where(pf.age > 20).mean(epsilon=1)", lambda c: c.pf.age.where(c.pf.age > 20).mean(epsilon=EPS), None),
            ("pf.age.apply(f)", lambda c: c.pf.age.apply(lambda v: v + 1), None),
        ]),
        (53, "np.log(s), s**2, s//10", [
            ("np.log(pf.earnings).mean(epsilon=1)", lambda c: np.log(c.pf.earnings.clip(1, 5000)).mean(epsilon=EPS), None),
            ("np.log(pf.earnings) (bounds include 0)", lambda c: np.log(c.pf.earnings), None),
            ("(pf.earnings ** 2).mean(epsilon=1)", lambda c: (c.pf.earnings**2).mean(epsilon=EPS), None),
            ("(pf.age // 10).value_counts? -> .mean(epsilon=1)", lambda c: (c.pf.age // 10).mean(epsilon=EPS), None),
        ]),
        (54, "sum of a column with no bounds", [("pf.assign(x=pf.earnings / pf.age).x.sum(epsilon=1)", lambda c: c.pf.assign(x=c.pf.earnings / (c.pf.age - 50)).x.sum(epsilon=EPS), None)]),
        (55, "groupby('education') on an undeclared column", [("pf.groupby('education').earnings.mean(epsilon=1)", lambda c: c.pf.groupby("education").earnings.mean(epsilon=EPS), None)]),
        (56, "groupby('region').sum() over all columns", [("pf.groupby('region').sum(epsilon=1)", lambda c: c.pf.groupby("region").sum(epsilon=EPS), _series_like)]),
        (57, "NaN semantics: df[df.x != 20] keeps NaN rows", [(
            "pf[pf.age != 20].count(epsilon=1000)",
            lambda c: c.pf[c.pf.age != 20].count(epsilon=1000),
            _near(float((df["age"] != 20).sum()), 20),
        )]),
        (58, "categories spelled differently (South vs south)", [(
            "value_counts with categories=['South', ...] (warns?)",
            _misspelled,
            lambda got, c: got,
        )]),
        (59, "bounds too narrow (earnings in (0, 20))", [(
            "pf.with_bounds(earnings=(0, 20)).earnings.mean(epsilon=1)",
            lambda c: c.pf.with_bounds(earnings=(0, 20)).earnings.mean(epsilon=EPS),
            lambda got, c: abs(float(got) - float(c.df["earnings"].mean())) < 100,
        )]),
        (60, "CI / accuracy before spending", [
            ("session.explain(lambda: pf.earnings.mean(epsilon=1))", lambda c: c.session.explain(lambda: c.pf.earnings.mean(epsilon=EPS)), None),
            ("pf.earnings.mean(epsilon=1).ci()", lambda c: c.pf.earnings.mean(epsilon=EPS).ci(), None),
        ]),
    ]  # fmt: skip


def _misspelled(ctx: Ctx) -> bool:
    """True when declaring 'South' for data spelled 'south' warns (loud, not silent)."""
    pf, _ = _frame(ctx.df, categories={"region": ["Northeast", "Midwest", "South", "West"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pf.region.value_counts(epsilon=EPS)
    return any("outside the declared" in str(w.message) for w in caught)


def classify(attempt: Attempt, ctx: Ctx) -> tuple[str, str]:
    """(status, detail) of one attempt."""
    _, call, check = attempt
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = call(ctx)
    except dp.DPError as exc:
        return "R", f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
    except Exception as exc:
        return "C", f"{type(exc).__name__}: {str(exc).splitlines()[0][:150] if str(exc) else ''}"
    if check is not None:
        try:
            ok = bool(check(got, ctx))
        except Exception as exc:
            return "C", f"check failed: {type(exc).__name__}: {exc}"
        if not ok:
            return "S", f"check failed on {type(got).__name__}"
    return "W", type(got).__name__


def run(verbose: bool = True) -> dict[str, list[int]]:
    """Run every row; print one line per row (and per attempt with ``verbose``)."""
    df = analyst_table()
    pf, session = _frame(df)
    ctx = Ctx(pf, session, df)
    summary: dict[str, list[int]] = {"W": [], "R": [], "C": [], "S": []}
    for number, text, attempts in rows(df):
        results = [classify(a, ctx) for a in attempts]
        statuses = {s for s, _ in results}
        if "C" in statuses:
            status = "C"
        elif "S" in statuses:
            status = "S"
        elif statuses == {"W"}:
            status = "W"
        else:
            status = "R" if statuses == {"R"} else "R+W"
        summary["R" if status == "R+W" else status].append(number)
        print(f"{number:>2} {status:<3} {text}")
        if verbose:
            for (shown, _, _), (s, detail) in zip(attempts, results, strict=True):
                print(f"       {s}  {shown}  ->  {detail}")
    print()
    for key, numbers in summary.items():
        print(f"{key}: {len(numbers):>2}  rows {numbers}")
    return summary


def main() -> None:
    """Command line: ``python -m benchmarks.everyday_pandas [--quiet]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quiet", action="store_true", help="one line per row")
    run(verbose=not parser.parse_args().quiet)


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
