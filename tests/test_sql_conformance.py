"""SQL conformance: every query of ``tests/sql_cases.py`` against DuckDB on the clamped raw data.

For each query: the answer of ``session.sql`` holds DuckDB's answer inside its
stated intervals (``dp.ci`` at level 1 − α/1000: the suite's false-failure
probability stays below α = 1e-7 by Bonferroni over fewer than 1,000 cells),
quantiles within their stated rank error of the best candidate, and the
query builds the same release node as its pandas spelling (node for node).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.sql.results import ColumnIntervals
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.quantiles.quantiles import QUANTILE_BINS, rank_error
from tests.dated_cps import BOUNDS, CATEGORIES, DTYPES, dated_cps, truth
from tests.sql_cases import CASES, REGIONS, Case, Tables
from tests.stats_helpers import ALPHA

#: Each cell's interval level: α/1000 per cell keeps the suite's false failures below α.
LEVEL = 1 - ALPHA / 1000


@dataclass(frozen=True)
class World:
    """A session with the tables registered, and DuckDB holding their clamped raw data."""

    session: dp.Session
    tables: Tables
    duck: Any


def clamped(data: pd.DataFrame) -> pd.DataFrame:
    """The raw rows with every bounded numeric column clamped to its declared bounds."""
    out: pd.DataFrame = data.copy()
    for name, (low, high) in CPS1988_BOUNDS.items():
        out[name] = out[name].clip(low, high)
    return out


def build(session: dp.Session) -> World:
    """Load and register ``cps``, ``dated`` and ``regions``; DuckDB gets the clamped raw data."""
    pf = session.private_frame(load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    raw = dated_cps()
    dated = session.private_frame(raw, bounds=BOUNDS, categories=CATEGORIES, dtypes=DTYPES)
    session.register("cps", pf)
    session.register("dated", dated)
    session.register("regions", REGIONS)
    duck = duckdb.connect()
    duck.register("cps", clamped(load_cps1988()))
    duck.register("dated", clamped(truth(raw)))
    duck.register("regions", REGIONS)
    return World(session, Tables(pf, dated, REGIONS), duck)


@pytest.fixture(scope="module")
def world() -> World:
    return build(dp.Session(epsilon=10_000, delta=1e-3, accounting="approx", ledger=":memory:"))


def options(case: Case) -> dict[str, Any]:
    found: dict[str, Any] = {"epsilon": case.epsilon}
    if case.delta is not None:
        found["delta"] = case.delta
    if case.weights is not None:
        found["weights"] = list(case.weights)
    return found


def ask(world: World, case: Case) -> Any:
    with warnings.catch_warnings():  # the dated rows outside the declared years: a warning
        warnings.simplefilter("ignore", UserWarning)
        return world.session.sql(case.sql, **options(case))


def _distance(values: np.ndarray, c: np.ndarray, q: float) -> np.ndarray:
    """The quantile utility's distance from q·n to [#{x < c}, #{x <= c}], per candidate."""
    ordered = np.sort(values)
    below = np.searchsorted(ordered, c, side="left")
    at_most = np.searchsorted(ordered, c, side="right")
    target = q * len(ordered)
    found: np.ndarray = np.maximum.reduce([below - target, target - at_most, np.zeros(len(c))])
    return found


def check_rank(released: float, values: np.ndarray, q: float, epsilon: float) -> None:
    """The released quantile misses q·n by at most its stated rank error more than the best."""
    values = values[~np.isnan(values)]
    grid = np.linspace(0.0, 5000.0, QUANTILE_BINS + 1)
    best = float(_distance(values, grid, q).min())
    found = float(_distance(values, np.array([released]), q)[0])
    bound = rank_error(epsilon, LEVEL, Fraction(q).limit_denominator(1000), 1, len(grid))
    ties = float(np.sum(values == released))
    assert found <= best + bound + ties + 1, (released, found, best, bound)


def _share(case: Case, cells: int) -> float:
    return case.epsilon / cells


