"""The SQL conformance checks on the Dask backend (``on_dask``): the same nodes, the same answers."""

from __future__ import annotations

import pytest

import dpframe as dp
from tests.sql_cases import CASES
from tests.test_sql_conformance import ask, build, check_scalar, check_table, options

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
            spelled = case.pandas
            session = world.session
            node = session.capture_node(lambda: session.sql(case.sql, **options(case)))
            assert node == session.capture_node(lambda: spelled(world.tables, case.epsilon))
