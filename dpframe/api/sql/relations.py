"""FROM, JOIN, WITH and WHERE: the rows a query aggregates, as a frame handle (free).

* ``FROM t``: a registered private frame (or a common table expression);
* ``JOIN p ON t.k = p.k`` / ``USING (k)``: a registered *public* table,
  added with the facade's ``merge`` (``LEFT JOIN``: ``how="left"``; ``JOIN``
  and ``INNER JOIN``: ``how="inner"``); a join of two private tables is
  refused until private joins land (issue "Several tables, one person");
* ``WITH t AS (SELECT ...)`` and ``FROM (SELECT ...) t``: row-level
  transforms (derived columns with ``assign``, a filter, a selection of
  columns); an aggregating subquery is refused;
* ``WHERE``: ``filter_rows`` with the condition's T (see :mod:`.scalars`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from sqlglot import exp

from dpframe.api.handle import FrameHandle, SeriesHandle
from dpframe.api.sql.catalog import Catalog, find_name
from dpframe.api.sql.errors import SQLError, SQLRefusedError
from dpframe.api.sql.scalars import as_column, condition, scalar
from dpframe.api.sql.scope import Scope
from dpframe.api.verbs import frames, lookup

__all__ = ["PRIVATE_JOINS", "has_aggregate", "relation"]

#: Why joins of private tables wait (refused before any charge).
PRIVATE_JOINS = (
    "joins of two private tables come with private joins (issue 'Several tables, one "
    "person'); join them before loading, or JOIN a public table registered with "
    "session.register(name, dataframe)"
)


def has_aggregate(node: exp.Expression) -> bool:
    """True when ``node`` holds an aggregate function (outside a subquery)."""
    return any(isinstance(found, exp.AggFunc) for found in node.find_all(exp.AggFunc, bfs=False))


def _sql(node: exp.Expression) -> str:
    return str(node.sql(dialect="duckdb"))


def _source(
    node: exp.Expression, catalog: Catalog, ctes: Mapping[str, Scope]
) -> tuple[Scope | None, pd.DataFrame | None, str]:
    """A FROM or JOIN item: (private scope, None, alias) or (None, public table, alias)."""
    alias = node.alias_or_name if isinstance(node, exp.Table) else node.alias
    if isinstance(node, exp.Table):
        if node.args.get("db") is not None:
            raise SQLRefusedError(f"{_sql(node)}: name tables without a schema (FROM cps).")
        name = node.name
        cte = next((k for k in ctes if k.lower() == name.lower()), None)
        if cte is not None:
            scope = ctes[cte]
            return Scope.of(scope.frame, alias or cte), None, alias or cte
        table = catalog.table(name)
        if isinstance(table, pd.DataFrame):
            return None, table, alias
        return Scope.of(table, alias), None, alias
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        frame = row_level(node.this, catalog, ctes)
        name = alias or "subquery"
        return Scope.of(frame, name), None, name
    raise SQLRefusedError(f"FROM {_sql(node)[:60]}: name a registered table or (SELECT ...).")


def _key_pair(join: exp.Join, scope: Scope, public: pd.DataFrame, alias: str) -> tuple[str, str]:
    """(private key column, public key column) of ``ON a.k = p.k`` or ``USING (k)``."""
    using = join.args.get("using")
    if using:
        if len(using) != 1:
            raise SQLRefusedError("JOIN ... USING takes one key column: USING (region).")
        name = using[0].name
        key = find_name(name, [str(c) for c in public.columns], "column of the public table")
        return scope.resolve(name), key
    on = join.args.get("on")
    if not isinstance(on, exp.EQ) or not all(
        isinstance(side, exp.Column) for side in (on.this, on.expression)
    ):
        raise SQLRefusedError(
            "JOIN ... ON takes one equality of key columns (ON t.region = p.region); "
            "filter in WHERE."
        )
    sides = [on.this, on.expression]
    on_public = [s for s in sides if s.table and s.table.lower() == alias.lower()]
    if len(on_public) != 1:
        raise SQLRefusedError(
            f"JOIN ... ON: name the public table's key with its table ({alias}.key = t.key)."
        )
    private_side = sides[1 - sides.index(on_public[0])]
    table = private_side.table or None
    key = find_name(
        on_public[0].name, [str(c) for c in public.columns], "column of the public table"
    )
    return scope.resolve(private_side.name, table), key


def _join(scope: Scope, join: exp.Join, catalog: Catalog, ctes: Mapping[str, Scope]) -> Scope:
    side = str(join.args.get("side") or "").upper()
    kind = str(join.args.get("kind") or "").upper()
    if side == "LEFT" and kind in ("", "OUTER"):
        how = "left"
    elif not side and kind in ("", "INNER"):
        how = "inner"
    else:
        form = " ".join(p for p in (side, kind) if p) or "this"
        raise SQLRefusedError(
            f"{form} JOIN is refused: only JOIN (inner) and LEFT JOIN keep each private row one "
            "row; RIGHT, FULL and CROSS joins add rows that belong to no one."
        )
    private, public, alias = _source(join.this, catalog, ctes)
    if private is not None or public is None:
        raise SQLRefusedError(f"JOIN {_sql(join.this)[:40]}: {PRIVATE_JOINS}.")
    key, public_key = _key_pair(join, scope, public, alias)
    table = public
    if public_key != key:
        if key in public.columns:
            raise SQLRefusedError(
                f"JOIN: the public table has a column {key!r} besides its key {public_key!r}; "
                "rename one of them before registering it."
            )
        table = public.rename(columns={public_key: key})
    frame = lookup.merge(scope.frame, table, how=how, on=key)
    added = [str(c) for c in table.columns if c != key]
    clashes = {c for c in added if c in scope.frame.schema.names}
    names = [(t, n, f"{c}_x" if c in clashes else c) for t, n, c in scope.columns]
    names += [
        (alias, str(c), f"{c}_y" if c in clashes else str(c))
        for c in public.columns
        if c != public_key
    ]
    names.append((alias, public_key, key))
    return Scope(frame, tuple(names))


def common_tables(
    select: exp.Select, catalog: Catalog, ctes: Mapping[str, Scope]
) -> dict[str, Scope]:
    """The CTEs of ``WITH`` (each a row-level transform), added to ``ctes``."""
    found = dict(ctes)
    with_ = select.args.get("with_") or select.args.get("with")
    if with_ is None:
        return found
    if with_.args.get("recursive"):
        raise SQLRefusedError("WITH RECURSIVE is refused: its work has no public bound.")
    for cte in with_.expressions:
        body = cte.this
        if not isinstance(body, exp.Select):
            raise SQLRefusedError(f"WITH {cte.alias}: its body must be one SELECT.")
        frame = row_level(body, catalog, found)
        found[cte.alias] = Scope.of(frame, cte.alias)
    return found


def relation(select: exp.Select, catalog: Catalog, ctes: Mapping[str, Scope]) -> Scope:
    """The rows of ``select``'s FROM, JOINs and WHERE, with the names its columns go by."""
    ctes = common_tables(select, catalog, ctes)
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        raise SQLRefusedError("SELECT without FROM: name a registered private table (FROM cps).")
    private, _, alias = _source(from_.this, catalog, ctes)
    if private is None:
        raise SQLRefusedError(
            f"FROM {alias}: {alias!r} is a public table; query it with pandas or DuckDB, or JOIN "
            "it to a private table."
        )
    scope = private
    for join in select.args.get("joins") or []:
        if join.args.get("on") is None and not join.args.get("using"):
            raise SQLRefusedError(
                "FROM a, b (a cross join) is refused: JOIN a public table ON its key."
            )
        scope = _join(scope, join, catalog, ctes)
    where = select.args.get("where")
    if where is not None:
        subquery = where.this.find(exp.Subquery)
        if subquery is not None and not isinstance(subquery.parent, exp.In):
            raise SQLRefusedError(
                f"WHERE ... ({_sql(subquery.this)[:40]}...): a subquery as a value reads other "
                "rows; subqueries per ID come with the issue 'Several tables, one person'."
            )
        if has_aggregate(where.this):
            raise SQLRefusedError("An aggregate in WHERE: compare released values in HAVING.")
        found = condition(where.this, scope, "WHERE")
        if found is not None:
            scope = scope.with_frame(frames.filter_rows(scope.frame, found.expr))
    return scope


