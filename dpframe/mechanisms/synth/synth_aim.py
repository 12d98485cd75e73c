"""Synthetic data by AIM: 1-way marginals, then adaptively chosen 2- and 3-way marginals.

AIM (McKenna, Mullins, Sheldon, Miklau 2022, "AIM: An Adaptive and
Iterative Mechanism for Differentially Private Synthetic Data", PVLDB
15(11)) in one charge, with a fixed schedule of rounds instead of AIM's
data-dependent annealing of σ and ε:

* **Workload** W: every pair of columns, and every triple whose table has at
  most :data:`MAX_TRIPLE_CELLS` cells.  The candidates are W's cliques and
  their subsets; candidate r has weight w_r = Σ_{q∈W} |r ∩ q| (as AIM).
* **Split** (d columns, T = :func:`aim_rounds` (d) = 2d rounds; none for one
  column, which gets the whole request for its 1-way marginal): 1/10 of the
  request for the d 1-way marginals (each a d-th); 3/20 for the T
  selections (each a T-th); 3/4 for the T rounds' measurements in two
  stages of d rounds (:data:`STAGE_WEIGHTS`): each first-stage measurement
  gets (3/4)/(5d), each second-stage one four times that (σ halved).
  AIM anneals instead: it halves σ whenever a measurement barely moved the
  model, so cheap marginals are measured first and large ones later with
  more budget; the fixed stages keep that order and a privacy
  map that does not depend on the data.
* **Measure** every 1-way marginal, fit the model; then T rounds: select a
  candidate by permute-and-flip (:func:`~dpframe.mechanisms.selection.selection.permute_and_flip`)
  with utility ⌊w_r·(‖x_r − x̂_r‖₁ − sqrt(2/π)·σ·n_r)⌋, where x̂ is the current
  model's marginal, σ this round's measurement noise and n_r the cells of r
  (AIM's score: the error the model makes minus what measuring would
  leave), among the candidates whose junction tree with the measured
  cliques has at most :data:`MAX_AIM_GROWN_CELLS` cells (AIM's "max model
  size": 2**17, four times the 2**15 that the 1-way marginals and the
  largest pair must fit for the copy to be accepted); measure it; refit
  (warm-started).  A clique may be measured again.
* The model (:mod:`dpframe.mechanisms.synth.synth_junction`) is refitted to all the
  measurements and rows are sampled from it.

Privacy (add/remove one row; k rows per privacy unit: everything scaled by k):
    Each marginal has L1 and L2 sensitivity 1 (k); each utility changes by at
    most max_r w_r (times k; the floor keeps it), the sensitivity given to
    permute-and-flip.  Discrete Gaussian noise of σ² ≥ Δ²/(2ρ_m) is
    ρ_m-zCDP, discrete Laplace of scale ≥ Δ/ε_m is ε_m-DP (Canonne, Kamath,
    Steinke 2020), permute-and-flip is ε_s-DP (McKenna & Sheldon 2020), hence
    ε_s²/2-zCDP and μ(ε_s)-GDP.  Every part is the session's allocation
    scaled by its share, in the session's currency.  Adaptive composition over
    the d + T measurements and T selections, whose parameters are fixed in
    advance, gives exactly the request (the parts are exact fractions, noise
    rounded up, ε_s down);
    fitting, sampling and the row count are post-processing.
    Proof: docs/proofs/synthesis.md.

Accuracy:
    Each measured cell carries noise of its stage's standard deviation
    (``one_way_std``, ``marginal_std`` in ``copy.attrs["dpframe_synth"]``;
    :func:`~dpframe.mechanisms.synth.synth_report.synth_report` tabulates it);
    marginals never measured are inferred by the model.  On CPS at ε = 1:
    the 21 pairs within 0.0106 total variation on average (MST: 0.025; ten
    copies each, issue 26); resampled to 10**6 rows, pairs 0.0026, triples
    0.0092, the largest 1-way error 0.0009 (``benchmarks/RESULTS_synth.md``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import InvalidBudgetError
from dpframe.mechanisms.calibration.additive import NoiseSpec, noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.core.family import Released
from dpframe.mechanisms.runtime.progress import ProgressBar
from dpframe.mechanisms.selection.selection import permute_and_flip
from dpframe.mechanisms.synth.synth_counts import MarginalTables
from dpframe.mechanisms.synth.synth_junction import (
    JunctionModel,
    JunctionTree,
    fit_junction,
    sample_junction,
)
from dpframe.mechanisms.synth.synth_model import Measurement
from dpframe.mechanisms.synth.synth_report import SynthInfo, _tv
from dpframe.mechanisms.synth.synth_rows import (
    column_values,
    inverse_variance_total,
    live_cells,
    measure_marginal,
    noisy_length,
    sampling_generator,
)
from dpframe.noise import SecureRandom
from dpframe.plan.nodes import unit_rows
from dpframe.plan.releases import Synthesize
from dpframe.plan.releases.synthesis import (
    MAX_AIM_GROWN_CELLS,
    MAX_AIM_MODEL_CELLS,
    MAX_TRIPLE_CELLS,
)

__all__ = [
    "FINAL_ITERATIONS",
    "FIT_CELLS",
    "ROUND_ITERATIONS",
    "AimNoise",
    "FitBudget",
    "aim_noise",
    "aim_rounds",
    "fit_budget",
    "release_aim",
    "run_aim",
    "workload",
]

_PURE_ZCDP = Fraction(1, 2)  # every ε-DP mechanism is ε²/2-zCDP (Bun & Steinke 2016)
_ONE_WAY_SHARE = Fraction(1, 10)
_SELECT_SHARE = Fraction(3, 20)
#: The rounds' measurement budgets, per stage of d rounds: the second stage's
#: marginals get four times the first's (σ halved), a fixed stand-in
#: for AIM's annealing (cheap marginals first, then the large ones).
STAGE_WEIGHTS = (1, 4)
#: Mirror-descent steps of each round's (warm-started) refit.
ROUND_ITERATIONS = 50
#: Mirror-descent steps of the final (warm-started) fit.  On CPS at ε = 1 (4 copies each,
#: 2 cores shared) the mean pair TV was 0.0075 with 100 steps a round and 1,000 at the end
#: (6.9 s of CPU), 0.0076 with 50 and 100 (2.5 s): the rounds' fits are already there, and
#: fitting the noisy marginals ever closer only fits their noise.
FINAL_ITERATIONS = 200
#: The model size the fits are budgeted for: all fits together take at most
#: the steps above times this many cells (:func:`fit_budget`), what they
#: take on models of up to 2**15 cells (the first model's limit).  A model
#: grown past it (up to 2**17 cells) takes fewer steps, from what the fits
#: on smaller models left, and the final fit always keeps its 200 steps'
#: worth at 2**15 cells, so the curator's worst-case estimate holds whatever
#: the selection grows the model to.  On CPS resampled to 10**6 rows the model
#: grew past 2**15 cells and the fits took 8.4 s of CPU at full steps against
#: 2.3 s with a 2**15 cap (issue 26).
FIT_CELLS = MAX_AIM_MODEL_CELLS

Clique = tuple[int, ...]
Planned = tuple[int, int, NoiseSpec]
Exact = Callable[[Clique], npt.NDArray[np.float64]]
Measure = Callable[
    [npt.NDArray[np.float64], tuple[NoiseAllocation, Planned]],
    tuple[npt.NDArray[np.float64], NoiseSpec],
]


def aim_rounds(columns: int) -> int:
    """The selection rounds T: one stage of d rounds per stage weight (none for one column)."""
    return 0 if columns == 1 else len(STAGE_WEIGHTS) * columns


def fit_budget(columns: int) -> int:
    """Steps x junction-tree cells of all of an AIM copy's fits (the estimate prices it)."""
    return ((aim_rounds(columns) + 1) * ROUND_ITERATIONS + FINAL_ITERATIONS) * FIT_CELLS


