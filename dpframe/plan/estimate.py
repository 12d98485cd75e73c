"""How much work a release asks for, from public inputs only, checked before the charge.

:func:`estimate` sizes a request from its plan, the expressions it evaluates
and the number of output cells (the product of the declared key and bin
counts).  It never looks at the data or its row count: the result, and
whether :func:`check_resources` refuses, must not depend on the private rows
(an analyst could otherwise probe them through refusals or timing).  The
engine calls both before charging the budget, so an oversized request is
refused for free.

Every count is computed in time linear in the plan's steps and distinct
expression objects, without recursion, so even a very large request (a chain
of 10**4 derived columns, an expression doubled 60 times over shared parts)
is sized and refused quickly.

Example:
    >>> sizes = estimate(node.plan, [node.expr], node.n_groups)  # doctest: +SKIP
    >>> check_resources(sizes)  # raises ResourceLimitError when over  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any

from dpframe.errors import InvalidArgumentError, ResourceLimitError
from dpframe.plan.dag import DagBuilder, TooLargeError
from dpframe.plan.expressions import Expr
from dpframe.plan.keys import KeyTable, intern
from dpframe.plan.nodes import Assign, Filter, Plan, Source, lineage

__all__ = [
    "VISIT_CAP",
    "ResourceEstimate",
    "ResourceLimits",
    "check_resources",
    "estimate",
    "public_lists",
]

#: :func:`estimate` stops resolving after this many nodes and reports ``VISIT_CAP + 1``
#: evaluation nodes (more than any allowed limit): sizing stays cheap however large
#: the request.
VISIT_CAP = 1 << 20


@dataclass(frozen=True)
class ResourceEstimate:
    """The size of a request, from public inputs only.

    Attributes:
        plan_steps: filters and derived-column definitions in the plan.
        expression_nodes: distinct expression structures across the plan's
            steps and the release's expressions, as written (shared and
            repeated sub-expressions counted once; columns not resolved).
        evaluation_nodes: nodes to resolve once derived columns are read
            through their definitions: (expression, bindings in force) pairs,
            shared parts counted once.  An upper bound on the vectorized
            operations the backend performs per chunk of rows (it evaluates
            each distinct computation once per chunk); ``VISIT_CAP + 1`` means
            "more than ``VISIT_CAP``".
        expression_depth: the longest chain of nested expression nodes as
            written (the nesting that serializers and pickling recurse through).
        literal_values: values in ``isin`` lists, bin edges and recoded values
            and their labels, text patterns and replacements (``.str``), over
            distinct expression structures, and the items of the lists of
            public values the release itself carries (a group key's
            categories, quantile probabilities, ...).
        output_cells: cells released (product of the declared key sizes; 1
            for a scalar release).
        longest_list: items in the longest single list of public values (an
            ``isin`` list, bin edges, a group key's categories, quantiles).
    """

    plan_steps: int
    expression_nodes: int
    evaluation_nodes: int
    expression_depth: int
    literal_values: int
    output_cells: int
    longest_list: int = 0


@dataclass(frozen=True)
class ResourceLimits:
    """The largest request evaluated; each limit protects the data side as described.

    The defaults are far above what the pandas-like API builds for real
    analyses (a few dozen nodes and steps, quantiles with 4,097 bin edges,
    group-bys with thousands of cells) and low enough that a request at every
    limit still answers in seconds on one core and bounded memory.

    Attributes:
        max_evaluation_nodes: 10,000.  Every node is one vectorized pass over
            each chunk of rows (2**20 rows), so this bounds the CPU time of a
            release per row; it also bounds the compile step and the number of
            intermediate columns alive at once.
        max_plan_steps: 1,000.  Bounds the length of the chain of plan nodes
            that the engine, the ledger label, the wire format and any
            recursive consumer (``repr``, pickling of plans nests one level per
            step) walk; Python's default recursion limit is 1,000 frames.
        max_expression_depth: 256.  JSON encoding and decoding (curator mode)
            and pickling recurse once or more per nesting level; this keeps
            them well inside the default recursion limit (pickling a nested
            plan fails between 300 and 500 levels).
        max_literal_values: 2**20.  Memory of the literals held by the plan and
            carried by the request, and the per-chunk cost of ``isin`` hashing
            and bin searches.
        max_cells: 2**24.  Each measure allocates one float64 total per cell
            (128 MiB at the limit), draws noise per cell and returns every cell;
            it also keeps the cell index of a row (a product of key sizes)
            far inside the backend's integer range.
        max_list_items: 2**20.  The longest single list of public values (a
            group key's categories, an ``isin`` list, bin edges, quantile
            probabilities): the per-chunk cost of hashing rows into it.

    A curator uses the stricter :meth:`remote` limits by default.
    """

    max_evaluation_nodes: int = 10_000
    max_plan_steps: int = 1_000
    max_expression_depth: int = 256
    max_literal_values: int = 1 << 20
    max_cells: int = 1 << 24
    max_list_items: int = 1 << 20

    @classmethod
    def remote(cls) -> ResourceLimits:
        """A curator's defaults: stricter, since the analyst there may be hostile.

        4,000 expression nodes to evaluate (a chain of 1,000 derived columns
        fits), 1,000 plan steps (the wire's own limit), 64 levels of nesting
        (the wire's JSON depth), 100,000 literal values, 100,000 output cells
        and 10,000 items in one list: a request at every limit answers in a
        few seconds on one core for a million rows, and its answer stays a
        few MB.  The catalog may change each one (``[server.limits]``).
        """
        return cls(
            max_evaluation_nodes=4_000,
            max_plan_steps=1_000,
            max_expression_depth=64,
            max_literal_values=100_000,
            max_cells=100_000,
            max_list_items=10_000,
        )

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{field.name} must be a positive integer.")
        if self.max_evaluation_nodes > VISIT_CAP:
            raise InvalidArgumentError(f"max_evaluation_nodes must be at most {VISIT_CAP}.")


def estimate(
    plan: Plan,
    exprs: Iterable[Expr | None],
    cells: int,
    lists: Iterable[int] = (),
    limits: ResourceLimits | None = None,
) -> ResourceEstimate:
    """Size a request: ``plan``, the expressions the release evaluates on it, its cells.

    Uses only the plan, the expressions, ``cells`` (computed by the caller
    from declared keys and bins) and ``lists``: never the data or its row count.

    Args:
        plan: the rows the release reads.
        exprs: the expressions evaluated on them as of the plan's end (measure
            values, group keys; None entries are skipped).
        cells: the number of released cells (1 for a scalar release).
        lists: the lengths of the lists of public values the release carries
            outside its expressions (:func:`public_lists`).
        limits: when given, the cheap sizes (cells, lists and literal values,
            read without hashing any value) are compared with them first, and
            a request over them is answered with those sizes alone (the others
            0): a 10**7-bin histogram is refused in milliseconds, not after
            hashing ten million edges.

    Returns:
        The sizes (see :class:`ResourceEstimate`).
    """
    _, steps = lineage(plan)
    roots = [e for e in exprs if e is not None]
    lengths = list(lists)
    if limits is not None:
        quick = _quick(steps, roots, int(cells), lengths)
        if (
            quick.output_cells > limits.max_cells
            or quick.literal_values > limits.max_literal_values
            or quick.longest_list > limits.max_list_items
        ):
            return quick
    table = KeyTable()
    memo: dict[int, int] = {}
    for step in steps:
        intern(step.expr if isinstance(step, Assign) else step.predicate, table, memo)
    for expr in roots:
        intern(expr, table, memo)
    depth: list[int] = []
    literals = sum(lengths)
    longest = max(lengths, default=0)
    for tag, params, args in table.entries:
        depth.append(1 + max((depth[a] for a in args), default=0))
        if tag == "str_match":
            literals += len(params[1])  # type: ignore[arg-type]  # the patterns
        elif tag == "str_replace":
            literals += 2  # the pattern and its replacement
        if tag in ("isin", "bucket", "bin", "recode"):
            size = len(params[0])  # type: ignore[arg-type]  # a tuple of keys
            literals += 2 * size if tag == "recode" else size  # recode: values and labels
            longest = max(longest, size)
    builder = DagBuilder(plan, max_visits=VISIT_CAP)
    try:
        builder.filters()
        builder.assigns()
        for expr in roots:
            builder.add(expr)
        visits = builder.visits
    except TooLargeError:
        visits = VISIT_CAP + 1
    return ResourceEstimate(
        plan_steps=len(steps),
        expression_nodes=len(table),
        evaluation_nodes=visits,
        expression_depth=max(depth, default=0),
        literal_values=literals,
        output_cells=int(cells),
        longest_list=longest,
    )


def _quick(
    steps: Iterable[Assign | Filter], roots: list[Expr], cells: int, lengths: list[int]
) -> ResourceEstimate:
    """Cells, literal values and the longest list, read without hashing any value.

    Walks the distinct expression objects (by identity) and reads the length of
    each ``isin`` list, bin edges and recoding; values are never hashed, so this
    is fast however long the lists.  Other sizes are 0.
    """
    stack: list[Expr] = [s.expr if isinstance(s, Assign) else s.predicate for s in steps]
    stack.extend(roots)
    seen: set[int] = set()
    literals, longest = sum(lengths), max(lengths, default=0)
    while stack:
        expr = stack.pop()
        if id(expr) in seen:
            continue
        seen.add(id(expr))
        if expr.tag in ("isin", "bucket", "bin", "recode"):
            size = len(expr.params()[0])
            literals += 2 * size if expr.tag == "recode" else size
            longest = max(longest, size)
        stack.extend(expr.children())
    return ResourceEstimate(0, 0, 0, 0, literals, cells, longest)


def public_lists(node: object) -> list[int]:
    """The lengths of the lists of public values in a release node, outside plan and expressions.

    Walks the node's dataclass fields (group keys and their categories,
    quantile probabilities, bounds of features, parts of a composite, ...)
    without recursion; expressions and plans are skipped (:func:`estimate`
    sizes them).  Every tuple or list counts with its length.

    Args:
        node: a release node (any frozen dataclass).

    Returns:
        One length per list found, in no particular order.
    """
    skip = (Expr, Source, Filter, Assign)
    lengths: list[int] = []
    stack: list[object] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, skip):
            continue
        if isinstance(item, (tuple, list)):
            lengths.append(len(item))
            if not set(map(type, item)) <= _SCALARS:  # a list of keys is not walked item by item
                stack.extend(v for v in item if isinstance(v, (tuple, list)) or _is_dataclass(v))
        elif _is_dataclass(item):
            kind: Any = type(item)
            stack.extend(getattr(item, name) for name in _field_names(kind))
    return lengths


@functools.cache
def _field_names(cls: Any) -> tuple[str, ...]:
    """A dataclass's field names, looked up once per class (every release sizes its node)."""
    return tuple(f.name for f in dataclasses.fields(cls))


_SCALARS = frozenset({int, float, str, bool, type(None), bytes, Fraction})


def _is_dataclass(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def check_resources(sizes: ResourceEstimate, limits: ResourceLimits | None = None) -> None:
    """Refuse a request over any limit (call before the charge).

    Args:
        sizes: from :func:`estimate`.
        limits: the limits (None: :class:`ResourceLimits` defaults).

    Raises:
        ResourceLimitError: naming every size over its limit, with both numbers.
    """
    limits = ResourceLimits() if limits is None else limits
    checks = (
        (sizes.evaluation_nodes, limits.max_evaluation_nodes, "expression nodes to evaluate"),
        (sizes.plan_steps, limits.max_plan_steps, "plan steps (filters and derived columns)"),
        (sizes.expression_depth, limits.max_expression_depth, "levels of expression nesting"),
        (
            sizes.literal_values,
            limits.max_literal_values,
            "literal values (isin lists, bins, labels, patterns)",
        ),
        (sizes.output_cells, limits.max_cells, "output cells"),
        (
            sizes.longest_list,
            limits.max_list_items,
            "values in one list of keys, isin values, bin edges or quantiles",
        ),
    )
    over = [f"{size} {what} (limit {limit})" for size, limit, what in checks if size > limit]
    if over:
        raise ResourceLimitError(
            "This request is too large to evaluate; nothing was charged. It has "
            + "; ".join(over)
            + ". Simplify it: define reused parts once with assign(), use fewer steps, "
            "keys or values."
        )
