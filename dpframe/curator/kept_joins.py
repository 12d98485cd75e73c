"""The joins a curator keeps per seat, within a public ceiling of rows (``kept_join_rows``).

A seat's session keeps the rows of every private join it released on (one
random draw per join, so that its releases read the same rows).  Without a
ceiling, every distinct join an analyst asks for would stay in memory for the
life of the curator.  Each kept join is counted at its **public row ceiling**
(:func:`dpframe.curator.join_costs.join_cost`: from the catalog's declared
row ceilings and rows per ID, never from the rows), nested joins too; when a
request's joins would take the seat over ``kept_join_rows``, the least
recently used kept joins of the seat are dropped
(:meth:`dpframe.Session.forget_join`) until it fits.  A release on a dropped
join later computes it again, with a new random draw: each release's
guarantee holds for any draw (docs/proofs/private_joins.md), so only the
sameness of the rows across releases is lost, never privacy.  A request whose
own joins alone are over the ceiling is refused before any charge
(``resource_limit``, 400), explanations included.

Privacy:
    Whether a join is kept, dropped or refused depends on the catalog and the
    analyst's requests only, never on the rows.

Accuracy:
    Not a release.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from dpframe.curator.join_costs import Costs, join_cost
from dpframe.errors import ResourceLimitError
from dpframe.plan.estimate import ResourceLimits
from dpframe.plan.nodes import Join, Plan, Source, lineage

__all__ = ["KeptJoins", "check_keepable", "request_joins"]


def request_joins(
    source: Source,
    leaf: Callable[[Source], tuple[int, Mapping[str, int]]],
    model: Costs,
    limits: ResourceLimits,
    text_chars: int,
) -> dict[Join, int]:
    """Every join a request on ``source`` keeps (nested ones too), with its public row ceiling."""
    found: dict[Join, int] = {}

    def visit(side: Source) -> None:
        join = side.join
        if join is None or join in found:
            return
        found[join] = join_cost(side, leaf, model, limits, text_chars).rows
        plans: tuple[Plan, Plan] = (join.left, join.right)
        for plan in plans:
            visit(lineage(plan)[0])

    visit(source)
    return found


def check_keepable(wanted: Mapping[Join, int], ceiling: int) -> None:
    """Refuse (before any charge) a request whose own joins are over the seat's ceiling.

    Raises:
        ResourceLimitError: naming the rows and the ceiling (public numbers).
    """
    rows = sum(wanted.values())
    if rows > ceiling:
        raise ResourceLimitError(
            f"This request's joins can hold up to {rows:,} rows (from the catalog's row "
            f"ceilings and rows per ID); the curator keeps at most {ceiling:,} rows of joins "
            "per analyst and dataset ([server] kept_join_rows). Join fewer or smaller "
            "datasets, or ask the data owner to raise kept_join_rows."
        )


@dataclass
class KeptJoins:
    """A seat's kept joins and their public row ceilings, least recently used first."""

    rows: OrderedDict[Join, int] = field(default_factory=OrderedDict)

    @property
    def total(self) -> int:
        """The sum of the kept joins' row ceilings."""
        return sum(self.rows.values())

    def admit(
        self, wanted: Mapping[Join, int], ceiling: int, forget: Callable[[Join], object]
    ) -> list[Join]:
        """Keep ``wanted`` (now the most recently used), dropping the oldest others to fit.

        Called with the seat held, before the release (and its charge).
        Returns the joins dropped (``forget`` was called on each).

        Raises:
            ResourceLimitError: ``wanted`` alone over ``ceiling`` (nothing dropped).
        """
        check_keepable(wanted, ceiling)
        for join, rows in wanted.items():
            self.rows.pop(join, None)
            self.rows[join] = rows
        dropped: list[Join] = []
        while self.total > ceiling:
            oldest = next(iter(self.rows))  # never one of ``wanted``: they fit and are last
            del self.rows[oldest]
            forget(oldest)
            dropped.append(oldest)
        return dropped