@dataclass
class FitBudget:
    """What is left of :func:`fit_budget` during one copy (steps x cells).

    Attributes:
        left: steps x cells not yet taken.
    """

    left: int

    def for_round(self) -> int:
        """A round's fit may take what is left beyond the final fit's reserve."""
        return max(self.left - FINAL_ITERATIONS * FIT_CELLS, 0)

    def spend(self, model: JunctionModel) -> JunctionModel:
        """Count ``model``'s fit against the budget; returns it."""
        self.left -= model.iterations * model.tree.size()
        return model


def workload(sizes: tuple[int, ...]) -> tuple[list[Clique], dict[Clique, int]]:
    """AIM's workload (pairs, and triples up to the cell cap) and its weighted candidates."""
    d = len(sizes)
    work: list[Clique] = list(itertools.combinations(range(d), 2))
    work += [
        t
        for t in itertools.combinations(range(d), 3)
        if math.prod(sizes[a] for a in t) <= MAX_TRIPLE_CELLS
    ]
    candidates: set[Clique] = set()
    for q in work:
        for r in range(1, len(q) + 1):
            candidates.update(itertools.combinations(q, r))
    weights = {c: sum(len(set(c) & set(q)) for q in work) for c in sorted(candidates)}
    return work, weights


@dataclass(frozen=True)
class AimNoise:
    """The privacy map of an AIM copy (public inputs only).

    Attributes:
        sensitivity: rows per privacy unit (each marginal's L1 and L2 sensitivity).
        one_way: each 1-way marginal's allocation and planned noise.
        stages: per stage (d rounds each), its measurements' allocation and planned noise.
        rounds: the selection rounds T.
        select_epsilon: the ε of each selection (None: no selection).
        select_sensitivity: the utilities' sensitivity (k times the largest weight).
    """

    sensitivity: int
    one_way: tuple[NoiseAllocation, Planned]
    stages: tuple[tuple[NoiseAllocation, Planned], ...]
    rounds: int
    select_epsilon: Fraction | None
    select_sensitivity: int


