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
* rows x what a node costs per row beyond that (:mod:`dpframe.curator.row_costs`):
  the items of its public list (``isin``, ``cut``, ``map``), and a text
  node's Python call per distinct value (as many as rows), characters and
  matches, bounded by declared maximum lengths or the curator's
  ``text_chars``;
* cells x ``cell_seconds``: each released cell (a histogram bin, a key
  combination, a quantile's candidate and level) costs a secure noise draw
  or a utility;
* each kind's own work, declared by its family
  (:meth:`dpframe.mechanisms.core.family.Family.work`, a
  :class:`~dpframe.mechanisms.core.work.Work`) in units this model prices
  (:meth:`CostModel.price`), per row of the declared ceiling or fixed; this
  module lists no release kind.  Today: rows x ``row_noise_seconds`` for a
  sanitized copy (one noisy value per row), rows x points x
  ``row_op_seconds`` for a kernel density estimate (and (points³/3 +
  points²) x ``flop_seconds`` for its grid's Cholesky factor), rows x steps x
  (features + 1) x ``row_op_seconds`` for a regression by full-batch steps,
  and rows x passes x ``row_step_seconds`` for one with
  ``analysis="iteration"`` (one noisy step per row, a Python loop);
* the plan's terms above once per evaluation of the plan (the family's
  ``evaluations``): a regression by full-batch steps evaluates it steps + 1
  times, a sparse vector once per query (before issue 27 each was counted
  once);
* rows x ``key_seconds`` for a key discovery (and the aggregate over the
  keys it finds): every row may hold a key of its own, each counted, noised
  and thresholded (before issue 27, 40,000 distinct keys were estimated at
  0.006 s and took 0.5 to 2.9 s; 0.18 s since the keys are read in one call);
* a synthetic copy (:func:`synthesis_seconds`): its one pass over the rows
  (every marginal counted from the same cell codes), its model's fitting
  steps (every fit runs its full count of steps in practice) x the
  marginals it fits, AIM's candidates scored every round, and the rows it
  draws;
* ``overhead_seconds`` once per part.

Example:
    >>> worst_case_seconds(node, rows=1_000_000, model=CostModel())  # doctest: +SKIP
    0.25
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dpframe.curator.row_costs import row_seconds
from dpframe.engine.release_path import families, family_of, size_of
from dpframe.errors import ResourceLimitError
from dpframe.mechanisms.core.work import Units, Work
from dpframe.plan.estimate import ResourceLimits
from dpframe.plan.releases import ReleaseNode, Synthesize

__all__ = [
    "TEXT_CHARS",
    "CostModel",
    "check_worst_case",
    "synthesis_seconds",
    "work_seconds",
    "worst_case_seconds",
]

#: The default most characters per row of a text column without a declared maximum length
#: (on average over the column; the curator checks it when it starts).
TEXT_CHARS = 256


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
    estimate 7e-9 s per row and point; a regression's noisy step per row
    (``analysis="iteration"``) 9.4e-6 s.  Synthetic copies on CPS with 4 to 17
    columns (while the 16-analyst soak ran beside them): a mirror-descent
    step of MST's tree model 0.07 to 0.085 ms per fitted marginal, of AIM's
    junction tree 0.49 to 0.63 ms; scoring one AIM candidate in one round 0.9
    to 1.9 ms (AIM on 12 columns: 60.8 s).  Since AIM's belief propagation runs
    in probability space (issue 26), on 7 CPS columns at 10**6 rows: 0.17 ms
    of CPU per fitted marginal and step (0.4 ms of wall clock at a load
    average of 7 on 2 cores), 0.22 ms per candidate scored, and a drawn row
    and column about 3e-7 s of wall clock at a load average of 10.  The
    defaults bound the slowest kind of each with some margin; a data owner on
    another machine sets their own (``[server.cost]``).

    Text and list nodes (issue 27), measured by
    :func:`dpframe.curator.calibration.calibrate` under the same load: a text
    node's Python call per distinct value 1 to 9 µs (``upper`` 1.3 µs, a
    case-insensitive ``replace`` 9 µs on 13 characters), 10 ns per character
    more, and a ``replace`` calling Python per match 5 to 21 µs per match; an
    ``isin``, ``cut`` or ``map`` 6e-11 s per row and item of its list on top
    of the vectorized pass.

    Attributes:
        row_op_seconds: one expression node over one row (default 5e-8).
        hash_row_seconds: one row looked up in a node's public list (an
            ``isin``, ``map`` or ``cut``: hashing or searching, more than a
            vectorized pass; default 2e-7).
        list_item_seconds: one row against one item of a node's public list
            (default 6e-10).
        text_value_seconds: one text node's Python call on one value (one per
            row: distinct values can be as many as rows; default 3e-6).
        regex_value_seconds: the same for a node running a compiled pattern
            (``regex=True``, or a ``replace`` with ``case=False``; default 2e-5).
        text_char_seconds: one character of one value read by a text node
            (default 3e-8).
        text_match_seconds: one match of a ``replace`` that calls Python per
            match (default 4e-5).
        cell_seconds: one released cell's noise draw or utility (default 4e-5).
        key_seconds: one distinct key of a key discovery: counted, noised and
            thresholded (a noise draw like a cell: 4.5 µs a key for 40,000 keys
            at load 9, 24 µs at load 15; default 4e-5).
        row_noise_seconds: one row of a sanitized copy (default 2e-6).
        row_step_seconds: one row's noisy step of a regression with
            ``analysis="iteration"`` (default 2e-5).
        tree_fit_seconds: one fitting step of MST's model, per fitted
            marginal (default 2e-4).
        junction_fit_seconds: one fitting step of AIM's model, per fitted
            marginal (each marginal's share of the step; default 2e-4).
        junction_cell_seconds: one fitting step of AIM's model, per cell of
            its junction tree (the belief propagation over every clique:
            measured 80 to 215 ns a cell on one idle core, 380 ns with both
            cores busy, on models of 2**13 to 2**17 cells; default 5e-7).
        candidate_seconds: one AIM candidate scored in one round (default 3e-3).
        draw_seconds: one drawn row and column of a synthetic copy (default 5e-7).
        flop_seconds: one floating-point operation of dense linear algebra
            (a kernel density estimate's Cholesky factor of its grid's kernel
            matrix, n³/3 of them for n points: 2,048 points took 0.73 s on one
            thread and 4.5 s with OpenBLAS's threads on the loaded machine,
            3.5 s estimated before issue 27 as 0.14 s; default 2e-9).
        overhead_seconds: fixed cost of one part (compile, ledger, answer).
    """

    row_op_seconds: float = 5e-8
    hash_row_seconds: float = 2e-7
    list_item_seconds: float = 6e-10
    text_value_seconds: float = 3e-6
    regex_value_seconds: float = 2e-5
    text_char_seconds: float = 3e-8
    text_match_seconds: float = 4e-5
    cell_seconds: float = 4e-5
    key_seconds: float = 4e-5
    row_noise_seconds: float = 2e-6
    row_step_seconds: float = 2e-5
    tree_fit_seconds: float = 2e-4
    junction_fit_seconds: float = 2e-4
    junction_cell_seconds: float = 5e-7
    candidate_seconds: float = 3e-3
    draw_seconds: float = 5e-7
    flop_seconds: float = 2e-9
    overhead_seconds: float = 0.05

    def price(self, units: Units) -> float:
        """The seconds of ``units`` of work (each unit priced by its field above)."""
        return (
            units.row_ops * self.row_op_seconds
            + units.keys * self.key_seconds
            + units.noisy_values * self.row_noise_seconds
            + units.noisy_steps * self.row_step_seconds
            + units.draws * self.draw_seconds
            + units.flops * self.flop_seconds
            + units.tree_fit_steps * self.tree_fit_seconds
            + units.junction_fit_steps * self.junction_fit_seconds
            + units.junction_cell_steps * self.junction_cell_seconds
            + units.candidates * self.candidate_seconds
        )


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
    node: Any,
    rows: int,
    model: CostModel,
    limits: ResourceLimits | None = None,
    lengths: Mapping[str, int] | None = None,
    text_chars: int = TEXT_CHARS,
) -> float:
    """The most seconds ``node`` may take over at most ``rows`` rows (see the module docstring).

    Args:
        node: a release node (or an aggregate part).
        rows: the dataset's declared row ceiling (public), never its row count.
        model: the curator's cost model.
        limits: passed to the sizing (a request over them is sized quickly).
        lengths: the declared maximum length of each text column that has one.
        text_chars: the most characters per row of a text column without one.
    """
    seconds = 0.0
    known = families()
    for part in _parts(node):
        sizes = size_of(part, limits)
        plan_row = (sizes.evaluation_nodes + 2) * model.row_op_seconds  # one pass of its plan
        if limits is None or sizes.evaluation_nodes <= limits.max_evaluation_nodes:
            plan_row += row_seconds(part, model, lengths or {}, text_chars)
        work = family_of(part, known).work(part)  # what its kind does beyond that
        seconds += rows * work.evaluations * plan_row + work_seconds(work, rows, model)
        seconds += sizes.output_cells * model.cell_seconds
        seconds += model.overhead_seconds
    return seconds


def work_seconds(work: Work, rows: int, model: CostModel) -> float:
    """The seconds of a family's declared work over ``rows`` rows, besides evaluating its plan."""
    return rows * model.price(work.per_row) + model.price(work.fixed)


def synthesis_seconds(node: Synthesize, rows: int, model: CostModel) -> float:
    """The most seconds a synthetic copy takes besides its plan (public inputs only).

    Its family's declared work
    (:func:`dpframe.mechanisms.synth.synth_family.synthesis_work`: its pass
    over the rows, its model's fit, AIM's scoring, the rows it draws), priced.
    """
    return work_seconds(family_of(node, families()).work(node), rows, model)


def check_worst_case(
    node: Any,
    rows: int,
    model: CostModel,
    ceiling: float,
    limits: ResourceLimits | None = None,
    lengths: Mapping[str, int] | None = None,
    text_chars: int = TEXT_CHARS,
    building: float = 0.0,
) -> float:
    """The worst case of a request; refused, before the charge, over ``ceiling`` seconds.

    ``building`` is added once: the seconds of building the rows the request
    reads when they are not a dataset's (a private join,
    :func:`dpframe.curator.join_costs.join_cost`; ``rows`` is then the join's
    row ceiling).

    Raises:
        ResourceLimitError: naming the estimate, the ceiling and the declared
            row ceiling (all public); for an AIM copy, MST's estimate too when
            it fits.
    """
    seconds = worst_case_seconds(node, rows, model, limits, lengths, text_chars) + building
    if seconds > ceiling:
        hint = ""
        if isinstance(node, Synthesize) and node.method == "aim":  # MST costs about d, not d³
            mst = replace(node, method="mst")
            other = worst_case_seconds(mst, rows, model, limits, lengths, text_chars) + building
            if other <= ceiling:
                hint = f" method='mst' is estimated at {other:,.1f} s here and fits."
        raise ResourceLimitError(
            f"This request could take up to {seconds:,.1f} s on this dataset's declared "
            f"{rows:,} rows (the curator's limit is {ceiling:g} s); nothing was charged. "
            "Simplify it: fewer derived columns, text methods (each calls Python once per "
            "value), keys, bins or quantile levels." + hint
        )
    return seconds
