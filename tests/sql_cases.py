"""The SQL conformance suite's queries, their DuckDB references and their pandas spellings.

Each :class:`Case` is a query for ``session.sql``, the query DuckDB answers on
the clamped raw data when it differs (``VAR_POP`` for the population variance
dpframe releases), and the pandas spelling whose release node the query must
build (None where the facade has none, e.g. CASE). Tables: ``cps`` (the
bundled CPS 1988 data), ``dated`` (the same rows with dates and free text,
``tests/dated_cps.py``) and ``regions`` (a public lookup table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

import dpframe as dp

Spelling = Callable[[Any, float], object]

#: The public lookup table joined by the JOIN cases.
REGIONS = pd.DataFrame(
    {
        "region": ["northeast", "midwest", "south", "west"],
        "division": ["coastal", "inland", "coastal", "coastal"],
        "pop_m": [51.0, 59.7, 85.4, 48.9],
    }
)


@dataclass(frozen=True)
class Tables:
    """The private frames and the session the pandas spellings use."""

    pf: dp.PrivateFrame
    dated: dp.PrivateFrame
    regions: pd.DataFrame


@dataclass(frozen=True)
class Case:
    """One conformance query.

    ``rows`` (quantiles only) is a DuckDB query giving the clamped values the
    quantile ranks (column ``v``, after the group keys), for the rank check;
    ``levels`` the quantile level of each answer column (None: not a quantile).
    """

    name: str
    sql: str
    pandas: Callable[[Tables, float], object] | None = None
    duck: str | None = None
    epsilon: float = 1.0
    delta: float | None = None
    weights: tuple[int, ...] | None = None
    rows: str | None = None
    levels: tuple[float | None, ...] = ()

    @property
    def reference(self) -> str:
        """The query DuckDB answers."""
        return self.duck or self.sql


def _agg(frame: Any, spec: dict[str, list[str]], e: float, **kw: Any) -> object:
    return frame.assign(**{"*": 1}).agg(spec, epsilon=e, **kw)


def _grouped_agg(frame: Any, by: str, spec: dict[str, list[str]], e: float) -> object:
    return frame.assign(**{"*": 1}).groupby(by).agg(spec, epsilon=e)


def _cte(t: Tables, e: float) -> object:
    f = t.pf[t.pf["education"] >= 12]
    hourly = f.assign(hourly=f["wage"] / 40)[["hourly", "region"]]
    return hourly.groupby("region")["hourly"].mean(epsilon=e)


def _subquery(t: Tables, e: float) -> object:
    s = t.pf[t.pf["smsa"] == "yes"]
    s = s[list(s.columns)]
    return s[s["education"] > 12].count(epsilon=e)


def _by_year(t: Tables, e: float) -> object:
    d = t.dated
    return d.assign(year=d["date"].dt.year).groupby("year").size(epsilon=e)


def _by_month(t: Tables, e: float) -> object:
    d = t.dated[t.dated["date"] >= pd.Timestamp("2010-01-01")]
    return d.assign(m=d["date"].dt.month).groupby("m").size(epsilon=e)


def _not_in(t: Tables, e: float) -> object:
    pf = t.pf
    return pf[~pf["region"].isin(["south"]) & pf["region"].notna()].count(epsilon=e)


CASES: list[Case] = [
    Case("count rows", "SELECT COUNT(*) FROM cps", lambda t, e: t.pf.count(epsilon=e)),
    Case("count column", "SELECT COUNT(wage) FROM cps", lambda t, e: t.pf["wage"].count(epsilon=e)),
    Case("sum", "SELECT SUM(wage) FROM cps", lambda t, e: t.pf["wage"].sum(epsilon=e)),
    Case(
        "mean with a filter",
        "SELECT AVG(wage) FROM cps WHERE education >= 12",
        lambda t, e: t.pf[t.pf["education"] >= 12]["wage"].mean(epsilon=e),
    ),
    Case(
        "variance",
        "SELECT VARIANCE(wage) FROM cps",
        lambda t, e: t.pf["wage"].var(epsilon=e),
        duck="SELECT VAR_POP(wage) FROM cps",
    ),
    Case(
        "standard deviation",
        "SELECT STDDEV_POP(experience) FROM cps",
        lambda t, e: t.pf["experience"].std(epsilon=e),
    ),
    Case(
        "median",
        "SELECT MEDIAN(wage) FROM cps",
        lambda t, e: t.pf["wage"].median(epsilon=e),
        rows="SELECT wage AS v FROM cps",
        levels=(0.5,),
    ),
    Case(
        "percentile",
        "SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY wage) FROM cps",
        lambda t, e: t.pf["wage"].quantile(0.9, epsilon=e),
        rows="SELECT wage AS v FROM cps",
        levels=(0.9,),
    ),
    Case(
        "two percentiles",
        "SELECT PERCENTILE_CONT(0.25) WITHIN GROUP (ORDER BY wage), "
        "quantile_cont(wage, 0.75) FROM cps",
        lambda t, e: t.pf["wage"].quantile([0.25, 0.75], epsilon=e),
        rows="SELECT wage AS v FROM cps",
        levels=(0.25, 0.75),
    ),
    Case(
        "count distinct",
        "SELECT COUNT(DISTINCT region) FROM cps",
        lambda t, e: t.pf["region"].nunique(epsilon=e),
    ),
    Case(
        "<> drops NULLs",
        "SELECT COUNT(*) FROM cps WHERE region <> 'south'",
        lambda t, e: t.pf[(t.pf["region"] != "south") & t.pf["region"].notna()].count(epsilon=e),
    ),
    Case(
        "NOT",
        "SELECT AVG(wage) FROM cps WHERE NOT (education >= 12)",
        lambda t, e: t.pf[t.pf["education"] < 12]["wage"].mean(epsilon=e),
    ),
    Case(
        "IN",
        "SELECT COUNT(*) FROM cps WHERE region IN ('south', 'west')",
        lambda t, e: t.pf[t.pf["region"].isin(["south", "west"])].count(epsilon=e),
    ),
    Case("NOT IN", "SELECT COUNT(*) FROM cps WHERE region NOT IN ('south')", _not_in),
    Case(
        "BETWEEN",
        "SELECT SUM(wage) FROM cps WHERE experience BETWEEN 10 AND 20",
        lambda t, e: t.pf[t.pf["experience"].between(10, 20)]["wage"].sum(epsilon=e),
    ),
    Case(
        "LIKE prefix",
        "SELECT COUNT(*) FROM cps WHERE region LIKE 'south%'",
        lambda t, e: t.pf[t.pf["region"].str.startswith("south", na=False)].count(epsilon=e),
    ),
    Case(
        "LIKE infix",
        "SELECT COUNT(*) FROM cps WHERE region LIKE '%west%'",
        lambda t, e: t.pf[t.pf["region"].str.contains("west", regex=False, na=False)].count(
            epsilon=e
        ),
    ),
    Case(
        "ILIKE",
        "SELECT COUNT(*) FROM cps WHERE region ILIKE 'SOUTH'",
        lambda t, e: t.pf[t.pf["region"].str.lower() == "south"].count(epsilon=e),
    ),
    Case(
        "LIKE with _",
        "SELECT COUNT(*) FROM cps WHERE region LIKE 'm_dwest'",
        lambda t, e: t.pf[t.pf["region"].str.contains("(?s)^m.dwest$", regex=True, na=False)].count(
            epsilon=e
        ),
    ),
    Case(
        "IS NOT NULL",
        "SELECT COUNT(*) FROM cps WHERE wage IS NOT NULL",
        lambda t, e: t.pf[t.pf["wage"].notna()].count(epsilon=e),
    ),
    Case(
        "AND and OR",
        "SELECT COUNT(*) FROM cps WHERE (education >= 16 OR experience > 30) AND region = 'west'",
        lambda t, e: t.pf[
            ((t.pf["education"] >= 16) | (t.pf["experience"] > 30)) & (t.pf["region"] == "west")
        ].count(epsilon=e),
    ),
    Case(
        "arithmetic argument",
        "SELECT AVG(wage / 40) FROM cps",
        lambda t, e: (t.pf["wage"] / 40).mean(epsilon=e),
    ),
    Case(
        "arithmetic filter",
        "SELECT COUNT(*) FROM cps WHERE education + experience > 40",
        lambda t, e: t.pf[(t.pf["education"] + t.pf["experience"]) > 40].count(epsilon=e),
    ),
    Case(
        "CASE of constants",
        "SELECT SUM(CASE WHEN parttime = 'yes' THEN 1 ELSE 0 END) FROM cps",
    ),
    Case(
        "CASE with a column",
        "SELECT AVG(CASE WHEN region = 'south' THEN wage ELSE 0 END) FROM cps",
        lambda t, e: t.pf["wage"].where(t.pf["region"] == "south", 0).mean(epsilon=e),
    ),
    Case(
        "CAST",
        "SELECT AVG(CAST(education AS DOUBLE)) FROM cps",
        lambda t, e: t.pf["education"].astype(float).mean(epsilon=e),
    ),
    Case(
        "integer division",
        "SELECT COUNT(*) FROM cps WHERE experience // 10 = 0",
        lambda t, e: t.pf[(t.pf["experience"] / 10).astype(int) == 0].count(epsilon=e),
    ),
    Case(
        "modulo",
        "SELECT COUNT(*) FROM cps WHERE education % 2 = 0",
        lambda t, e: t.pf[t.pf["education"] % 2 == 0].count(epsilon=e),
    ),
    Case(
        "ABS",
        "SELECT AVG(ABS(experience - 20)) FROM cps",
        lambda t, e: (t.pf["experience"] - 20).abs().mean(epsilon=e),
    ),
    Case(
        "several aggregates",
        "SELECT COUNT(*), AVG(wage), SUM(education) FROM cps",
        lambda t, e: _agg(t.pf, {"*": ["count"], "wage": ["mean"], "education": ["sum"]}, e),
        epsilon=3.0,
    ),
    Case(
        "weights",
        "SELECT AVG(wage), AVG(education) FROM cps",
        lambda t, e: t.pf.agg({"wage": ["mean"], "education": ["mean"]}, epsilon=e, weights=[3, 1]),
        weights=(3, 1),
    ),
    Case(
        "median among others",
        "SELECT MEDIAN(wage), AVG(wage) FROM cps",
        lambda t, e: t.pf.agg({"wage": ["median", "mean"]}, epsilon=e),
        epsilon=2.0,
        rows="SELECT wage AS v FROM cps",
        levels=(0.5, None),
    ),
    Case(
        "grouped mean",
        "SELECT region, AVG(wage) FROM cps GROUP BY region",
        lambda t, e: t.pf.groupby("region")["wage"].mean(epsilon=e),
    ),
    Case(
        "grouped count",
        "SELECT region, COUNT(*) FROM cps GROUP BY region",
        lambda t, e: t.pf.groupby("region").size(epsilon=e),
    ),
    Case(
        "two keys",
        "SELECT ethnicity, parttime, COUNT(*) FROM cps GROUP BY ethnicity, parttime",
        lambda t, e: t.pf.groupby(["ethnicity", "parttime"]).size(epsilon=e),
    ),
    Case(
        "grouped, several aggregates",
        "SELECT region, AVG(wage), COUNT(*) FROM cps WHERE education >= 12 GROUP BY region",
        lambda t, e: _grouped_agg(
            t.pf[t.pf["education"] >= 12], "region", {"wage": ["mean"], "*": ["count"]}, e
        ),
        epsilon=2.0,
    ),
    Case(
        "grouped standard deviation",
        "SELECT smsa, STDDEV_POP(wage) FROM cps GROUP BY smsa",
        lambda t, e: t.pf.groupby("smsa")["wage"].std(epsilon=e),
    ),
    Case(
        "CASE buckets as keys",
        "SELECT CASE WHEN education < 12 THEN 'low' WHEN education < 16 THEN 'mid' "
        "ELSE 'high' END AS level, COUNT(*) FROM cps GROUP BY level",
    ),
    Case(
        "grouped median",
        "SELECT region, MEDIAN(wage) FROM cps GROUP BY region",
        lambda t, e: t.pf.groupby("region")["wage"].median(epsilon=e),
        rows="SELECT region, wage AS v FROM cps",
        levels=(0.5,),
    ),
    Case(
        "HAVING on an aggregate not shown",
        "SELECT region, AVG(wage) AS m FROM cps GROUP BY region HAVING COUNT(*) > 6500",
        lambda t, e: _grouped_agg(t.pf, "region", {"wage": ["mean"], "*": ["count"]}, e),
        epsilon=2.0,
    ),
    Case(
        "ORDER BY and LIMIT",
        "SELECT region, COUNT(*) AS n FROM cps GROUP BY region ORDER BY n DESC LIMIT 2",
        lambda t, e: t.pf.groupby("region").size(epsilon=e),
    ),
    Case(
        "ORDER BY a key",
        "SELECT region, AVG(wage) FROM cps GROUP BY region ORDER BY region",
        lambda t, e: t.pf.groupby("region")["wage"].mean(epsilon=e),
    ),
    Case(
        "JOIN a public table",
        "SELECT r.division, COUNT(*) FROM cps c JOIN regions r ON c.region = r.region "
        "GROUP BY r.division",
        lambda t, e: (
            t.pf.merge(t.regions, on="region", how="inner").groupby("division").size(epsilon=e)
        ),
    ),
    Case(
        "LEFT JOIN USING",
        "SELECT AVG(pop_m) FROM cps LEFT JOIN regions USING (region)",
        lambda t, e: t.pf.merge(t.regions, on="region", how="left")["pop_m"].mean(epsilon=e),
    ),
    Case(
        "WITH",
        "WITH t AS (SELECT wage / 40 AS hourly, region FROM cps WHERE education >= 12) "
        "SELECT region, AVG(hourly) FROM t GROUP BY region",
        _cte,
    ),
    Case(
        "subquery in FROM",
        "SELECT COUNT(*) FROM (SELECT * FROM cps WHERE smsa = 'yes') s WHERE education > 12",
        _subquery,
    ),
    Case(
        "keys discovered with a delta",
        "SELECT wage, COUNT(*) FROM cps GROUP BY wage",  # a float: its bounds declare no keys
        lambda t, e: t.pf.groupby("wage").size(epsilon=e, delta=1e-7),
        delta=1e-7,
    ),
    Case(
        "EXTRACT year as a key",
        "SELECT EXTRACT(YEAR FROM date) AS year, COUNT(*) FROM dated GROUP BY year",
        _by_year,
    ),
    Case(
        "date filter and MONTH",
        "SELECT MONTH(date) AS m, COUNT(*) FROM dated WHERE date >= DATE '2010-01-01' GROUP BY m",
        _by_month,
    ),
    Case(
        "text function",
        "SELECT COUNT(*) FROM dated WHERE LOWER(comment) LIKE '%night%'",
        lambda t, e: t.dated[
            t.dated["comment"].str.lower().str.contains("night", regex=False, na=False)
        ].count(epsilon=e),
    ),
    Case(
        "arithmetic of aggregates",
        "SELECT region, SUM(wage) / COUNT(*) AS ratio FROM cps GROUP BY region",
        lambda t, e: _grouped_agg(t.pf, "region", {"wage": ["sum"], "*": ["count"]}, e),
    ),
]
