"""The backend interface: exact, non-private evaluation of plans.

A backend evaluates filters, derived columns, clamping and per-group sums,
and nothing else: noise, accounting and release stay in the session and are
identical for every backend.  Results are exact integer-valued sums (float64
arrays holding integers below 2**53), one entry per group.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import GroupKey, Plan

__all__ = ["MAX_ROWS", "Backend", "Measure"]

#: The largest number of rows a release may aggregate.  Sums are computed in
#: float64 over values quantized to at most 2**22 units, so any sum of up to
#: 2**31 rows is exact.
MAX_ROWS = 2**31


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


class Backend(Protocol):
    """What the session needs from an engine."""

    def compute(
        self, plan: Plan, measures: tuple[Measure, ...], by: tuple[GroupKey, ...]
    ) -> list[npt.NDArray[np.float64]]:
        """Exact values of ``measures`` per group (length = product of key sizes)."""
        ...

    def key_counts(
        self,
        plan: Plan,
        expr: Expr,
        unit: str = "",
        max_keys: int = 0,
        rng: SecureRandom | None = None,
    ) -> tuple[list[Hashable], npt.NDArray[np.int64]]:
        """Exact row count per distinct present value of ``expr`` (private key discovery)."""
        ...

    def fingerprint(self) -> str:
        """A stable digest of the data (the ledger key)."""
        ...
