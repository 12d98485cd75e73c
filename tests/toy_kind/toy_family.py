"""Piece 2, the family: privacy map, release and worst-case work of :class:`NonNullCount`.

Privacy:
    A count: one row (or a privacy unit's k rows) changes it by at most 1
    (or k); discrete Laplace noise for ε-DP, discrete Gaussian for zCDP,
    calibrated by :func:`~dpframe.mechanisms.calibration.additive.noise_for`.

Accuracy:
    The noise's scale (``scale``/``std`` of its spec), as a count's.
"""

from __future__ import annotations

from typing import Any

from dpframe.mechanisms.calibration.additive import noise_for, release_integer_sums
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.core.family import Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.plan.expressions import col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import unit_rows
from tests.toy_kind.node import NonNullCount


class NonNullCountFamily(Family[NonNullCount]):
    """Releases :class:`NonNullCount` (see the module docstring)."""

    node_type = NonNullCount

    def work(self, node: NonNullCount) -> Work:
        """One evaluation of the plan and one noise draw: nothing more."""
        return PLAIN

    def privacy_map(self, node: NonNullCount, allocation: NoiseAllocation) -> Any:
        """The count's grid, sensitivity and noise (public inputs only)."""
        return noise_for(unit_rows(node.plan), 1.0, allocation)

    def release(self, run: Released[NonNullCount]) -> tuple[Any, str]:
        """The exact count from the backend, plus the planned noise."""
        (exact,) = run.backend.compute(
            run.node.plan, (Measure("nonnull", col(run.node.column)),), ()
        )
        noisy, spec = release_integer_sums(
            exact, unit_rows(run.node.plan), 1.0, run.allocation, run.rng, run.noise
        )
        value = float(noisy[0])
        return value, f"{value:g} (scale {spec.scale:.3g})"
