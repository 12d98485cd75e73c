"""Every pandas step of issue 30 on released answers, checked alike wherever they came from.

:func:`check_steps` takes a private frame over the CPS 1988 columns (embedded,
on Dask, or opened through a curator) and checks that each step keeps the
cells' intervals (or propagates them exactly, or says it cannot).  The three
callers are ``tests/test_answer_steps.py``, ``tests/dask/test_answer_steps_on_dask.py``
and ``tests/curator/test_answer_steps_remote.py``; docs/answers.md lists the
steps as this table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.mechanisms.answers.arithmetic import PlainResultWarning
from dpframe.mechanisms.answers.value import DPValue

#: (step, what it must keep) — the rows of docs/answers.md's table.
STEPS: tuple[str, ...] = (
    "selection (loc, iloc, boolean mask)",
    "sort_values, sort_index",
    "head, tail, nlargest, nsmallest",
    "reindex, rename",
    "round (the truth's interval kept)",
    "unstack, stack, .T",
    "pd.concat",
    "+, −, scalar × (exact)",
    "cumsum, .dp.rolling(k).sum()",
    "ratio of releases (Bonferroni box)",
    "a quantile's value interval (also qcut's edges)",
    "apply: a·v + b kept; any other function plain, with a warning",
    "a chosen key (argmax, mode): how sure, in words",
    "one release's arithmetic (m − m, Series − m, s.corr(t)): a dp cell",
    "describe(include='all'): a categorical column's count and freq",
)


def _ci(result: Any) -> pd.DataFrame:
    intervals: pd.DataFrame = dp.ci(result)
    return intervals


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    np.testing.assert_allclose(a.to_numpy(dtype=float), b.to_numpy(dtype=float), rtol=1e-12)


def _dp(series: Any) -> None:
    assert str(series.dtype) == "dp", series.dtype


def check_steps(pf: Any) -> dict[str, str]:
    """Run every step of :data:`STEPS` on releases of ``pf``; return step -> "kept"."""
    done: dict[str, str] = {}

    def step(name: str, check: Callable[[], None]) -> None:
        check()
        done[name] = "kept"

    mean = pf.groupby("region")["wage"].mean(epsilon=0.2)
    sizes = pf.groupby(["region", "smsa"]).size(epsilon=0.2)
    median = pf.groupby("region")["wage"].median(epsilon=0.2)
    for released in (mean, sizes, median):
        _dp(released)
    intervals = _ci(mean)

    def selection() -> None:
        _same(_ci(mean.loc[["south", "west"]]), intervals.loc[["south", "west"]])
        _same(_ci(mean.iloc[1:3]), intervals.iloc[1:3])
        mask = mean.to_numpy(dtype=float) > float(np.median(mean.to_numpy(dtype=float)))
        _same(_ci(mean[mask]), intervals[mask])

    def sorting() -> None:
        ordered = mean.sort_values()
        _same(_ci(ordered), intervals.loc[ordered.index])
        _same(_ci(ordered.sort_index()), intervals.sort_index())

    def heads() -> None:
        _same(_ci(mean.head(2)), intervals.head(2))
        _same(_ci(mean.tail(2)), intervals.tail(2))
        top = mean.nlargest(2)
        _same(_ci(top), intervals.loc[top.index])
        bottom = mean.nsmallest(2)
        _same(_ci(bottom), intervals.loc[bottom.index])

    def relabel() -> None:
        backwards = list(reversed(mean.index))
        _same(_ci(mean.reindex(backwards)), intervals.loc[backwards])
        _same(_ci(mean.rename(str.upper)), intervals.rename(str.upper))

    def rounding() -> None:
        _same(_ci(mean.round(-1)), intervals)

    def reshape() -> None:
        table = sizes.unstack()
        assert all(str(t) == "dp" for t in table.dtypes)
        wide = _ci(table)
        assert wide.shape == (table.shape[0], 2 * table.shape[1])
        _same(_ci(table.stack()), _ci(sizes).loc[table.stack().index])
        transposed = table.T
        assert all(str(t) == "dp" for t in transposed.dtypes)

    def concat() -> None:
        both = pd.concat([mean, median])
        _dp(both)
        _same(_ci(both), pd.concat([intervals, _ci(median)]))

    def arithmetic() -> None:
        difference = _ci(mean - mean)
        np.testing.assert_allclose(difference.to_numpy(dtype=float), 0.0, atol=1e-9)  # exact
        doubled = _ci(mean * 2)
        _same(doubled, intervals * 2)
        total = _ci(mean + mean)
        _same(total, intervals * 2)  # the same noise twice: twice the width, not √2

    def running() -> None:
        counts = sizes.loc["south"]
        cumulative = counts.cumsum()
        _dp(cumulative)
        low, high = _ci(cumulative).iloc[-1]
        assert low <= float(cumulative.iloc[-1]) <= high
        rolled = counts.dp.rolling(2).sum()
        _dp(rolled)

    def ratio() -> None:
        share = sizes.loc["south"] / sizes.loc["south"].sum()
        _dp(share)
        low, high = _ci(share).to_numpy(dtype=float).T
        values = share.to_numpy(dtype=float)
        assert (low <= values).all() and (values <= high).all()

    def quantile() -> None:
        ends = _ci(median)
        values = median.to_numpy(dtype=float)
        assert (ends["low"].to_numpy() <= values).all() and (
            values <= ends["high"].to_numpy()
        ).all()
        _same(_ci(median.sort_values()), ends.loc[median.sort_values().index])
        _, edges = pf["wage"].qcut(4, epsilon=0.1, retbins=True)
        bounds = _ci(edges).to_numpy()
        numbers = np.asarray(edges)
        assert (bounds[[0, -1], 0] == bounds[[0, -1], 1]).all()  # the declared bounds: exact
        assert (bounds[1:-1, 0] <= numbers[1:-1]).all() and (numbers[1:-1] <= bounds[1:-1, 1]).all()

    def plain() -> None:
        affine = mean.apply(lambda v: 2 * v + 1)  # a function dpframe can follow
        if int(pd.__version__.split(".")[0]) < 3:
            # pandas 2.x does not cast apply's result back to the dtype: an object column
            # of released cells, each still carrying its form (checked here), and no warning.
            assert all(isinstance(v, DPValue) for v in affine)
            rebuilt = pd.Series(pd.array(list(affine), dtype="dp"), index=affine.index)  # type: ignore[call-overload]
            _same(_ci(rebuilt), intervals * 2 + 1)
            return
        _dp(affine)
        _same(_ci(affine), intervals * 2 + 1)
        with pytest.warns(PlainResultWarning, match=r"apply, map\) gave plain numbers"):
            squared = mean.apply(lambda v: v**2)
        assert str(squared.dtype) == "float64"
        with pytest.raises(dp.DPError, match="not the released one"):
            dp.ci(squared)

    def chosen() -> None:
        best = pf.groupby("region").argmax(epsilon=0.2)
        assert best in ("northeast", "midwest", "south", "west") and isinstance(best, str)
        said = dp.ci(best)
        assert said.startswith("a key whose count is within ") and "among 4 declared" in said
        assert getattr(best, "statement", None) == said
        assert str(best) == best and repr(best) == repr(str(best))
        common = pf["region"].mode(epsilon=0.2)
        assert dp.ci(common) == said  # the same ε, keys and sensitivity: the same statement

    def one_release() -> None:
        overall = pf["wage"].mean(epsilon=0.2)
        assert isinstance(overall - overall, DPValue) and dp.ci(overall - overall) == (0.0, 0.0)
        low, high = overall.ci(0.975)
        spread = mean - overall  # the Bonferroni box of two independent releases' intervals
        _dp(spread)
        each = dp.ci(mean, 0.975)
        box = pd.DataFrame({"low": each["low"] - high, "high": each["high"] - low})
        _same(_ci(spread), box)
        r = pf["wage"].corr(pf["education"], epsilon=0.2)
        assert isinstance(r, DPValue)
        r_low, r_high = dp.ci(r)
        assert r_low <= float(r) <= r_high and np.isfinite(r_high - r_low)

    def categorical_summary() -> None:
        table = pf[["wage", "region"]].describe(include="all", epsilon=0.2)
        ends = _ci(table)
        for row in ("count", "freq"):
            cell = table.loc[row, "region"]
            assert isinstance(cell, DPValue)
            low_end, high_end = (ends[("region", end)].loc[row] for end in ("low", "high"))
            assert low_end <= float(cell) <= high_end
        assert isinstance(table.loc["top", "region"], str)

    checks: tuple[Callable[[], None], ...] = (selection, sorting, heads, relabel, rounding)
    checks += (reshape, concat, arithmetic, running, ratio, quantile, plain, chosen)
    checks += (one_release, categorical_summary)
    for name, check in zip(STEPS, checks, strict=True):
        step(name, check)
    return done