def check_scalar(world: World, case: Case, answer: Any, expected: Any) -> None:
    if case.rows is not None:
        values = world.duck.execute(case.rows).df()["v"].to_numpy(dtype=float)
        check_rank(float(answer), values, case.levels[0] or 0.5, case.epsilon)
        return
    if "DISTINCT" in case.sql:  # nunique: keys whose noisy count clears its threshold
        assert float(answer) == float(expected)
        return
    low, high = answer.ci(LEVEL)
    assert low <= float(expected) <= high, (case.name, low, float(expected), high)


def _key(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_key(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value.item() if hasattr(value, "item") else value


def check_table(world: World, case: Case, answer: pd.DataFrame, reference: pd.DataFrame) -> None:
    grouped = answer.index.names != [None]
    k = answer.index.nlevels if grouped else 0
    values = reference.iloc[:, k:]
    assert values.shape[1] == answer.shape[1], (case.name, list(reference.columns))
    if grouped:
        keys = [_key(tuple(r)) if k > 1 else _key(r[0]) for r in reference.iloc[:, :k].to_numpy()]
    else:
        keys = [0]
    rows = {key: i for i, key in enumerate(keys)}
    ours = [_key(key) for key in answer.index]
    if "ORDER BY" in case.sql:  # the rows kept, in the order asked
        assert ours == keys, (case.name, ours, keys)
    elif "HAVING" in case.sql or "LIMIT" in case.sql:
        # The rows kept; without ORDER BY their order is SQL's choice (DuckDB's hash
        # aggregation once gave south before midwest, once after, in one CI run).
        assert sorted(map(str, ours)) == sorted(map(str, keys)), (case.name, ours, keys)
    intervals = ColumnIntervals(answer, "mixed").interval(LEVEL)  # NaN: a quantile's column
    data = None
    if case.rows is not None:
        data = world.duck.execute(case.rows).df()
    for j, name in enumerate(answer.columns):
        for i, key in enumerate(ours):
            if key not in rows:
                continue  # a declared key no row has (DuckDB lists no such group)
            expected = float(values.to_numpy(dtype=float)[rows[key], j])
            low, high = intervals[0][i, j], intervals[1][i, j]
            released = float(answer.to_numpy(dtype=float)[i, j])
            if np.isnan(low):
                if data is None:  # arithmetic of released values: no interval of its own
                    continue
                mine = data if not grouped else data[data.iloc[:, 0] == key]
                share = _share(case, answer.shape[1])
                level = case.levels[j]
                assert level is not None
                check_rank(released, mine["v"].to_numpy(dtype=float), level, share)
                continue
            assert low <= expected <= high, (case.name, name, key, low, expected, high)


@pytest.mark.fresh_releases  # cases share one session: each query a new release
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_answer_is_inside_its_stated_intervals(world: World, case: Case) -> None:
    answer = ask(world, case)
    reference = world.duck.execute(case.reference).df()
    if isinstance(answer, pd.DataFrame):
        check_table(world, case, answer, reference)
    elif isinstance(answer, pd.Series):  # two percentiles: one answer per level
        raise AssertionError(f"{case.name}: a Series answer")
    else:
        check_scalar(world, case, answer, reference.iloc[0, 0])


SPELLED = [c for c in CASES if c.pandas is not None]


@pytest.mark.parametrize("case", SPELLED, ids=[c.name for c in SPELLED])
def test_query_builds_the_node_of_its_pandas_spelling(world: World, case: Case) -> None:
    session = world.session
    from_sql = session.capture_node(lambda: session.sql(case.sql, **options(case)))
    assert case.pandas is not None
    spelled = case.pandas
    from_pandas = session.capture_node(lambda: spelled(world.tables, case.epsilon))
    assert from_sql == from_pandas
    assert type(from_sql) is type(from_pandas)


def test_the_suite_has_forty_queries_and_most_have_a_pandas_spelling() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)
    assert len(SPELLED) >= 40
