"""pandas keywords and forms a release does not take: refused before any charge, saying what to
write instead (``dpframe/api/keywords.py``); the ones that mean dpframe's behaviour accepted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.keywords import declare_call
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

Call = Callable[[Any], Any]


def _refused(pf: dp.PrivateFrame, call: Call, error: type[Exception], match: str) -> BaseException:
    """Run a call that must be refused with ``match``, charging nothing."""
    before = pf.session.spent
    with pytest.raises(error, match=match) as info:
        call(pf)
    assert pf.session.spent == before
    assert pf.session.spent.is_zero
    return info.value


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda pf: pf.wage.value_counts(bins=5, epsilon=0.2),
            r"^value_counts\(\) does not take bins=5: pandas would cut the data's own range, "
            r"which is private\. Instead: pf\['wage'\]\.hist\(bins=5, epsilon=\.\.\.\).*"
            r"pf\['wage'\]\.cut\(bins\)\.value_counts\(epsilon=\.\.\.\).*Nothing was charged; "
            r"value_counts\(\) takes epsilon, delta, rho, privacy, fresh, sort, normalize\.$",
        ),
        (
            lambda pf: pf.region.value_counts(dropna=False, epsilon=0.2),
            r"value_counts\(\) does not take dropna=False: .*a missing value is never one .*"
            r"pf\['region'\]\.isna\(\)\.sum\(epsilon=\.\.\.\)",
        ),
        (
            lambda pf: pf.wage.mean(skipna=False, epsilon=0.2),
            r"mean\(\) does not take skipna=False: dpframe always skips missing values .*"
            r"pf\['wage'\]\.isna\(\)\.sum\(epsilon=\.\.\.\)",
        ),
        (
            lambda pf: pf.wage.quantile(0.5, interpolation="linear", epsilon=0.2),
            r"quantile\(\) does not take interpolation='linear': a private quantile is not "
            r"interpolated .* chosen privately among public candidate values.*"
            r"quantile\(\) takes q, epsilon, delta, rho, privacy, fresh, candidates\.$",
        ),
        (
            lambda pf: pf[["wage"]].describe(percentiles=[0.1, 0.9], epsilon=1),
            r"describe\(\) does not take percentiles=\[0\.1, 0\.9\]: describe\(\) releases the "
            r"quartiles; for other levels ask pf\['wage'\]\.quantile\(\[0\.1, 0\.9\], "
            r"epsilon=\.\.\.\)",
        ),
        (
            lambda pf: pf.wage.describe(percentiles=[0.1, 0.9], epsilon=1),
            r"describe\(\) does not take percentiles=.*pf\['wage'\]\.quantile\(\[0\.1, 0\.9\]",
        ),
        (
            lambda pf: pf.wage.std(ddof=1, epsilon=1),
            r"std\(\) does not take ddof=1: std\(\) releases the population figure \(ddof=0",
        ),
        (
            lambda pf: pf.mean(numeric_only=True, epsilon=1),
            r"mean\(\) does not take numeric_only=True: .*pf\[\['a', 'b'\]\]\.mean",
        ),
        (
            lambda pf: pf.groupby("region")["wage"].mean(skipna=False, epsilon=1),
            r"mean\(\) does not take skipna=False: .*pf\['wage'\]\.isna\(\)",
        ),
        (
            lambda pf: pf.wage.sum(min_count=1, epsilon=1),
            r"^sum\(\) does not take min_count=1: dpframe does not forward keywords to pandas\. "
            r"Nothing was charged; sum\(\) takes epsilon, delta, rho, privacy, fresh\.$",
        ),
    ],
)
def test_a_pandas_keyword_is_refused_naming_the_dpframe_form(
    pf: dp.PrivateFrame, call: Call, match: str
) -> None:
    error = _refused(pf, call, dp.InvalidArgumentError, match)
    assert "Releases" not in str(error)  # no internal class names


@pytest.mark.parametrize(
    ("call", "same"),
    [
        (
            lambda pf: pf.wage.mean(skipna=True, epsilon=0.5),
            lambda pf: pf.wage.mean(epsilon=0.5),
        ),
        (lambda pf: pf.wage.std(ddof=0, epsilon=0.5), lambda pf: pf.wage.std(epsilon=0.5)),
        (
            lambda pf: pf.region.value_counts(dropna=True, epsilon=0.5),
            lambda pf: pf.region.value_counts(epsilon=0.5),
        ),
        (
            lambda pf: pf.groupby("region")["wage"].sum(skipna=True, epsilon=0.5),
            lambda pf: pf.groupby("region")["wage"].sum(epsilon=0.5),
        ),
    ],
)
def test_a_keyword_that_means_dpframe_s_behaviour_is_accepted(
    pf: dp.PrivateFrame, call: Call, same: Call
) -> None:
    """Accepted and dropped: the same request as without it, so the ledger answers that, free."""
    with_keyword = call(pf)
    cost = pf.session.spent
    assert not cost.is_zero
    without = same(pf)
    assert pf.session.spent == cost
    if isinstance(without, pd.Series):
        assert with_keyword.to_dict() == without.to_dict()
    else:
        assert float(with_keyword) == float(without)


def test_a_one_way_pivot_table_names_the_group_by(pf: dp.PrivateFrame) -> None:
    _refused(
        pf,
        lambda pf: pf.pivot_table(values="wage", index="region", epsilon=0.2),
        dp.SchemaError,
        r"^pivot_table\(\) needs columns= \(a second key column\) here\. A table of 'wage' per "
        r"'region' alone is a grouped aggregate: pf\.groupby\('region'\)\['wage'\]\.agg\('mean', "
        r"epsilon=\.\.\.\)\. Nothing was charged\.$",
    )


def test_the_named_group_by_gives_pandas_one_way_table(pf: dp.PrivateFrame) -> None:
    table = pf.groupby("region")["wage"].agg("mean", epsilon=0.5)
    assert sorted(table.index) == sorted(CPS1988_CATEGORIES["region"])


def test_a_column_indexed_by_a_condition_names_the_frame_forms(pf: dp.PrivateFrame) -> None:
    _refused(
        pf,
        lambda pf: pf["wage"][pf["education"] > 12],
        dp.SchemaError,
        r"^pf\['wage'\]\[condition\]: select the rows on the frame, then the column: "
        r"pf\[condition\]\['wage'\] or pf\.loc\[condition, 'wage'\] \(a filter, free\)",
    )
    _refused(
        pf,
        lambda pf: pf["wage"][3],
        dp.PrivacyViolationError,
        r"^pf\['wage'\]\[int\] picks values by position or label, which would reveal",
    )
    both = pf.loc[pf["education"] > 12, "wage"], pf[pf["education"] > 12]["wage"]
    plans = [repr(series.__dpframe__().plan) for series in both]
    assert plans[0] == plans[1] and "education" in plans[0]  # the forms named: one filter


def test_query_refuses_a_local_variable_naming_what_to_write(pf: dp.PrivateFrame) -> None:
    _refused(
        pf,
        lambda pf: pf.query("wage > @m"),
        dp.SchemaError,
        r"^query\(\): @m names a Python variable, which dpframe's query\(\) does not read "
        r"\(it never evaluates code\)\. Write the value into the string, "
        r"pf\.query\(f'wage > \{m!r\}'\), or write the condition as an expression: "
        r"pf\[pf\['wage'\] > m\]\. Nothing was charged\.$",
    )
    _refused(
        pf,
        lambda pf: pf.query("wage > @low and education < @high"),
        dp.SchemaError,
        r"@low names a Python variable.*f'wage > \{low!r\} and education < \{high!r\}'",
    )
    m = 600
    named = pf.query(f"wage > {m!r}"), pf[pf["wage"] > m]  # the forms named: one filter
    assert repr(named[0].plan) == repr(named[1].plan)


def test_a_group_by_s_describe_names_agg(pf: dp.PrivateFrame) -> None:
    _refused(
        pf,
        lambda pf: pf.groupby("region")["wage"].describe(epsilon=1),
        dp.DPError,
        r"PrivateGroupBy has no attribute 'describe' .*"
        r"agg\(\['count', 'mean', 'std', 'median'\], epsilon=\.\.\.\)",
    )
    table = pf.groupby("region")["wage"].agg(["count", "mean", "std", "median"], epsilon=1)
    assert list(table.columns) == ["count", "mean", "std", "median"]


@pytest.mark.parametrize(
    ("target", "name", "match"),
    [
        ("series", "means", r"PrivateSeries has no attribute 'means' .* Did you mean 'mean'\?"),
        ("frame", "describ", r"no attribute 'describ' .* Did you mean 'describe'\? Columns:"),
        ("frame", "wagee", r"Did you mean 'wage'\?"),
        ("groupby", "meen", r"PrivateGroupBy has no attribute 'meen' .* Did you mean 'mean'\?"),
        ("series", "xyzzy", r"no attribute 'xyzzy' \(dpframe does not forward to pandas\)\.$"),
    ],
)
def test_an_unknown_attribute_suggests_a_close_name(
    pf: dp.PrivateFrame, target: str, name: str, match: str
) -> None:
    owner = {"series": pf["wage"], "frame": pf, "groupby": pf.groupby("region")}[target]
    with pytest.raises(AttributeError, match=match):
        getattr(owner, name)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("wage", "pf.with_bounds(wage=(low, high))"),
        ("yrs.since.phd", "pf.with_bounds(**{'yrs.since.phd': (low, high)})"),
        ("class", "pf.with_bounds(**{'class': (low, high)})"),
        ("two words", "pf.with_bounds(**{'two words': (low, high)})"),
    ],
)
def test_declaring_a_column_is_valid_python_for_any_name(name: str, call: str) -> None:
    assert declare_call("with_bounds", name, "(low, high)") == call
    compile(call, "<message>", "eval")


def test_a_dotted_column_without_bounds_is_told_a_call_that_runs(
    session: dp.Session, cps: pd.DataFrame
) -> None:
    data = cps.rename(columns={"experience": "yrs.exp"})
    pf = session.private_frame(data, bounds={"wage": CPS1988_BOUNDS["wage"]})
    error = _refused(
        pf,
        lambda pf: pf["yrs.exp"].mean(epsilon=1),
        dp.SchemaError,
        r"call pf\.with_bounds\(\*\*\{'yrs\.exp': \(low, high\)\}\), or clip",
    )
    assert "pf.with_bounds(**{'yrs.exp': (low, high)})" in str(error)
    declared = pf.with_bounds(**{"yrs.exp": (0, 70)})  # the call named, as written
    assert declared.bounds["yrs.exp"] == (0, 70)
