"""SQL refusals: before any charge, one line naming the construct and the nearest supported form."""

from __future__ import annotations

import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.sql import SQLError, SQLRefusedError, SQLSyntaxError
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from tests.sql_cases import REGIONS

#: (query, error class, what the message must say).
REFUSED: list[tuple[str, type[Exception], str]] = [
    ("SELECT * FROM cps", SQLRefusedError, r"SELECT \* returns private rows; select aggregates"),
    ("SELECT cps.* FROM cps", SQLRefusedError, r"SELECT \* returns private rows"),
    ("SELECT wage FROM cps", SQLRefusedError, r"neither aggregated nor a GROUP BY key"),
    (
        "SELECT MIN(wage) FROM cps",
        SQLRefusedError,
        r"MIN is one private row's value.*approx_bounds",
    ),
    ("SELECT MAX(wage) FROM cps", SQLRefusedError, r"MAX .*PERCENTILE_CONT\(0\.99\)"),
    (
        "SELECT AVG(wage) OVER (PARTITION BY region) FROM cps",
        SQLRefusedError,
        r"window functions over private rows .* GROUP BY",
    ),
    ("SELECT COUNT(*) FROM cpz", SQLError, r"Unknown table 'cpz'\. Did you mean 'cps'\?"),
    ("SELECT AVG(wag) FROM cps", SQLError, r"Unknown column 'wag'\. Did you mean 'wage'\?"),
    ("SELEC COUNT(*) FROM cps", SQLSyntaxError, r"SQL syntax error at line 1, column \d+"),
    ("SELECT COUNT(* FROM cps", SQLSyntaxError, r"SQL syntax error at line 1"),
    (
        "SELECT COUNT(*) FROM cps a JOIN cps2 b ON a.region = b.region",
        SQLRefusedError,
        r"joins of two private tables come with private joins",
    ),
    (
        "SELECT COUNT(*) FROM cps RIGHT JOIN regions r ON cps.region = r.region",
        SQLRefusedError,
        r"RIGHT JOIN is refused: only JOIN \(inner\) and LEFT JOIN",
    ),
    ("SELECT COUNT(*) FROM cps, regions", SQLRefusedError, r"cross join\) is refused"),
    ("SELECT COUNT(*) FROM regions", SQLRefusedError, r"'regions' is a public table"),
    (
        "SELECT COUNT(*) FROM cps UNION SELECT COUNT(*) FROM cps",
        SQLRefusedError,
        r"UNION of two queries is refused: .*run them separately",
    ),
    ("SELECT DISTINCT region FROM cps", SQLRefusedError, r"SELECT DISTINCT lists private values"),
    (
        "SELECT COUNT(*) FROM cps WHERE wage > (SELECT AVG(wage) FROM cps)",
        SQLRefusedError,
        r"a subquery as a value reads other rows",
    ),
    (
        "SELECT COUNT(*) FROM cps WHERE region IN (SELECT region FROM regions)",
        SQLRefusedError,
        r"IN \(SELECT \.\.\.\) reads other rows; list public values",
    ),
    (
        "SELECT COUNT(*) FROM (SELECT region, COUNT(*) AS n FROM cps GROUP BY region) t",
        SQLRefusedError,
        r"aggregating subqueries \(per ID\) come with the issue 'Several tables, one person'",
    ),
    ("SELECT COUNT(*) FROM cps WHERE AVG(wage) > 3", SQLRefusedError, r"An aggregate in WHERE"),
    (
        "SELECT COUNT(*) FILTER (WHERE wage > 5) FROM cps",
        SQLRefusedError,
        r"FILTER \(WHERE \.\.\.\) is not available; write SUM\(CASE WHEN",
    ),
    (
        "SELECT wage, COUNT(*) FROM cps GROUP BY wage",  # a float: no keys from its bounds
        SQLRefusedError,
        r"GROUP BY wage: its keys are not declared; pass delta=",
    ),
    (
        "SELECT wage, COUNT(*), AVG(education) FROM cps GROUP BY wage",
        SQLRefusedError,
        r"keys found privately come with one COUNT, SUM",
    ),
    (
        "SELECT region, MODE(smsa) FROM cps GROUP BY region",
        SQLRefusedError,
        r"MODE\(smsa\) per group is not available",
    ),
    (
        "SELECT PERCENTILE_CONT(0.3) WITHIN GROUP (ORDER BY wage), AVG(wage) FROM cps",
        SQLRefusedError,
        r"only MEDIAN combines with others",
    ),
    ("SELECT AVG(AVG(wage)) FROM cps", SQLRefusedError, r"an aggregate of an aggregate"),
    ("SELECT STRING_AGG(region, ',') FROM cps", SQLRefusedError, r"returns values of private rows"),
    ("SELECT ARG_MAX(region, wage) FROM cps", SQLRefusedError, r"argmax\('count'\|'sum'\|'mean'"),
    ("DELETE FROM cps", SQLRefusedError, r"Only SELECT queries are released"),
    ("SELECT COUNT(*) FROM cps; SELECT 1", SQLRefusedError, r"2 statements: give one SELECT"),
    ("SELECT COUNT(*) FROM cps LIMIT 'a'", SQLRefusedError, r"LIMIT takes a whole number"),
    ("SELECT AVG(wage) FROM cps GROUP BY ROLLUP (region)", SQLRefusedError, r"ROLLUP: run one"),
    ("SELECT COUNT(*) FROM cps WHERE 1 = 2", SQLRefusedError, r"is never true"),
    (
        "SELECT AVG(CASE WHEN education > 12 THEN wage ELSE experience END) FROM cps",
        SQLRefusedError,
        r"CASE takes public constants as results",
    ),
    ("SELECT AVG(TAN(wage)) FROM cps", SQLRefusedError, r"TAN is not available on private rows"),
    ("SELECT COUNT(*) FROM cps WHERE wage = NULL", SQLRefusedError, r"never true: write x IS NULL"),
    ("WITH RECURSIVE t AS (SELECT 1) SELECT COUNT(*) FROM cps", SQLRefusedError, r"RECURSIVE"),
    ("SELECT MODE(region), COUNT(*) FROM cps", SQLRefusedError, r"among other aggregates"),
]


