"""Reading a SQL query: DuckDB's dialect, parsed by sqlglot (the ``sql`` extra).

The dialect is DuckDB's, with its answers to the questions dialects disagree on:

* ``/`` is true division (``7 / 2`` is 3.5); ``//`` is integer division,
  truncated toward zero (``-7 // 2`` is -3), as DuckDB;
* ``LIKE`` is case-sensitive, ``ILIKE`` is not;
* a name matches a column or table spelled the same, else one spelled the
  same up to case (DuckDB matches names without regard to case, also quoted
  ones); two columns that differ only in case must be written exactly, in
  double quotes (``"Wage"``); a name with spaces is written in double quotes;
  text literals take single quotes.

Nothing here reads data: parsing is public work on the query's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from dpframe.api.sql.errors import SQLError, SQLRefusedError, SQLSyntaxError

__all__ = ["DIALECT", "Parsed", "parse"]

#: The one dialect queries are read in.
DIALECT = "duckdb"

_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+", re.IGNORECASE)


def _sqlglot() -> Any:
    try:
        import sqlglot
    except ImportError:
        raise SQLError("SQL queries need the sqlglot parser: pip install 'dpframe[sql]'.") from None
    return sqlglot


@dataclass(frozen=True)
class Parsed:
    """A parsed query: its syntax tree (a ``sqlglot`` SELECT) and whether EXPLAIN came first."""

    tree: Any
    explain: bool
    text: str


def _position(error: Any) -> str:
    details = getattr(error, "errors", None) or []
    if not details:
        return ""
    first = details[0]
    line, col = first.get("line"), first.get("col")
    near = str(first.get("highlight") or "").strip()
    where = f" at line {line}, column {col}" if line is not None else ""
    return where + (f" (near {near!r})" if near else "")


def parse(text: str) -> Parsed:
    """The syntax tree of one SELECT (``EXPLAIN SELECT ...`` sets ``explain``).

    Raises:
        SQLSyntaxError: the parser could not read the query (with its position).
        SQLRefusedError: not exactly one SELECT statement.
    """
    if not isinstance(text, str) or not text.strip():
        raise SQLError("session.sql() takes the text of one SELECT query.")
    explain = bool(_EXPLAIN.match(text))
    body = _EXPLAIN.sub("", text, count=1) if explain else text
    try:
        statements = [s for s in sqlglot.parse(body, dialect=DIALECT) if s is not None]
    except sqlglot.errors.ParseError as error:
        description = (getattr(error, "errors", None) or [{}])[0].get("description", "")
        raise SQLSyntaxError(
            f"SQL syntax error{_position(error)}: {description or 'unexpected text'}. "
            "Queries are read in DuckDB's dialect (docs/sql.md)."
        ) from None
    except sqlglot.errors.TokenError:
        raise SQLSyntaxError(
            "SQL syntax error: the query has an unterminated string or quoted name."
        ) from None
    if len(statements) != 1:
        raise SQLRefusedError(
            f"{len(statements)} statements: give one SELECT per query (run each separately)."
        )
    tree = statements[0]
    if isinstance(tree, exp.SetOperation):
        kind = type(tree).__name__.upper()
        raise SQLRefusedError(
            f"{kind} of two queries is refused: each SELECT is a release of its own; run them "
            "separately (their costs add up)."
        )
    if not isinstance(tree, exp.Select):
        raise SQLRefusedError(
            f"Only SELECT queries are released (found {type(tree).__name__.upper()}); data "
            "cannot be changed or listed through dpframe."
        )
    return Parsed(tree, explain, text)
