"""The errors of SQL queries: one line, naming the construct and the nearest supported form.

Every one is raised while the query is compiled, before any node reaches the
session, so nothing is charged.  They are :class:`~dpframe.SchemaError`
subclasses (a query is refused as any other invalid request).
"""

from __future__ import annotations

import difflib
import importlib.util
from collections.abc import Iterable

from dpframe.errors import SchemaError

__all__ = ["SQLError", "SQLRefusedError", "SQLSyntaxError", "require_parser", "suggestion"]


class SQLError(SchemaError):
    """A SQL query that cannot be compiled to a release (nothing charged)."""


class SQLSyntaxError(SQLError):
    """The parser could not read the query; the message gives the line and column."""


class SQLRefusedError(SQLError):
    """A construct that dpframe does not release (row-level output, an unbounded aggregate...)."""


def suggestion(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest known names (case-insensitive), or ``""``."""
    options = list(dict.fromkeys(known))
    lowered = {o.lower(): o for o in options}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
    if not close:
        return ""
    shown = " or ".join(repr(lowered[c]) for c in close)
    return f" Did you mean {shown}?"


def require_parser() -> None:
    """Refuse, saying how to install it, when the SQL parser (sqlglot) is not installed."""
    if importlib.util.find_spec("sqlglot") is None:
        raise SQLError("SQL queries need the sqlglot parser: pip install 'dpframe[sql]'.")
