"""A parsed SELECT to one release node and the post-processing of its answer (nothing charged).

The order is SQL's: FROM/JOIN/WHERE (:mod:`.relations`), GROUP BY keys
(assigned when derived, then ``grouping.group``), the select list's
aggregates (:mod:`.aggregates`: one node), then HAVING, ORDER BY and LIMIT,
which act on released values only (post-processing, free).  An aggregate in
HAVING or ORDER BY that the select list does not show is released too, in
the same node, and charged with its share (``EXPLAIN`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dpframe.api.handle import GroupHandle, Runner
from dpframe.api.sql.aggregates import Cell, cell_of, derived_columns, is_aggregate, node_of
from dpframe.api.sql.catalog import Catalog
from dpframe.api.sql.errors import SQLRefusedError
from dpframe.api.sql.parse import Parsed
from dpframe.api.sql.relations import has_aggregate, relation
from dpframe.api.sql.scalars import Const, scalar
from dpframe.api.sql.scope import Scope
from dpframe.api.verbs import frames, grouping
from dpframe.plan.expressions import Col
from dpframe.plan.privacy import PrivacyRequest

__all__ = ["Compiled", "Output", "compile_query"]


@dataclass(frozen=True)
class Output:
    """One column of the answer: a group key, an aggregate, or arithmetic of aggregates."""

    name: str
    key: str | None = None
    cell: int | None = None
    formula: exp.Expression | None = None


@dataclass(frozen=True)
class Compiled:
    """A query compiled: the node to release and how to shape its answer."""

    runner: Runner
    node: Any
    shape: str
    cells: tuple[Cell, ...]
    shown: int
    group: GroupHandle | None
    keys: tuple[str, ...]
    outputs: tuple[Output, ...]
    texts: dict[str, int]
    having: exp.Expression | None = None
    order: tuple[tuple[exp.Expression, bool], ...] = ()
    limit: int | None = None
    offset: int = 0
    explain: bool = False
    text: str = ""
    request: PrivacyRequest | None = field(default=None, compare=False)

    @property
    def hidden(self) -> tuple[Cell, ...]:
        """Aggregates released only for HAVING or ORDER BY (charged, not shown)."""
        return self.cells[self.shown :]

    @property
    def post_processed(self) -> bool:
        """True when HAVING, ORDER BY or LIMIT act on the answer."""
        return (
            self.having is not None
            or bool(self.order)
            or self.limit is not None
            or bool(self.offset)
        )


def _sql(node: exp.Expression) -> str:
    return str(node.sql(dialect="duckdb"))


def _refuse_everywhere(select: exp.Select) -> None:
    if select.args.get("distinct"):
        raise SQLRefusedError(
            "SELECT DISTINCT lists private values; count them with COUNT(DISTINCT x), or list "
            "the keys found privately with GROUP BY x and COUNT(*) (delta= when not declared)."
        )
    if select.args.get("qualify") is not None:
        raise SQLRefusedError("QUALIFY filters on window functions, which are refused.")
    for filtered in select.find_all(exp.Filter):
        raise SQLRefusedError(
            f"{_sql(filtered)[:60]}: FILTER (WHERE ...) is not available; write SUM(CASE WHEN "
            "cond THEN 1 ELSE 0 END), or move the condition to WHERE."
        )
    for window in select.find_all(exp.Window):
        raise SQLRefusedError(
            f"{_sql(window)[:60]}: window functions over private rows return row-level values; "
            "aggregate with GROUP BY instead."
        )
    for item in select.expressions:
        if isinstance(item, exp.Star) or (
            isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
        ):
            raise SQLRefusedError(
                "SELECT * returns private rows; select aggregates: SELECT COUNT(*), AVG(x) ... "
                "(GROUP BY keys for one row per key)."
            )


def _int_clause(node: exp.Expression | None, clause: str) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
    if not isinstance(value, exp.Literal) or value.is_string or not str(value.this).isdigit():
        raise SQLRefusedError(f"{clause} takes a whole number.")
    return int(str(value.this))


@dataclass
class _Keys:
    names: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # SQL text -> key name
    made: dict[str, Any] = field(default_factory=dict)


def _group_keys(select: exp.Select, scope: Scope) -> _Keys:
    keys = _Keys()
    group = select.args.get("group")
    if group is None:
        return keys
    for clause in ("rollup", "cube", "grouping_sets"):
        if group.args.get(clause):
            raise SQLRefusedError(
                f"GROUP BY {clause.upper()}: run one query per grouping (each is a release)."
            )
    if group.args.get("all"):
        raise SQLRefusedError("GROUP BY ALL: name the key columns (GROUP BY region, year).")
    items = select.expressions
    aliases = {i.alias.lower(): i for i in items if isinstance(i, exp.Alias)}
    for node in group.expressions:
        if isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            kind = type(node).__name__.upper()
            raise SQLRefusedError(
                f"GROUP BY {kind}: run one query per grouping (each is a release)."
            )
        target, name = node, None
        if isinstance(node, exp.Literal) and not node.is_string:
            position = int(str(node.this))
            if not 1 <= position <= len(items):
                raise SQLRefusedError(
                    f"GROUP BY {position}: the select list has {len(items)} items."
                )
            item = items[position - 1]
            target = item.this if isinstance(item, exp.Alias) else item
            name = item.alias if isinstance(item, exp.Alias) else None
        elif isinstance(node, exp.Column) and not node.table and node.name.lower() in aliases:
            known = {n.lower() for _, n, _ in scope.columns}
            if node.name.lower() not in known:
                item = aliases[node.name.lower()]
                target, name = item.this, item.alias
        if has_aggregate(target):
            raise SQLRefusedError(f"GROUP BY {_sql(node)}: a key cannot be an aggregate.")
        value = scalar(target, scope)
        if isinstance(value, Const):
            raise SQLRefusedError(f"GROUP BY {_sql(node)}: group by a column or an expression.")
        plain = isinstance(value.expr, Col) and value.expr.name in scope.frame.schema.names
        if name is None:
            name = value.expr.name if plain and isinstance(value.expr, Col) else _sql(target)
        if not (plain and isinstance(value.expr, Col) and value.expr.name == name):
            keys.made[name] = value
        if name in keys.names:
            raise SQLRefusedError(f"GROUP BY names {name!r} twice.")
        keys.names.append(name)
        keys.texts[_sql(target)] = name
        if plain and isinstance(value.expr, Col):
            keys.texts.setdefault(value.expr.name, name)
    return keys


class _Cells:
    """The aggregates of a query, each once, in order of appearance."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.cells: list[Cell] = []
        self.texts: dict[str, int] = {}

    def collect(self, node: exp.Expression) -> None:
        for found in node.find_all(exp.AggFunc, exp.WithinGroup, bfs=False):
            if not isinstance(found, exp.Expression) or isinstance(found.parent, exp.WithinGroup):
                continue
            text = _sql(found)
            if text in self.texts:
                continue
            inner = [
                a
                for child in found.iter_expressions()
                for a in child.find_all(exp.AggFunc)
                if not (isinstance(found, exp.WithinGroup) and a is found.this)
            ]
            if inner:
                raise SQLRefusedError(f"{text}: an aggregate of an aggregate is not available.")
            cell = cell_of(found, self.scope)
            same = next((i for i, c in enumerate(self.cells) if c.identity == cell.identity), None)
            if same is None:
                same = len(self.cells)
                self.cells.append(cell)
            self.texts[text] = same


