"""The core workload: dpframe queries paired with the same non-private pandas aggregation.

Each :class:`Query` holds two zero-argument callables.  They are timed with
:func:`time_query`: the first call of each is reported as *cold* (dpframe
caches the integer codes of a group-key column on its first group-by), then
``repeats`` warm calls alternate pandas / dpframe and their medians are kept.

The *core* workload (``in_workload``) is the five queries of the original
target (count, clamped sum, clamped mean, group-by count over 50 keys,
group-by sum over 1,000 keys); the *extended* queries (variance, group-by sum
over 100,000 keys, median, sparse vector over 100 predicates, ``describe()``)
are timed and totalled separately.  :data:`CORE` and :data:`EXTENDED` are the
query names, shared with ``benchmarks/field_worker.py`` through the spec file.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp

__all__ = [
    "CORE",
    "EXTENDED",
    "SVT_PREDICATES",
    "Query",
    "Timing",
    "build_queries",
    "query_names",
    "svt_cuts",
    "time_query",
    "workload_ratio",
]

#: Number of predicates of the sparse-vector query.
SVT_PREDICATES = 100
#: Names of the extended queries that do not depend on the key columns.
VARIANCE, MEDIAN, SVT, DESCRIBE = (
    "variance (clamped)",
    "median",
    f"sparse vector ({SVT_PREDICATES} predicates)",
    "describe()",
)


def query_names(small_key: str, large_key: str, cross_key: str | None) -> dict[str, str]:
    """Query label by role, the same in every table (and in the field worker)."""
    names = {
        "count": "count (rows)",
        "sum": "sum (clamped)",
        "mean": "mean (clamped)",
        "gb_count": f"groupby {small_key} count",
        "gb_sum": f"groupby {large_key} sum",
        "var": VARIANCE,
        "median": MEDIAN,
        "svt": SVT,
        "describe": DESCRIBE,
    }
    if cross_key is not None:
        names["gb_cross"] = f"groupby {large_key}×{cross_key} sum"
    return names


#: Roles of the core workload and of the extended queries, in table order.
CORE = ("count", "sum", "mean", "gb_count", "gb_sum")
EXTENDED = ("var", "gb_cross", "median", "svt", "describe")


def svt_cuts(bounds: tuple[float, float]) -> list[float]:
    """The sparse vector's predicates are ``column >= cut`` for these equally spaced cuts."""
    return [float(c) for c in np.linspace(bounds[0], bounds[1], SVT_PREDICATES)]


