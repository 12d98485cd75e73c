"""A release's worst-case computing time, from public inputs and the declared row ceiling only.

The engine's resource estimate (:func:`dpframe.engine.release_path.size_of`)
counts a request's evaluation nodes, cells and lists, never its rows.  The
curator turns it into seconds with the dataset's *declared* row ceiling
(``max_rows`` in the catalog: a public number the data owner sets, never the
private row count) and a cost model measured on the curator's machine
(:class:`CostModel`), and refuses a request whose worst case is over
``release_estimate_seconds`` before the charge
(:func:`check_worst_case`), so whether a request is refused never depends on
the rows.  The wall-clock limit (``release_seconds``, default 10x the
largest estimate admitted) then fires only on a server fault.

The model is an upper bound, linear in each term:

* rows x (evaluation nodes + 2) x ``row_op_seconds``: every expression node
  is one vectorized pass over the rows; the 2 cover the filter mask and the
  group index;
* cells x ``cell_seconds``: each released cell (a histogram bin, a key
  combination, a quantile's candidate and level) costs a secure noise draw
  or a utility;
* rows x ``row_noise_seconds`` more for a sanitized copy (one noisy value
  per row), rows x points x ``row_op_seconds`` for a kernel density estimate,
  and rows x steps x passes x (features + 1) x ``row_op_seconds`` for a
  regression;
* ``overhead_seconds`` once per part.

Example:
    >>> worst_case_seconds(node, rows=1_000_000, model=CostModel())  # doctest: +SKIP
    0.25
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpframe.engine.release_path import size_of
from dpframe.errors import ResourceLimitError
from dpframe.plan.estimate import ResourceLimits
from dpframe.plan.releases import KernelDensity, Regression, ReleaseNode, SanitizedCopy

__all__ = ["CostModel", "check_worst_case", "worst_case_seconds"]


@dataclass(frozen=True)
class CostModel:
    """Seconds per unit of work on the curator's machine (upper bounds, all public).

    Measured on the 2-core test machine at 10**6 rows, under load from other
    jobs: an arithmetic node over one row 4e-10 s (a chain of 400 derived
    columns: 0.82 s), a text or grouping node 2e-8 to 4e-8 s (``str.upper``
    and ``str.len`` then a filter: 0.11 s; a group-by on a text key: 0.11 s);
    a histogram cell 1.2e-5 to 2.3e-5 s (100,000 bins: 1.2 to 2.3 s); a
    quantile level over the 4,097-point grid 0.9 ms (1,000 levels: 3.9 s,
    2.2e-7 s per candidate and level); a noisy copy 3.2e-7 s
    (randomized response) to 5.4e-7 s (Laplace) per row; a kernel density
    estimate 7e-9 s per row and point.  The defaults bound the slowest kind
    of each with some margin; a data owner on another machine sets their own
    (``[server.cost]``).

    Attributes:
        row_op_seconds: one expression node over one row (default 5e-8).
        cell_seconds: one released cell's noise draw or utility (default 4e-5).
        row_noise_seconds: one row of a sanitized copy (default 2e-6).
        overhead_seconds: fixed cost of one part (compile, ledger, answer).
    """

    row_op_seconds: float = 5e-8
    cell_seconds: float = 4e-5
    row_noise_seconds: float = 2e-6
    overhead_seconds: float = 0.05


def _parts(node: Any) -> list[Any]:
    """``node`` and its parts, recursively (a composite's parts are sized one by one)."""
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        found.append(item)
        if isinstance(item, ReleaseNode):
            stack.extend(item.parts())
    return found


def worst_case_seconds(
    node: Any, rows: int, model: CostModel, limits: ResourceLimits | None = None
) -> float:
    """The most seconds ``node`` may take over at most ``rows`` rows (see the module docstring).

    Args:
        node: a release node (or an aggregate part).
        rows: the dataset's declared row ceiling (public), never its row count.
        model: the curator's cost model.
        limits: passed to the sizing (a request over them is sized quickly).
    """
    seconds = 0.0
    for part in _parts(node):
        sizes = size_of(part, limits)
        passes = sizes.evaluation_nodes + 2
        if isinstance(part, KernelDensity):
            passes += len(part.points)
        elif isinstance(part, Regression):
            passes += part.steps * part.passes * (len(part.features) + 1)
        seconds += rows * passes * model.row_op_seconds
        seconds += sizes.output_cells * model.cell_seconds
        if isinstance(part, SanitizedCopy):
            seconds += rows * model.row_noise_seconds
        seconds += model.overhead_seconds
    return seconds


def check_worst_case(
    node: Any, rows: int, model: CostModel, ceiling: float, limits: ResourceLimits | None = None
) -> None:
    """Refuse, before the charge, a request whose worst case is over ``ceiling`` seconds.

    Raises:
        ResourceLimitError: naming the estimate, the ceiling and the declared
            row ceiling (all public).
    """
    seconds = worst_case_seconds(node, rows, model, limits)
    if seconds > ceiling:
        raise ResourceLimitError(
            f"This request could take up to {seconds:,.1f} s on this dataset's declared "
            f"{rows:,} rows (the curator's limit is {ceiling:g} s); nothing was charged. "
            "Simplify it: fewer derived columns, keys, bins or quantile levels."
        )
