"""A private join's worst case through a curator: the rows it can give and the seconds it costs.

A request on a join (``visits.merge(people, ...)`` on remote frames) reads
the rows the join gives, not a dataset's rows: its release is priced over
the join's row ceiling, and building the join is priced on top
(:func:`join_cost`), from public inputs only: the catalog's declared row
ceilings (``max_rows``) and rows per ID (``max_rows_per_unit``), the join's
kind and the sides' plans, never the private row counts.

The ceiling of the rows a join gives, for sides of at most ``n_l`` and
``n_r`` rows and at most ``k_l`` and ``k_r`` rows per ID (the keys include
the ID, missing keys never match, so a left row matches at most ``k_r``
right rows and a right row at most ``k_l`` left rows):

* inner: ``min(n_l·k_r, n_r·k_l)``; left: ``n_l·k_r``; right: ``n_r·k_l``;
* outer: ``min(n_l·k_r, n_r·k_l) + n_l + n_r`` (the matched rows and the
  unmatched rows of either side);
* semi and anti: ``n_l`` (left rows only);

the truncation to ``max_rows`` per ID only removes rows.  A side that is a
join has the ceiling of its own join and ``k`` its ``max_rows``.  In a join
on another key (``k_left``, ``k_right``), each side keeps at most that many
rows per key value, so a left row matches at most ``k_right`` right rows:
the same formulas with those.  The rank table of ``k="auto"``
(``rows="per_key"``) has one row per row of either side: ``n_l + n_r``.

Its seconds: each side's plan once over its rows (as a release's plan:
evaluation nodes + 2 vectorized passes, plus :mod:`dpframe.curator.row_costs`
for list and text nodes), and :data:`JOIN_ROW_OPS` vectorized passes for
each row of either side (hashing the keys) and each row the match gives
(gathering the columns, the truncation's random keys and sort).  Each side's
plan is checked against the resource limits too (the release's own check
sees only the steps after the join).

Privacy:
    Computed from the catalog and the request only: whether a join is
    refused never depends on the rows.

Accuracy:
    Not a release; an upper bound on the work, linear in each term.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dpframe.curator.row_costs import UnitCosts, row_seconds
from dpframe.plan.estimate import ResourceLimits, check_resources, estimate
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Plan, Source, lineage

__all__ = [
    "JOIN_ROW_OPS",
    "Costs",
    "JoinCost",
    "datasets_read",
    "join_cost",
    "join_text_chars",
    "joined_rows",
    "leaves",
]

#: Vectorized passes per row of a join's sides and of its matched rows.  Measured on the
#: 2-core test machine at a load average of 7.3: a join of 10**6 visits and 250,000 people
#: (inner or outer) truncated to 2 rows per person took 0.65 to 3.7 s for 2.25 million
#: rows (sides and matched), 6 to 33 passes of ``row_op_seconds`` (5e-8 s) a row.
JOIN_ROW_OPS = 40


class Costs(UnitCosts, Protocol):
    """The cost model's fields a join needs (a :class:`~dpframe.curator.worst_case.CostModel`)."""

    @property
    def row_op_seconds(self) -> float: ...  # noqa: D102


@dataclass(frozen=True)
class JoinCost:
    """A join's row ceiling and the most seconds building it takes.

    Attributes:
        rows: the most rows the join gives (every release on it reads at most these).
        seconds: the most seconds evaluating its sides, matching and truncating take.
    """

    rows: int
    seconds: float


@dataclass(frozen=True)
class _Side:
    """A join side as the sizing sees a release: its plan and the columns it keeps."""

    plan: Plan
    columns: tuple[str, ...]

    def expressions(self) -> tuple[Expr, ...]:
        return tuple(Col(c) for c in self.columns)


def joined_rows(how: str, n_l: int, n_r: int, k_l: int, k_r: int) -> int:
    """The most rows a join of ``how`` gives (see the module docstring)."""
    if how in ("semi", "anti"):
        return n_l
    if how == "left":
        return n_l * k_r
    if how == "right":
        return n_r * k_l
    matched = min(n_l * k_r, n_r * k_l)
    return matched + n_l + n_r if how == "outer" else matched


