"""The core workload: dpframe queries paired with the same non-private pandas aggregation.

Each :class:`Query` holds two zero-argument callables.  They are timed with
:func:`time_query`: the first call of each is reported as *cold* (dpframe
caches the integer codes of a group-key column on its first group-by), then
``repeats`` warm calls alternate pandas / dpframe and their medians are kept.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

import dpframe as dp

__all__ = ["Query", "Timing", "build_queries", "time_query", "workload_ratio"]


@dataclass(frozen=True)
class Query:
    """A dpframe query and its non-private pandas counterpart.

    Attributes:
        name: short label used in tables.
        pandas_code: the pandas expression, as it appears in the report.
        pandas: runs the pandas aggregation.
        dpframe: runs the dpframe release (charges the session).
        in_workload: counted in the workload total.
    """

    name: str
    pandas_code: str
    pandas: Callable[[], Any]
    dpframe: Callable[[], Any]
    in_workload: bool = True


@dataclass(frozen=True)
class Timing:
    """Timings of one query, in seconds."""

    query: str
    rows: int
    variant: str
    in_workload: bool
    pandas_cold: float
    dpframe_cold: float
    pandas_median: float
    dpframe_median: float
    pandas_runs: tuple[float, ...]
    dpframe_runs: tuple[float, ...]

    @property
    def ratio(self) -> float:
        """dpframe median / pandas median."""
        return self.dpframe_median / self.pandas_median

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (with the ratio)."""
        out = asdict(self)
        out["ratio"] = self.ratio
        return out


def build_queries(
    df: pd.DataFrame,
    pf: dp.PrivateFrame,
    *,
    value: str,
    bounds: tuple[float, float],
    small_key: str,
    large_key: str,
    epsilon: float = 1.0,
) -> list[Query]:
    """The five workload queries (plus two reference rows outside the workload).

    Workload: row count, clamped sum, clamped mean, group-by count over
    ``small_key``, group-by sum of ``value`` over ``large_key``.  pandas group-bys
    use ``sort=False`` (its fastest path; dpframe returns the declared key
    order, so neither sorts) and ``observed=True`` (only matters for
    Categorical keys; it is the pandas 3 default).  Outside the workload:
    the non-null count of ``value`` (vs ``Series.count()``) and the grouped
    sum against pandas with the same clamping dpframe applies.
    """
    low, high = bounds
    col = df[value]

    def gb_count() -> Any:
        return df.groupby(small_key, observed=True, sort=False).size()

    def gb_sum() -> Any:
        return df.groupby(large_key, observed=True, sort=False)[value].sum()

    def gb_sum_clipped() -> Any:
        return col.clip(low, high).groupby(df[large_key], observed=True, sort=False).sum()

    gb = 'groupby("{{}}", observed=True, sort=False)'
    return [
        Query("count (rows)", "len(df)", lambda: len(df), lambda: pf.count(epsilon=epsilon)),
        Query(
            "sum (clamped)",
            f'df["{value}"].clip({low:g}, {high:g}).sum()',
            lambda: col.clip(low, high).sum(),
            lambda: pf[value].sum(epsilon=epsilon),
        ),
        Query(
            "mean (clamped)",
            f'df["{value}"].clip({low:g}, {high:g}).mean()',
            lambda: col.clip(low, high).mean(),
            lambda: pf[value].mean(epsilon=epsilon),
        ),
        Query(
            f"groupby {small_key} count",
            "df." + gb.format(small_key) + ".size()",
            gb_count,
            lambda: pf.groupby(small_key).count(epsilon=epsilon),
        ),
        Query(
            f"groupby {large_key} sum",
            "df." + gb.format(large_key) + f'["{value}"].sum()',
            gb_sum,
            lambda: pf.groupby(large_key)[value].sum(epsilon=epsilon),
        ),
        Query(
            "count (non-null column)",
            f'df["{value}"].count()',
            lambda: col.count(),
            lambda: pf[value].count(epsilon=epsilon),
            in_workload=False,
        ),
        Query(
            f"groupby {large_key} sum, pandas clipped",
            f'df["{value}"].clip(...).groupby(df["{large_key}"], ...).sum()',
            gb_sum_clipped,
            lambda: pf.groupby(large_key)[value].sum(epsilon=epsilon),
            in_workload=False,
        ),
    ]


def _timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def time_query(query: Query, rows: int, variant: str, repeats: int) -> Timing:
    """Time one query: a cold call of each side, then ``repeats`` alternating warm calls."""
    pandas_cold = _timed(query.pandas)
    dpframe_cold = _timed(query.dpframe)
    pandas_runs: list[float] = []
    dpframe_runs: list[float] = []
    for _ in range(repeats):
        pandas_runs.append(_timed(query.pandas))
        dpframe_runs.append(_timed(query.dpframe))
    return Timing(
        query=query.name,
        rows=rows,
        variant=variant,
        in_workload=query.in_workload,
        pandas_cold=pandas_cold,
        dpframe_cold=dpframe_cold,
        pandas_median=statistics.median(pandas_runs),
        dpframe_median=statistics.median(dpframe_runs),
        pandas_runs=tuple(pandas_runs),
        dpframe_runs=tuple(dpframe_runs),
    )


def workload_ratio(timings: list[Timing], *, cold: bool = False) -> tuple[float, float, float]:
    """(pandas total, dpframe total, ratio) over the workload queries (warm medians or cold)."""
    chosen = [t for t in timings if t.in_workload]
    if cold:
        pandas_total = sum(t.pandas_cold for t in chosen)
        dpframe_total = sum(t.dpframe_cold for t in chosen)
    else:
        pandas_total = sum(t.pandas_median for t in chosen)
        dpframe_total = sum(t.dpframe_median for t in chosen)
    return pandas_total, dpframe_total, dpframe_total / pandas_total