def _key_output(item: exp.Expression, target: exp.Expression, keys: _Keys, scope: Scope) -> str:
    text = _sql(target)
    if text in keys.texts:
        return keys.texts[text]
    if isinstance(target, exp.Column):
        resolved = scope.resolve(target.name, target.table or None)
        if resolved in keys.texts:
            return keys.texts[resolved]
    if isinstance(item, exp.Alias) and item.alias in keys.names:
        return item.alias
    raise SQLRefusedError(
        f"SELECT {text}: a value of each row is neither aggregated nor a GROUP BY key; "
        "aggregate it (AVG, COUNT, ...) or add it to GROUP BY."
    )


def compile_query(
    parsed: Parsed,
    catalog: Catalog,
    runner: Runner,
    request: PrivacyRequest,
    weights: object = None,
) -> Compiled:
    """The node and answer shape of a parsed query (refused before anything is charged)."""
    select = parsed.tree
    _refuse_everywhere(select)
    scope = relation(select, catalog, {})
    if scope.frame.runner is not runner:
        raise SQLRefusedError("The query's table belongs to another session; query it there.")
    keys = _group_keys(select, scope)
    cells = _Cells(scope)
    for item in select.expressions:
        cells.collect(item)
    shown = len(cells.cells)
    outputs: list[Output] = []
    for item in select.expressions:
        target = item.this if isinstance(item, exp.Alias) else item
        name = item.alias if isinstance(item, exp.Alias) else str(item.sql())
        if isinstance(target, exp.Column) and not isinstance(item, exp.Alias):
            name = target.name
        if not has_aggregate(target) and not isinstance(target, exp.WithinGroup):
            outputs.append(Output(name, key=_key_output(item, target, keys, scope)))
        elif is_aggregate(target):
            outputs.append(Output(name, cell=cells.texts[_sql(target)]))
        else:
            outputs.append(Output(name, formula=target))
    if not any(o.key is None for o in outputs):
        raise SQLRefusedError(
            "A SELECT without an aggregate returns rows or keys; add COUNT(*), AVG(x), ... "
            "(the keys come with their released values)."
        )
    having = select.args.get("having")
    having_node = None if having is None else having.this
    if having_node is not None:
        cells.collect(having_node)
    order: list[tuple[exp.Expression, bool]] = []
    order_clause = select.args.get("order")
    for ordered in [] if order_clause is None else order_clause.expressions:
        cells.collect(ordered.this)
        order.append((ordered.this, bool(ordered.args.get("desc"))))
    found = cells.cells
    frame = scope.frame
    grouped = bool(keys.names)
    made = dict(keys.made)
    if grouped or len(found) > 1:
        made.update({k: v for k, v in derived_columns(found, frame).items() if k not in made})
    if made:
        frame = frames.assign(frame, made)
    group = grouping.group(frame, tuple(keys.names)) if grouped else None
    if group is not None and not group.keys[0].categories:
        _check_discovery(found, request, keys.names[0])
    node, shape = node_of(frame, group, found, request, weights)
    compiled = Compiled(
        runner=runner,
        node=node,
        shape=shape,
        cells=tuple(found),
        shown=shown,
        group=group,
        keys=tuple(keys.names),
        outputs=tuple(outputs),
        texts=dict(cells.texts),
        having=having_node,
        order=tuple(order),
        limit=_int_clause(select.args.get("limit"), "LIMIT"),
        offset=_int_clause(select.args.get("offset"), "OFFSET") or 0,
        explain=parsed.explain,
        text=parsed.text,
        request=request,
    )
    _check_single_answers(compiled)
    return compiled


def _check_discovery(cells: list[Cell], request: PrivacyRequest, name: str) -> None:
    """Keys found privately: one count, sum, mean, var or std, and a δ to pay for the discovery."""
    if len(cells) != 1 or cells[0].statistic not in ("count", "sum", "mean", "var", "std"):
        raise SQLRefusedError(
            f"GROUP BY {name}: its keys are not declared, and keys found privately come with "
            "one COUNT, SUM, AVG, VARIANCE or STDDEV per query; declare the keys (categories=) "
            f"or find them first with pf.discover_keys({name!r}, epsilon=..., delta=...)."
        )
    if not request.delta:
        raise SQLRefusedError(
            f"GROUP BY {name}: its keys are not declared; pass delta= (%%dpsql --delta) to "
            "find them privately in this release, or declare them (categories=)."
        )


def _check_single_answers(compiled: Compiled) -> None:
    """MODE releases a key, not a number: it is answered as the facade answers it, alone."""
    if any(c.statistic == "mode" for c in compiled.cells) and (
        compiled.post_processed or len(compiled.outputs) != 1
    ):
        raise SQLRefusedError("MODE(x) releases a key: ask it alone (SELECT MODE(x) FROM t).")