def join_cost(
    source: Source,
    leaf: Callable[[Source], tuple[int, Mapping[str, int]]],
    model: Costs,
    limits: ResourceLimits,
    text_chars: int,
) -> JoinCost:
    """The row ceiling and worst-case seconds of the join ``source`` (public inputs only).

    Args:
        source: a join source (``source.join`` set).
        leaf: a dataset's source to its declared row ceiling and the declared
            maximum length of its text columns that have one.
        model: the curator's cost model.
        limits: the resource limits each side's plan is checked against.
        text_chars: the most characters per row of a text column without a
            declared maximum length.

    Raises:
        ResourceLimitError: a side's plan over the resource limits.
    """
    join = source.join
    if join is None:
        raise ValueError("join_cost takes a join source.")
    sides = ((join.left, join.left_columns), (join.right, join.right_columns))
    counts: list[int] = []
    seconds = 0.0
    for plan, columns in sides:
        side_source = lineage(plan)[0]
        lengths: Mapping[str, int]
        if side_source.join is not None:
            inner = join_cost(side_source, leaf, model, limits, text_chars)
            rows, lengths = inner.rows, _longest(side_source, leaf)
            seconds += inner.seconds
        else:
            rows, lengths = leaf(side_source)
        side = _Side(plan, columns)
        sizes = estimate(plan, side.expressions(), 1, (), limits)
        check_resources(sizes, limits)
        per_row = (sizes.evaluation_nodes + 2) * model.row_op_seconds
        per_row += row_seconds(side, model, lengths, text_chars)
        seconds += rows * per_row
        counts.append(rows)
    k_l, k_r = lineage(join.left)[0].unit_rows, lineage(join.right)[0].unit_rows
    if join.on_key:  # each side cut to k rows per key value: a row matches at most k others
        k_l, k_r = join.k_left, join.k_right
    if join.rows == "per_key":  # k="auto"'s rank table: one row per side row, no matching
        matched = counts[0] + counts[1]
    else:
        matched = joined_rows(join.how, counts[0], counts[1], k_l, k_r)
    seconds += (counts[0] + counts[1] + matched) * JOIN_ROW_OPS * model.row_op_seconds
    return JoinCost(matched, seconds)


def _longest(
    source: Source, leaf: Callable[[Source], tuple[int, Mapping[str, int]]]
) -> dict[str, int]:
    """The declared lengths of a join's columns: the longest each name has in any of its datasets.

    A column of a join keeps its dataset's declared length (a suffixed name
    is not found here: it is priced at ``text_chars``, or see
    :func:`join_text_chars`).
    """
    lengths: dict[str, int] = {}
    for dataset in leaves(source):
        for name, length in leaf(dataset)[1].items():
            lengths[name] = max(length, lengths.get(name, 0))
    return lengths


def leaves(source: Source) -> list[Source]:
    """The dataset sources a join reads (each once, left to right)."""
    join = source.join
    if join is None:
        return [source]
    found: list[Source] = []
    for plan in (join.left, join.right):
        for item in leaves(lineage(plan)[0]):
            if item not in found:
                found.append(item)
    return found


def datasets_read(node: Any, name_of: Callable[[Source], str]) -> frozenset[str]:
    """The catalog names of the datasets a request reads (a join's every side; public)."""
    return frozenset(name_of(leaf) for leaf in leaves(lineage(node.plan)[0]))


def join_text_chars(
    source: Source, leaf: Callable[[Source], tuple[int, Mapping[str, int]]], text_chars: int
) -> int:
    """The most characters per row of any text column of a join (for pricing its releases).

    The longest declared length among its datasets' columns, or ``text_chars``
    if larger: an upper bound for every text column of the joined rows, whatever
    its name after the suffixes.
    """
    longest = max((n for d in leaves(source) for n in leaf(d)[1].values()), default=0)
    return max(text_chars, longest)