@dataclass(frozen=True)
class Query:
    """A dpframe query and its non-private pandas counterpart.

    Attributes:
        name: short label used in tables.
        pandas_code: the pandas expression, as it appears in the report.
        pandas: runs the pandas aggregation.
        dpframe: runs the dpframe release (charges the session).
        in_workload: counted in the (core) workload total.
        extended: one of the extended queries (counted in the extended total).
    """

    name: str
    pandas_code: str
    pandas: Callable[[], Any]
    dpframe: Callable[[], Any]
    in_workload: bool = True
    extended: bool = False


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
    extended: bool = False

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
    cross_key: str | None = None,
    svt_column: str | None = None,
    epsilon: float = 1.0,
) -> list[Query]:
    """The core workload, the extended queries and two reference rows.

    Core: row count, clamped sum, clamped mean, group-by count over
    ``small_key``, group-by sum of ``value`` over ``large_key``.  pandas
    group-bys use ``sort=False`` (its fastest path; dpframe returns the
    declared key order, so neither sorts) and ``observed=True`` (only matters
    for Categorical keys; it is the pandas 3 default).

    Extended: clamped variance; group-by sum over ``large_key`` × ``cross_key``
    (1,000 × 100 = 100,000 declared keys; skipped when ``cross_key`` is None);
    median; a sparse vector over :data:`SVT_PREDICATES` predicates
    ``svt_column >= cut`` (``above_threshold``, threshold half the rows: a
    public choice of the benchmark), against pandas counting each predicate;
    ``describe()`` (dpframe: count, mean, std and quartiles of every bounded
    numeric column; pandas: its own ``describe()``).

    Reference rows (outside both totals): the non-null count of ``value``
    (vs ``Series.count()``) and the grouped sum against pandas with the same
    clamping dpframe applies.
    """
    low, high = bounds
    col = df[value]
    names = query_names(small_key, large_key, cross_key)
    svt_col = svt_column or value
    cuts = svt_cuts(pf.bounds[svt_col])
    threshold = len(df) / 2

    def gb_count() -> Any:
        return df.groupby(small_key, observed=True, sort=False).size()

    def gb_sum() -> Any:
        return df.groupby(large_key, observed=True, sort=False)[value].sum()

    def gb_sum_clipped() -> Any:
        return col.clip(low, high).groupby(df[large_key], observed=True, sort=False).sum()

    def svt_pandas() -> Any:
        column = df[svt_col]
        return [c for c in cuts if (column >= c).sum() > threshold][:1]

    def svt_dpframe() -> Any:
        column = pf[svt_col]
        predicates = {f">= {c:g}": column >= c for c in cuts}
        return pf.above_threshold(predicates, threshold, epsilon=epsilon)

    gb = 'groupby("{{}}", observed=True, sort=False)'
    clip = f'df["{value}"].clip({low:g}, {high:g})'
    queries = [
        Query(names["count"], "len(df)", lambda: len(df), lambda: pf.count(epsilon=epsilon)),
        Query(
            names["sum"],
            f"{clip}.sum()",
            lambda: col.clip(low, high).sum(),
            lambda: pf[value].sum(epsilon=epsilon),
        ),
        Query(
            names["mean"],
            f"{clip}.mean()",
            lambda: col.clip(low, high).mean(),
            lambda: pf[value].mean(epsilon=epsilon),
        ),
        Query(
            names["gb_count"],
            "df." + gb.format(small_key) + ".size()",
            gb_count,
            lambda: pf.groupby(small_key).count(epsilon=epsilon),
        ),
        Query(
            names["gb_sum"],
            "df." + gb.format(large_key) + f'["{value}"].sum()',
            gb_sum,
            lambda: pf.groupby(large_key)[value].sum(epsilon=epsilon),
        ),
        Query(
            names["var"],
            f"{clip}.var(ddof=0)",
            lambda: col.clip(low, high).var(ddof=0),
            lambda: pf[value].var(epsilon=epsilon),
            in_workload=False,
            extended=True,
        ),
    ]
    if cross_key is not None:
        keys = [large_key, cross_key]

        def gb_cross() -> Any:
            return df.groupby(keys, observed=True, sort=False)[value].sum()

        queries.append(
            Query(
                names["gb_cross"],
                f'df.groupby({keys}, observed=True, sort=False)["{value}"].sum()',
                gb_cross,
                lambda: pf.groupby(keys)[value].sum(epsilon=epsilon),
                in_workload=False,
                extended=True,
            )
        )
    queries += [
        Query(
            names["median"],
            f'df["{value}"].median()',
            lambda: col.median(),
            lambda: pf[value].median(epsilon=epsilon),
            in_workload=False,
            extended=True,
        ),
        Query(
            names["svt"],
            f'[c for c in cuts if (df["{svt_col}"] >= c).sum() > T][:1]',
            svt_pandas,
            svt_dpframe,
            in_workload=False,
            extended=True,
        ),
        Query(
            names["describe"],
            "df.describe()",
            lambda: df.describe(),
            lambda: pf.describe(epsilon=epsilon),
            in_workload=False,
            extended=True,
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
    return queries


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
        extended=query.extended,
    )


def workload_ratio(
    timings: list[Timing], *, cold: bool = False, extended: bool = False
) -> tuple[float, float, float]:
    """(pandas total, dpframe total, ratio) over the core (or the extended) queries."""
    chosen = [t for t in timings if (t.extended if extended else t.in_workload)]
    if not chosen:
        return float("nan"), float("nan"), float("nan")
    if cold:
        pandas_total = sum(t.pandas_cold for t in chosen)
        dpframe_total = sum(t.dpframe_cold for t in chosen)
    else:
        pandas_total = sum(t.pandas_median for t in chosen)
        dpframe_total = sum(t.dpframe_median for t in chosen)
    return pandas_total, dpframe_total, dpframe_total / pandas_total
