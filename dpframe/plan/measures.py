"""What a backend computes exactly, per group: the contract between mechanisms and backends.

A mechanism states the exact quantities it needs as :class:`Measure` values
(public parameters only); a backend evaluates them over the rows a plan
keeps.  Plain data, compared by value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpframe.plan.expressions import Expr

__all__ = ["Measure"]


@dataclass(frozen=True)
class Measure:
    """One exact quantity to compute per group.

    ``rows`` counts rows; ``nonnull`` counts rows where ``expr`` is present;
    ``sum`` adds ``round((clip(expr, lower, upper) - center) ** power / quantum)``
    over present values (missing values add nothing).  ``quantum`` is a power
    of two chosen so that every term is at most 2**22 in magnitude.
    """

    kind: Literal["rows", "nonnull", "sum"]
    expr: Expr | None = None
    lower: float = 0.0
    upper: float = 0.0
    center: float = 0.0
    power: Literal[1, 2] = 1
    quantum: float = 1.0