def row_level(select: exp.Select, catalog: Catalog, ctes: Mapping[str, Scope]) -> FrameHandle:
    """A subquery or CTE that transforms rows: its columns as a frame (``assign`` + selection)."""
    for clause in ("group", "having", "order", "limit", "offset", "distinct", "qualify"):
        if select.args.get(clause):
            raise SQLRefusedError(
                f"A subquery with {clause.upper()}: subqueries in FROM and WITH transform rows "
                "(derived columns, WHERE); aggregating subqueries (per ID) come with the issue "
                "'Several tables, one person'."
            )
    if any(has_aggregate(item) for item in select.expressions):
        raise SQLRefusedError(
            "An aggregate inside a subquery: subqueries in FROM and WITH transform rows; "
            "aggregating subqueries (per ID) come with the issue 'Several tables, one person'."
        )
    scope = relation(select, catalog, ctes)
    made: dict[str, Any] = {}
    names: list[str] = []
    for item in select.expressions:
        if isinstance(item, exp.Star):
            names += [c for _, _, c in scope.columns]
            continue
        target = item.this if isinstance(item, exp.Alias) else item
        name = item.alias_or_name if isinstance(item, (exp.Alias, exp.Column)) else _sql(item)
        if isinstance(target, exp.Column) and isinstance(target.this, exp.Star):
            table = target.table
            names += [c for t, _, c in scope.columns if t.lower() == table.lower()]
            continue
        value = as_column(scalar(target, scope), scope)
        source = value.expr
        if not (isinstance(target, exp.Column) and name == getattr(source, "name", None)):
            made[name] = value
        names.append(name)
    if len(set(names)) != len(names):
        raise SQLError("A subquery names two columns the same: give each an alias (AS name).")
    frame = frames.assign(scope.frame, made) if made else scope.frame
    return frames.select(frame, names)


def key_handle(value: SeriesHandle | Any) -> SeriesHandle:
    """A group key or aggregate argument as a column handle (constants refused)."""
    if not isinstance(value, SeriesHandle):
        raise SQLRefusedError("A constant as a group key or aggregate argument: use a column.")
    return value