def aim_noise(node: Synthesize, allocation: NoiseAllocation) -> AimNoise:
    """Split ``allocation`` over AIM's measurements and selections (see the module docstring)."""
    d = len(node.columns)
    k = unit_rows(node.plan)
    rounds = aim_rounds(d)
    one = _ONE_WAY_SHARE if rounds else Fraction(1)
    one_alloc = allocation.scaled(one / d)
    one_way = (one_alloc, noise_for(k, 1.0, one_alloc, k))
    stages: list[tuple[NoiseAllocation, Planned]] = []
    select_epsilon = None
    weight = 0
    if rounds:
        rest = 1 - _ONE_WAY_SHARE - _SELECT_SHARE
        for weight in STAGE_WEIGHTS:
            part = rest * weight / (sum(STAGE_WEIGHTS) * d)
            alloc = allocation.scaled(part)
            stages.append((alloc, noise_for(k, 1.0, alloc, k)))
        per_round = allocation.scaled(_SELECT_SHARE / rounds)
        select_epsilon = pure_epsilon(per_round, _PURE_ZCDP)
        if select_epsilon <= 0:
            raise InvalidBudgetError("epsilon is too small to select the model's marginals.")
        weight = max(workload(node.sizes())[1].values())
    return AimNoise(k, one_way, tuple(stages), rounds, select_epsilon, k * weight)


def _fits(cliques: list[Clique], candidate: Clique, sizes: tuple[int, ...]) -> bool:
    if candidate in cliques:
        return True
    return JunctionTree(sizes, [*cliques, candidate]).size() <= MAX_AIM_GROWN_CELLS