@pytest.fixture
def session() -> dp.Session:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    other = session.private_frame(load_cps1988().head(100), bounds=CPS1988_BOUNDS)
    session.register("cps", pf)
    session.register("cps2", other)
    session.register("regions", REGIONS)
    return session


@pytest.mark.parametrize(("query", "error", "message"), REFUSED, ids=[q for q, _, _ in REFUSED])
def test_refused_before_any_charge_in_one_line(
    session: dp.Session, query: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as raised:
        session.sql(query, epsilon=0.5)
    assert "\n" not in str(raised.value)
    assert session.spent == dp.Budget(epsilon=0, delta=0)
    assert len(session.ledger) == 0


def test_refusals_are_schema_errors(session: dp.Session) -> None:
    with pytest.raises(dp.SchemaError, match="SELECT"):
        session.sql("SELECT * FROM cps", epsilon=0.5)


def test_explain_spends_nothing_and_says_what_having_releases(session: dp.Session) -> None:
    query = "EXPLAIN SELECT region, AVG(wage) FROM cps GROUP BY region HAVING COUNT(*) > 10"
    explained = session.sql(query, epsilon=0.5)
    assert "HAVING/ORDER BY also release COUNT(*) (not shown): charged with its share" in str(
        explained
    )
    assert "cost ε=0.5" in str(explained)
    assert session.spent == dp.Budget(epsilon=0, delta=0)
    plain = session.sql("EXPLAIN SELECT AVG(wage) FROM cps", epsilon=0.5)
    pf = session.sql("EXPLAIN SELECT AVG(wage) FROM cps", epsilon=0.5)
    assert str(plain) == str(pf)
    assert len(session.ledger) == 0


def test_register_refuses_what_is_not_a_table(session: dp.Session) -> None:
    with pytest.raises(SQLError, match=r"takes a private frame or a public pandas DataFrame"):
        session.register("x", [1, 2])
    other = dp.Session(epsilon=1.0, ledger=":memory:")
    theirs = other.private_frame(pd.DataFrame({"a": [1.0, 2.0]}), bounds={"a": (0, 5)})
    with pytest.raises(SQLError, match=r"belongs to another session"):
        session.register("theirs", theirs)
    with pytest.raises(SQLError, match=r"not a column or a group-by"):
        session.register("col", theirs["a"])


def test_budget_exceeded_charges_nothing(session: dp.Session) -> None:
    with pytest.raises(dp.BudgetExceededError, match="Privacy budget exceeded"):
        session.sql("SELECT AVG(wage) FROM cps", epsilon=5)
    assert len(session.ledger) == 0


def test_names_match_up_to_case_and_quoted(session: dp.Session) -> None:
    frame = pd.DataFrame({"Wage": [1.0, 2.0, 3.0], "wage": [4.0, 5.0, 6.0], "Age": [1.0, 2, 3]})
    pf = session.private_frame(frame, bounds={"Wage": (0, 10), "wage": (0, 10), "Age": (0, 10)})
    session.register("People", pf)
    node = session.capture_node(lambda: session.sql('SELECT SUM("Wage") FROM people', epsilon=0.1))
    assert node == session.capture_node(lambda: pf["Wage"].sum(epsilon=0.1))
    node = session.capture_node(lambda: session.sql("SELECT SUM(age) FROM PEOPLE", epsilon=0.1))
    assert node == session.capture_node(lambda: pf["Age"].sum(epsilon=0.1))
    with pytest.raises(SQLError, match=r"'WAGE' is ambiguous \(\"Wage\", \"wage\"\)"):
        session.sql("SELECT SUM(WAGE) FROM people", epsilon=0.1)
