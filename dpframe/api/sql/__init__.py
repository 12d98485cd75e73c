"""SQL on the same plans: ``session.sql("SELECT ...")`` compiles to the facade's release nodes.

A query is parsed (:mod:`.parse`, DuckDB's dialect, with sqlglot: the
``sql`` extra), refused before any charge when it asks for something dpframe
does not release (:mod:`.errors`: one line naming the construct and the
nearest supported form), compiled by calling the facade's verbs on handles
(:mod:`.relations`, :mod:`.scalars`, :mod:`.aggregates`, :mod:`.compiler`:
the node the query's pandas spelling builds, never a second evaluator) and
released by the session like any other node; HAVING, ORDER BY and LIMIT
then act on the released values (:mod:`.results`).  :mod:`.run` ties them
together.  Only the catalog and the errors load without sqlglot.  See docs/sql.md.
"""

from __future__ import annotations

from dpframe.api.sql.catalog import Catalog
from dpframe.api.sql.errors import SQLError, SQLRefusedError, SQLSyntaxError, require_parser

__all__ = ["Catalog", "SQLError", "SQLRefusedError", "SQLSyntaxError", "require_parser"]
