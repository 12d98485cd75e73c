"""Compiling and answering one query: ``session.sql("SELECT ...")`` (needs the ``sql`` extra).

A query is parsed (:mod:`.parse`, DuckDB's dialect, with sqlglot), refused
before any charge when it asks for something dpframe does not release
(:mod:`.errors`, one line naming the construct and the nearest supported
form), compiled by calling the facade's verbs on handles (:mod:`.relations`,
:mod:`.scalars`, :mod:`.aggregates`, :mod:`.compiler`: the node a pandas
spelling of the query builds, never a second evaluator) and released by the
session like any other node; HAVING, ORDER BY and LIMIT then act on the
released values (:mod:`.results`).  See docs/sql.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from dpframe.api.handle import Runner
from dpframe.api.sql.aggregates import column_name
from dpframe.api.sql.catalog import Catalog
from dpframe.api.sql.compiler import Compiled, compile_query
from dpframe.api.sql.parse import DIALECT, parse
from dpframe.api.sql.results import answer, check_post_processing
from dpframe.api.verbs import distinct, grouping, tables
from dpframe.api.verbs.requests import request_of
from dpframe.mechanisms.answers.results import NoInterval, answer_array

__all__ = ["DIALECT", "Compiled", "compile_sql", "explain", "run_sql"]


def compile_sql(
    runner: Runner,
    catalog: Catalog,
    query: str,
    *,
    epsilon: Any = None,
    delta: Any = None,
    rho: Any = None,
    privacy: Any = None,
    weights: object = None,
) -> Compiled:
    """The release node of ``query`` and how its answer is shaped; nothing read or charged."""
    parsed = parse(query)
    request = request_of(epsilon, delta, rho, privacy)
    compiled = compile_query(parsed, catalog, runner, request, weights)
    check_post_processing(compiled)
    return compiled


def _hidden_note(compiled: Compiled) -> str:
    hidden = ", ".join(c.text for c in compiled.hidden)
    return (
        f"; HAVING/ORDER BY also release {hidden} (not shown): charged with its share"
        if hidden
        else ""
    )


def explain(compiled: Compiled) -> Any:
    """``session.explain`` of the query's node (nothing spent), noting aggregates not shown."""
    found = compiled.runner.explain(compiled.node)
    note = _hidden_note(compiled)
    if note and dataclasses.is_dataclass(found) and hasattr(found, "headline"):
        headline = str(getattr(found, "headline", "")) or "released values"
        return dataclasses.replace(found, headline=headline + note)  # type: ignore[type-var]
    return found


def found_as_answer(found: pd.Series) -> pd.Series:
    """Per-group distinct counts as ``dp`` cells with no value interval (shown as counts)."""
    reason = NoInterval(
        "COUNT(DISTINCT x) counts the declared keys whose noisy count clears the count "
        "noise's 95% quantile; it has no value interval."
    )
    cells = answer_array(found.to_numpy(dtype=float), reason, integer=True)
    answered: pd.Series = pd.Series(cells, index=found.index, name=found.name)
    return answered


def run_sql(runner: Runner, catalog: Catalog, query: str, **options: Any) -> Any:
    """Compile ``query``, release its node (charged once), and shape the answer.

    ``EXPLAIN SELECT ...`` returns ``session.explain`` of the node instead (nothing spent).
    """
    compiled = compile_sql(runner, catalog, query, **options)
    if compiled.explain:
        return explain(compiled)
    if compiled.shape == "nunique":
        argument = compiled.cells[0].argument
        assert argument is not None
        assert compiled.request is not None
        released = tables.nunique(argument, compiled.request)
    elif compiled.shape == "grouped_nunique":
        assert compiled.group is not None
        assert compiled.request is not None
        grouped = compiled.group.selecting(column_name(compiled.cells[0]))
        found = distinct.grouped_nunique(grouped, compiled.request)
        released = grouping.grouped_result(compiled.group, found_as_answer(found))
    else:
        released = runner.run(compiled.node)
        if compiled.group is not None and compiled.shape in ("single", "levels"):
            released = grouping.grouped_result(compiled.group, released)
    return answer(compiled, released)
