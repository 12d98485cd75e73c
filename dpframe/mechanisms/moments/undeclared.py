"""The rows a group-by over declared keys leaves out, counted in one more disjoint cell, free.

A group-by over declared keys (``categories=``, or a histogram's bins) puts
every kept row whose keys are all present in exactly one cell: a declared key
combination, or, when some key is present but not declared (a misspelling, a
different case, a value beyond explicit bin edges), the *undeclared cell*.
The cells' exact measures come from the backend
(:meth:`~dpframe.backends.base.Backend.compute` with ``undeclared=True``);
the undeclared cell is released as one noisy row count, never as an index
entry, and no undeclared value is ever read out of the backend.

Privacy:
    The charge is the group-by's, unchanged (docs/proofs/undeclared_cell.md).
    Neighbouring datasets differ by one row, or by one privacy unit of up to
    k rows (``unit_rows``).

    *One row per person (k = 1)*: the noisy count of the undeclared cell gets
    the whole allocation (ε, or ρ), sensitivity 1: discrete Laplace of scale
    1/ε or discrete Gaussian of σ² = 1/(2ρ).  A row lies in exactly one cell,
    declared or undeclared, and the undeclared count reads only the rows of
    its cell; the declared cells' releases (every measure of the statistic,
    each at its share, the mean's two passes) never read it.  So a neighbour
    changes either the declared releases (whose loss the statistic's own map
    bounds by the allocation) or the undeclared count (loss at most the
    allocation), never both: parallel composition, max, not sum.

    *A privacy unit of k > 1 rows*: its rows may fall on both sides, so the
    undeclared cell is one more cell of the statistic's *first* measure (the
    row or non-missing count of count, mean, var and std; the clamped sum of
    sum), worth the measure's per-row sensitivity w (1 for a count) per
    undeclared row, released with that measure's own noise and share (1 for
    count and sum, 1/20 for the first count of a mean, a var and a std).
    The extended vector moves by at most w per row in exactly one of its
    C + 1 cells, so by at most k·w before rounding, and by at most
    ⌊kw/g⌋ + min(k, C + 1) grid units after each cell is rounded to the grid
    g; that measure's noise is calibrated to exactly this (``noise_for`` with
    spread min(k, C + 1); one grid unit more than before only when k > C and
    g > 1).  The other measures never read undeclared rows, so the loss is
    the statistic's own: the allocation.

    Multi-column group-bys have one undeclared cell ("any key column
    undeclared, none missing"); a row with a missing key is in no cell, as in
    pandas.  Keys discovered privately have no undeclared cell.

Accuracy:
    The noisy count is the exact count plus discrete Laplace (scale 1/ε) or
    Gaussian (σ = 1/sqrt(2ρ)) noise for k = 1; for k > 1, the first measure's
    noise divided by w (about k/ε for a count or a sum).  Its ``ci()`` is exact
    from that distribution.  A warning is raised when the noisy count exceeds
    the 1 − 10⁻⁶ quantile of its noise (:data:`FALSE_ALARM`): with no
    undeclared row at all, at most one release in a million warns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.calibration.additive import NoiseSpec, noise_for, release_integer_sums
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.noise import SecureRandom
from dpframe.plan.nodes import Aggregate, unit_rows

__all__ = [
    "FALSE_ALARM",
    "UndeclaredNoise",
    "first_spread",
    "plan_undeclared",
    "release_undeclared",
]

#: The chance that a group-by with no undeclared row at all warns of some (one-sided).
FALSE_ALARM = 1e-6

FloatArray = npt.NDArray[np.float64]


def first_spread(agg: Aggregate) -> int:
    """The most cells of the first measure one neighbour reaches: min(k, cells (+ 1)).

    The undeclared cell is one more cell of the first measure's vector when
    the unit has several rows (see the module docstring); 1 for one row.
    """
    cells = agg.n_groups + (1 if agg.undeclared else 0)
    return max(1, min(unit_rows(agg.plan), cells))


@dataclass(frozen=True)
class UndeclaredNoise:
    """The privacy map of the undeclared cell (public inputs only, computed before the charge).

    Attributes:
        weight: quanta one undeclared row adds to the cell (1 for a count; a
            sum's per-row sensitivity when the cell joins the sum, k > 1).
        sensitivity: the cell's sensitivity in quanta (weight × rows per unit).
        quantum: the value of one quantum (1.0 for counts).
        allocation: the share the cell's noise is calibrated to.
        noise: ``noise_for`` of the cell: (grid in quanta, Δ_u, noise).
        shared: True when the cell is a cell of the first measure (k > 1), False
            when it has the whole allocation on its own (k = 1).
        threshold: the noisy row count above which the release warns.
    """

    weight: int
    sensitivity: int
    quantum: float
    allocation: NoiseAllocation
    noise: tuple[int, int, NoiseSpec]
    shared: bool
    threshold: float

    @property
    def spec(self) -> NoiseSpec:
        """The noise in rows (the measure's noise divided by the weight of a row)."""
        return in_rows(self.noise[2], self.weight * self.quantum)


def in_rows(spec: NoiseSpec, per_row: float) -> NoiseSpec:
    """``spec`` in units of rows, when one row is worth ``per_row`` value units."""
    if per_row == 1.0:
        return spec
    return NoiseSpec(spec.kind, spec.parameter, spec.grid / per_row, spec.rounding / per_row)


def plan_undeclared(
    agg: Aggregate,
    allocation: NoiseAllocation,
    first_sensitivity: int,
    first_quantum: float,
    first_share: NoiseAllocation,
) -> UndeclaredNoise | None:
    """The undeclared cell's noise (None when ``agg`` has none); raises for unusable parameters.

    Args:
        agg: the aggregate (its ``undeclared`` flag, keys and rows per unit).
        allocation: the whole allocation of the release.
        first_sensitivity: the first measure's sensitivity in quanta (× k).
        first_quantum: the first measure's quantum.
        first_share: the first measure's share of the allocation (the mean's
            first count for a mean).
    """
    if not agg.undeclared:
        return None
    k = unit_rows(agg.plan)
    if k == 1:
        weight, sensitivity, quantum, share = 1, 1, 1.0, allocation
        noise = noise_for(1, 1.0, allocation)
    else:
        weight = first_sensitivity // k
        sensitivity, quantum, share = first_sensitivity, first_quantum, first_share
        noise = noise_for(sensitivity, quantum, share, first_spread(agg))
    spec = in_rows(noise[2], weight * quantum)
    return UndeclaredNoise(weight, sensitivity, quantum, share, noise, k > 1, _threshold(spec))


def _threshold(spec: NoiseSpec) -> float:
    """The noise's 1 − 2·FALSE_ALARM two-sided quantile in rows, plus the rounding.

    A noise parameter below float range (an ε beyond 10³⁰⁸) is no noise at all:
    the threshold is the rounding alone.
    """
    if float(spec.parameter) == 0.0:
        return spec.rounding
    return spec.abs_quantile(1.0 - 2.0 * FALSE_ALARM) + spec.rounding


def release_undeclared(
    planned: UndeclaredNoise, rows: FloatArray, rng: SecureRandom
) -> tuple[FloatArray, NoiseSpec]:
    """Noisy counts of undeclared rows (a release has one cell) and their noise, in rows.

    ``rows`` holds exact counts (one per cell; the statistical tests pass many
    to draw many independent cells with the same noise).

    Privacy:
        ``planned`` from :func:`plan_undeclared`: with one row per person, a
        count of sensitivity 1 at the whole allocation, in parallel with the
        declared cells; with units, one more cell of the first measure, whose
        noise covers it.  No extra cost (see the module docstring).

    Accuracy:
        The exact count plus discrete Laplace or Gaussian noise of
        ``spec.scale`` rows (1/ε, or 1/sqrt(2ρ), for one row per person); with
        units the count is rounded to the measure's grid (``spec.rounding``).
    """
    exact = np.asarray(rows, dtype=np.float64) * float(planned.weight)
    noisy, spec = release_integer_sums(
        exact, planned.sensitivity, planned.quantum, planned.allocation, rng, planned.noise
    )
    per_row = planned.weight * planned.quantum
    return noisy / per_row, in_rows(spec, per_row)
