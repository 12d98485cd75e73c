"""The SQL conformance checks on the Dask backend (``on_dask``): same nodes, same answers."""

from __future__ import annotations

from typing import Any

import pytest

import dpframe as dp
from tests.sql_cases import CASES, Case
from tests.test_sql_conformance import World, ask, build, check_scalar, check_table, options

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

#: A cross-section of the suite: filters, 3VL, LIKE, CASE, several aggregates, keys, HAVING,
#: ORDER BY, JOIN, WITH, discovery, dates and text.
NAMES = [
    "mean with a filter",
    "<> drops NULLs",
    "LIKE prefix",
    "CASE with a column",
    "several aggregates",
    "median",
    "grouped, several aggregates",
    "CASE buckets as keys",
    "HAVING on an aggregate not shown",
    "ORDER BY and LIMIT",
    "JOIN a public table",
    "WITH",
    "keys discovered with a delta",
    "date filter and MONTH",
    "text function",
]


def test_sql_answers_and_nodes_on_dask() -> None:
    world = build(dp.Session(epsilon=10_000, delta=1e-3, accounting="approx", ledger=":memory:"))
    chosen = [c for c in CASES if c.name in NAMES]
    assert len(chosen) == len(NAMES)
    for case in chosen:
        answer = ask(world, case)
        reference = world.duck.execute(case.reference).df()
        if hasattr(answer, "columns"):
            check_table(world, case, answer, reference)
        else:
            check_scalar(world, case, answer, reference.iloc[0, 0])
        if case.pandas is not None:
            assert _node_of_sql(world, case) == _node_of_pandas(world, case)


def _node_of_sql(world: World, case: Case) -> Any:
    session = world.session
    return session.capture_node(lambda: session.sql(case.sql, **options(case)))


def _node_of_pandas(world: World, case: Case) -> Any:
    spelled = case.pandas
    assert spelled is not None
    return world.session.capture_node(lambda: spelled(world.tables, case.epsilon))
