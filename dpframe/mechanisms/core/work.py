"""The work a release does, in units a curator prices: from public inputs only.

Each family declares its release's work beyond the common part
(:meth:`dpframe.mechanisms.core.family.Family.work`); a curator prices it with
the cost model measured on its machine and the dataset's *declared* row
ceiling (:mod:`dpframe.curator.worst_case`), never the private row count.
The common part, counted by the curator for every release, is one
evaluation of the plan over the rows (each expression node one vectorized
pass) and one noise draw or utility per output cell.

Privacy:
    Computed from the node's public fields only: no data is read.

Accuracy:
    Not a release; an upper bound on the work, linear in each unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PLAIN", "Units", "Work"]


@dataclass(frozen=True)
class Units:
    """Amounts of each unit of work (each priced by one field of the curator's cost model).

    Attributes:
        row_ops: vectorized passes of one expression node over one row
            (``row_op_seconds``).
        keys: distinct keys counted, noised and thresholded (``key_seconds``).
        noisy_values: noisy values drawn, one per row of a sanitized copy
            (``row_noise_seconds``).
        noisy_steps: a regression's noisy steps on one row each
            (``row_step_seconds``).
        draws: drawn rows times columns of a synthetic copy (``draw_seconds``).
        flops: floating-point operations of dense linear algebra (``flop_seconds``).
        tree_fit_steps: fitting steps of a tree model, times its fitted
            marginals (``tree_fit_seconds``).
        junction_fit_steps: the same for a junction tree (``junction_fit_seconds``:
            the work of each fitted marginal).
        junction_cell_steps: fitting steps of a junction tree times its cells
            (``junction_cell_seconds``: the work that grows with the model).
        candidates: candidates scored, times the rounds (``candidate_seconds``).
    """

    row_ops: float = 0
    keys: float = 0
    noisy_values: float = 0
    noisy_steps: float = 0
    draws: float = 0
    flops: float = 0
    tree_fit_steps: float = 0
    junction_fit_steps: float = 0
    junction_cell_steps: float = 0
    candidates: float = 0


@dataclass(frozen=True)
class Work:
    """A release's work beyond one evaluation of its plan and a draw per output cell.

    Attributes:
        evaluations: how many times the plan is evaluated over the rows (a
            regression by full-batch steps: steps + 1; a sparse vector: once
            per query).
        per_row: units of work for each row of the dataset (times its
            declared row ceiling).
        fixed: units of work whatever the rows.

    Example:
        >>> copy = Work(per_row=Units(noisy_values=1))  # a sanitized copy: a noisy value a row
        >>> copy.per_row.noisy_values, copy.evaluations
        (1, 1)
    """

    evaluations: int = 1
    per_row: Units = field(default_factory=Units)
    fixed: Units = field(default_factory=Units)


#: The common work only: one evaluation of the plan, a draw per cell (most releases).
PLAIN = Work()