def run_aim(
    sizes: tuple[int, ...],
    exact: Exact,
    one_way: list[Measurement],
    weights: dict[Clique, int],
    measure: Measure,
    noise: AimNoise,
    rng: SecureRandom,
    total_of: Callable[[list[Measurement]], float],
    progress: Callable[[int], None],
    budget: FitBudget,
) -> tuple[JunctionModel, list[Measurement], tuple[float, ...]]:
    """Fit the 1-way marginals, then T rounds of select, measure, refit.

    Args:
        sizes: cells per column in the model.
        exact: a clique's exact counts over the model's cells (the only access to the data).
        one_way: the noisy 1-way marginals over the model's cells.
        weights: the candidates and their weights (the workload of the node's sizes,
            as the privacy map's sensitivity was computed from).
        measure: exact counts to noisy counts (the planned noise).
        noise: the privacy map.
        rng: the secure randomness.
        total_of: the row count estimated from measurements.
        progress: called after each refit.
        budget: the fits' steps x cells (each round's fit may take all but the
            final fit's reserve; at most ``ROUND_ITERATIONS`` steps).

    Returns:
        The model fitted to the measurements so far (final refit left to the
        caller), the measurements, and each round's noise standard deviation.
    """
    d = len(sizes)
    measurements = list(one_way)
    model = budget.spend(
        fit_junction(
            sizes,
            measurements,
            total_of(measurements),
            ROUND_ITERATIONS,
            cell_steps=budget.for_round(),
        )
    )
    progress(1)
    if not noise.rounds:
        return model, measurements, ()
    assert noise.select_epsilon is not None
    candidates = list(weights)
    truth = {c: exact(c) for c in candidates}
    stds = []
    for t in range(noise.rounds):
        stage = noise.stages[t // d]
        expected = math.sqrt(2 / math.pi) * stage[1][2].std
        cliques = list(dict.fromkeys(m.clique for m in measurements))
        open_ = [c for c in candidates if _fits(cliques, c, sizes)]
        utilities = np.array(
            [
                math.floor(
                    weights[c]
                    * (
                        float(np.abs(truth[c] - model.any_counts(c)).sum())
                        - expected * truth[c].size
                    )
                )
                for c in open_
            ],
            dtype=np.int64,
        )
        pick = open_[
            permute_and_flip(utilities, noise.select_epsilon, noise.select_sensitivity, rng)
        ]
        noisy, spec = measure(truth[pick], stage)
        stds.append(spec.std)
        table = noisy.reshape(truth[pick].shape)
        measurements.append(Measurement(pick, table, np.full(table.shape, spec.std**2)))
        total = total_of(measurements)
        model = budget.spend(
            fit_junction(
                sizes,
                measurements,
                total,
                ROUND_ITERATIONS,
                start=model.theta,
                cell_steps=budget.for_round(),
            )
        )
        progress(1)
    return model, measurements, tuple(stds)


def release_aim(run: Released[Synthesize], mechanism: str) -> tuple[Any, str]:
    """AIM (:mod:`dpframe.mechanisms.synth.synth_aim`): measure, select and refit, sample."""
    node, noise, rng = run.node, run.noise, run.rng
    d = len(node.columns)
    steps = 1 + d + 1 + noise.rounds + FINAL_ITERATIONS + 1
    progress = ProgressBar("synthesize (AIM)", node.progress)
    done = [0]

    def advance(step: int) -> None:
        done[0] += step
        progress(done[0], steps)

    def total_of(found: list[Measurement]) -> float:
        return inverse_variance_total(
            [(float(m.values.sum()), float(m.variance.sum())) for m in found]
        )

    weights = workload(node.sizes())[1] if noise.rounds else {}
    budget = FitBudget(fit_budget(d))
    counts = MarginalTables(run, [*((i,) for i in range(d)), *weights])
    advance(1)
    one_noisy, std = [], 0.0
    for i in range(d):
        noisy, spec = measure_marginal(counts.table((i,)), noise.one_way, noise.sensitivity, rng)
        one_noisy.append(noisy)
        std = spec.std
        advance(1)
    sizes = tuple(live_cells(node, i, y, std) for i, y in enumerate(one_noisy))
    one_way = [
        Measurement((i,), y[: sizes[i]], np.full(sizes[i], std**2)) for i, y in enumerate(one_noisy)
    ]

    def exact(clique: Clique) -> npt.NDArray[np.float64]:
        inside = tuple(slice(0, sizes[a]) for a in clique)
        return counts.table(clique)[inside]

    model, measurements, round_stds = run_aim(
        sizes,
        exact,
        one_way,
        weights,
        lambda table, planned: measure_marginal(table, planned, noise.sensitivity, rng),
        noise,
        rng,
        lambda found: max(total_of(found), 1.0),
        advance,
        budget,
    )
    start = done[0]
    model = fit_junction(
        sizes,
        measurements,
        max(total_of(measurements), 1.0),
        FINAL_ITERATIONS,
        start=model.theta,
        cell_steps=budget.left,
        progress=lambda step, _: progress(start + step, steps),
    )
    rows = node.rows or noisy_length(total_of(measurements))
    gen = sampling_generator(rng)
    cells = sample_junction(model, rows, gen)
    data = {name: column_values(node, i, cells[:, i], gen) for i, name in enumerate(node.columns)}
    copy = pd.DataFrame(data, columns=list(node.columns))
    higher = measurements[d:]  # each round's marginal, in order
    select = noise.select_epsilon
    copy.attrs["dpframe_synth"] = SynthInfo(
        method="AIM",
        columns=node.columns,
        edges=node.edges,
        categories=node.categories,
        rows=rows,
        rows_private=node.rows == 0,
        total=model.total,
        pairs=tuple(tuple(node.columns[a] for a in m.clique) for m in higher),
        one_way=tuple(tuple(float(v) for v in y) for y in one_noisy),
        one_way_std=std,
        kept=tuple(tuple(range(k)) for k in sizes),
        two_way=tuple(tuple(float(v) for v in m.values.ravel()) for m in higher),
        two_way_std=round_stds[-1] if round_stds else 0.0,
        marginal_std=round_stds,
        selection_epsilon=0.0 if select is None else float(select),
        mechanism=mechanism,
        fit=tuple(_tv(model.any_counts(m.clique), m.values) for m in measurements),
        iterations=model.iterations,
        cost=run.cost,
        query=node.label,
        shapes=tuple(m.values.shape for m in higher),
        kinds=node.kinds,
    )
    progress(steps, steps)
    return copy, f"{rows} synthetic rows, {len(higher)} chosen marginals"
