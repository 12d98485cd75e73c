"""Synthetic data by MST: noisy 1- and 2-way marginals, a tree model, sampled rows.

MST (McKenna, Miklau, Sheldon 2021, "Winning the NIST Contest: A scalable
and general approach to differentially private synthetic data", Journal of
Privacy and Confidentiality 11(3); the NIST 2018 challenge winner) in one
charge, split into three equal parts (two when there are two columns, one
for a single column):

1. **1-way marginals**: every column's cell counts (bins of a numeric
   column on its public edges, or its declared categories) plus discrete
   Gaussian noise (zCDP, Gaussian DP and approx sessions with δ) or discrete
   Laplace noise (pure ε), each of the d marginals with a d-th of the first
   part.  Every part is the session's allocation scaled by its share
   (:meth:`~dpframe.mechanisms.core.allocation.NoiseAllocation.scaled`), so it keeps
   the session's currency: under Gaussian DP a part of μ²-share s is
   sqrt(s)·μ-GDP (the discrete Gaussian corrected for, each selection's ε
   the largest with μ(ε) ≤ sqrt(s)·μ).
2. **Selection**: cells noisily below 3σ are merged into one cell per column
   and a missing cell below it is dropped (post-processing: MST's domain
   compression, :mod:`dpframe.mechanisms.synth.synth_domain`); then d − 1 rounds of
   permute-and-flip (:func:`~dpframe.mechanisms.selection.selection.permute_and_flip`)
   pick the pairs of a spanning tree, Kruskal-style, each among the pairs
   not yet connected, with utility ⌊‖x_ij − x̂_ij‖₁⌋: how far the true pair
   is from the independent model x̂ fitted to the noisy 1-way marginals.
   Each round gets a (d − 1)-th of the second part.
3. **2-way marginals** of the d − 1 chosen pairs, as in step 1.

The noisy marginals are then post-processed (no data read): a tree model is
fitted to them and rows are sampled from it (:mod:`dpframe.mechanisms.synth.synth_model`).

A column that may hold missing values has a cell for them (its missing
values are synthesized); a row missing a column without one, or with an
undeclared category, is left out of every marginal.  Every exact marginal
comes from one pass over the rows (:mod:`dpframe.mechanisms.synth.synth_counts`:
each row's cells computed once per release, also on Dask).

Privacy (add/remove one row; k rows per privacy unit: everything scaled by k):
    A row adds 1 to exactly one cell of each marginal (values beyond the
    bounds go to the end bins) or, if it is not complete, to none, so
    every marginal has L1 and L2 sensitivity 1 (k), and each utility of step
    2 changes by at most 1 (k; the floor keeps it).  Discrete Gaussian noise
    of σ² ≥ Δ²/(2ρ_m) is ρ_m-zCDP and discrete Laplace of scale ≥ Δ/ε_m is
    ε_m-DP (Canonne, Kamath, Steinke 2020); permute-and-flip is ε_s-DP
    (McKenna & Sheldon 2020), hence ε_s²/2-zCDP (Bun & Steinke 2016) and
    μ(ε_s)-GDP (Dong, Roth & Su 2019).
    Adaptive composition over the 2d − 1 measurements and d − 1 selections
    gives exactly the requested ε (pure), ρ (zCDP) or μ (GDP, μ² adds;
    pinned by the composed privacy loss distribution in
    ``tests/test_synth_accounting.py``): the parts are exact
    fractions of the request, the noise is rounded up and the selection ε
    down.  Everything after is post-processing, including the row count
    (the inverse-variance mean of the marginals' noisy totals).
    Proof: docs/proofs/synthesis.md.

Accuracy:
    Each measured cell is off by noise of standard deviation
    ``one_way_std`` / ``two_way_std`` (``copy.attrs["dpframe_synth"]``;
    :func:`~dpframe.mechanisms.synth.synth_report.synth_report` tabulates the error
    bars).  Pairs outside the tree are modelled as independent given the
    tree path between them, the main source of error on pairs with
    structure the tree does not carry.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import InvalidBudgetError
from dpframe.mechanisms.calibration.additive import NoiseSpec, noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.core.explanations import Explanation, MeasureExplanation
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.work import Units, Work
from dpframe.mechanisms.runtime.progress import ProgressBar
from dpframe.mechanisms.selection.selection import permute_and_flip
from dpframe.mechanisms.synth.synth_aim import (
    FINAL_ITERATIONS,
    ROUND_ITERATIONS,
    AimNoise,
    aim_noise,
    aim_rounds,
    fit_budget,
    release_aim,
    workload,
)
from dpframe.mechanisms.synth.synth_counts import MarginalTables
from dpframe.mechanisms.synth.synth_domain import Compressed, squash
from dpframe.mechanisms.synth.synth_model import Measurement, TreeModel, fit_tree, sample_tree
from dpframe.mechanisms.synth.synth_report import SynthInfo, _tv
from dpframe.mechanisms.synth.synth_rows import (
    FIT_ITERATIONS,
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

__all__ = [
    "FIT_ITERATIONS",
    "SynthNoise",
    "SynthesisFamily",
    "measure_marginal",
    "synth_noise",
    "synthesis_work",
]

_PURE_ZCDP = Fraction(1, 2)  # every ε-DP mechanism is ε²/2-zCDP (Bun & Steinke 2016)

Planned = tuple[int, int, NoiseSpec]


@dataclass(frozen=True)
class SynthNoise:
    """The privacy map of a synthetic copy (public inputs only).

    Attributes:
        sensitivity: rows per privacy unit (each marginal's L1 and L2 sensitivity).
        one_way: each 1-way marginal's allocation and its planned noise.
        select_epsilon: the ε of each selection round (None: no selection).
        two_way: each 2-way marginal's allocation and its planned noise (None: one column).
    """

    sensitivity: int
    one_way: tuple[NoiseAllocation, Planned]
    select_epsilon: Fraction | None
    two_way: tuple[NoiseAllocation, Planned] | None


def shares(columns: int) -> tuple[Fraction, Fraction, Fraction]:
    """The request's split: 1-way marginals, selection, 2-way marginals."""
    if columns == 1:
        return Fraction(1), Fraction(0), Fraction(0)
    if columns == 2:  # one pair: nothing to select
        return Fraction(1, 2), Fraction(0), Fraction(1, 2)
    third = Fraction(1, 3)
    return third, third, third


def synth_noise(node: Synthesize, allocation: NoiseAllocation) -> SynthNoise:
    """Split ``allocation`` as MST does and plan every measurement's noise."""
    d = len(node.columns)
    k = unit_rows(node.plan)
    one, select, two = shares(d)
    one_alloc = allocation.scaled(one / d)
    one_way = (one_alloc, noise_for(k, 1.0, one_alloc, k))
    select_epsilon = None
    if select:
        per_round = allocation.scaled(select / (d - 1))
        select_epsilon = pure_epsilon(per_round, _PURE_ZCDP)
        if select_epsilon <= 0:
            raise InvalidBudgetError("epsilon is too small to select the model's pairs.")
    two_way = None
    if two:
        two_alloc = allocation.scaled(two / (d - 1))
        two_way = (two_alloc, noise_for(k, 1.0, two_alloc, k))
    return SynthNoise(k, one_way, select_epsilon, two_way)


def _select(
    tables: dict[tuple[int, int], npt.NDArray[np.float64]],
    margins: list[npt.NDArray[np.float64]],
    total: float,
    noise: SynthNoise,
    rng: SecureRandom,
) -> list[tuple[int, int]]:
    """D − 1 rounds of permute-and-flip over the pairs not yet connected (a spanning tree)."""
    d = len(margins)
    pairs = sorted(tables)
    if noise.select_epsilon is None:
        return pairs  # two columns: their pair is the tree
    utility = {}
    for i, j in pairs:
        independent = total * np.outer(margins[i], margins[j])
        utility[(i, j)] = math.floor(float(np.abs(tables[(i, j)] - independent).sum()))
    component = list(range(d))

    def find(x: int) -> int:
        while component[x] != x:
            component[x] = component[component[x]]
            x = component[x]
        return x

    chosen: list[tuple[int, int]] = []
    for _ in range(d - 1):
        open_pairs = [p for p in pairs if find(p[0]) != find(p[1])]
        values = np.array([utility[p] for p in open_pairs], dtype=np.int64)
        pick = open_pairs[permute_and_flip(values, noise.select_epsilon, noise.sensitivity, rng)]
        component[find(pick[0])] = find(pick[1])
        chosen.append(pick)
    return sorted(chosen)


def synthesis_work(node: Synthesize) -> Work:
    """The work of a synthetic copy besides one evaluation of its plan (public inputs only).

    * reading: one pass (:mod:`dpframe.mechanisms.synth.synth_counts`), whose
      expressions (each column's cell code, the plan's derived columns) are
      priced once with the plan; here the d codes' conversion and the
      counting: one ``bincount`` of the full table, or one per marginal
      counted (MST: every column and pair; AIM: its whole workload) when the
      full table is too large, d + counts row operations per row;
    * fitting (no data read): MST ``FIT_ITERATIONS`` steps over its 2d - 1
      marginals; AIM ``ROUND_ITERATIONS`` steps after each of its
      ``aim_rounds(d)`` rounds and its 1-way marginals over the d + k
      marginals measured by round k, then ``FINAL_ITERATIONS`` over all
      (every fit runs its full count of steps in practice), each step also
      over the junction tree's cells: all fits together at most
      :func:`~dpframe.mechanisms.synth.synth_aim.fit_budget` steps x cells
      (a model grown past ``FIT_CELLS`` takes fewer steps), and every
      candidate scored every round;
    * drawing ``rows=`` rows, or as many as the declared row ceiling when the
      length is noisy (then per row), each column of each.
    """
    sizes = node.sizes()
    d = len(sizes)
    row_draws, fixed_draws = (0, node.rows * d) if node.rows else (d, 0)
    if node.method == "mst" or d == 1:
        cliques = d + d * (d - 1) // 2
        counts = MarginalTables.passes(node, cliques)
        return Work(
            per_row=Units(row_ops=d + counts, draws=row_draws),
            fixed=Units(draws=fixed_draws, tree_fit_steps=FIT_ITERATIONS * (2 * d - 1)),
        )
    rounds = aim_rounds(d)
    candidates = len(workload(sizes)[1])
    counts = MarginalTables.passes(node, candidates)
    fitted = sum(ROUND_ITERATIONS * (d + k) for k in range(rounds + 1))
    fitted += FINAL_ITERATIONS * (d + rounds)
    cell_steps = fit_budget(d)
    return Work(
        per_row=Units(row_ops=d + counts, draws=row_draws),
        fixed=Units(
            draws=fixed_draws,
            candidates=rounds * candidates,
            junction_fit_steps=fitted,
            junction_cell_steps=cell_steps,
        ),
    )


class SynthesisFamily(Family[Synthesize]):
    """MST synthetic copies (see the module docstring)."""

    node_type = Synthesize

    def work(self, node: Synthesize) -> Work:
        """Its pass over the rows, its model's fit, AIM's scoring and the rows it draws."""
        return synthesis_work(node)

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (SynthInfo,)

    def mechanism_of(self, node: Synthesize, allocation: NoiseAllocation) -> str:
        """``MST (discrete Gaussian)``, ``AIM (discrete Laplace)`` and so on."""
        noise = "discrete Laplace" if allocation.kind == "laplace" else "discrete Gaussian"
        return f"{node.method.upper()} ({noise})"

    def privacy_map(self, node: Synthesize, allocation: NoiseAllocation) -> SynthNoise | AimNoise:
        """The split of the request and each measurement's noise (public inputs only)."""
        if node.method == "aim":
            return aim_noise(node, allocation)
        return synth_noise(node, allocation)

    def release(self, run: Released[Synthesize]) -> tuple[Any, str]:
        """Measure, select, measure, fit, sample (see the module docstring)."""
        if run.node.method == "aim":
            return release_aim(run, self.mechanism_of(run.node, run.allocation))
        node, noise, rng = run.node, run.noise, run.rng
        d = len(node.columns)
        pairs = list(itertools.combinations(range(d), 2))
        steps = 1 + d + 1 + FIT_ITERATIONS + 1
        progress = ProgressBar("synthesize (MST)", node.progress)
        exact = MarginalTables(run, [*((i,) for i in range(d)), *pairs])
        done = 1
        progress(done, steps)
        one_noisy: list[npt.NDArray[np.float64]] = []
        spec1: NoiseSpec | None = None
        for i in range(d):
            noisy, spec1 = measure_marginal(
                exact.table((i,)), noise.one_way, noise.sensitivity, rng
            )
            one_noisy.append(noisy)
            done += 1
            progress(done, steps)
        assert spec1 is not None
        var1 = spec1.std**2
        domains = [
            Compressed.of(y, spec1.std, live_cells(node, i, y, spec1.std))
            for i, y in enumerate(one_noisy)
        ]
        sizes = tuple(c.size for c in domains)
        measurements: list[Measurement] = []
        totals: list[tuple[float, float]] = []
        for i, y in enumerate(one_noisy):
            values, variance = domains[i].one_way(y, var1)
            measurements.append(Measurement((i,), values, variance))
            totals.append((float(y.sum()), var1 * len(y)))
        total = max(inverse_variance_total(totals), 1.0)
        edges: list[tuple[int, int]] = []
        stds: list[float] = []
        if d > 1:
            tables = {(i, j): squash(exact.table((i, j)), domains[i], domains[j]) for i, j in pairs}
            margins = [np.clip(m.values, 0, None) for m in measurements]
            margins = [m / m.sum() if m.sum() > 0 else np.full(len(m), 1 / len(m)) for m in margins]
            edges = _select(tables, margins, total, noise, rng)
            assert noise.two_way is not None
            for i, j in edges:
                noisy, spec2 = measure_marginal(
                    tables[(i, j)], noise.two_way, noise.sensitivity, rng
                )
                table2 = noisy.reshape(sizes[i], sizes[j])
                measurements.append(
                    Measurement((i, j), table2, np.full(table2.shape, spec2.std**2))
                )
                stds.append(spec2.std)
                totals.append((float(noisy.sum()), spec2.std**2 * noisy.size))
            total = max(inverse_variance_total(totals), 1.0)
        done += 1
        progress(done, steps)
        start = done

        def fitting(step: int, _: int) -> None:
            progress(start + step, steps)

        model = fit_tree(sizes, edges, measurements, total, FIT_ITERATIONS, fitting)
        rows = node.rows or noisy_length(inverse_variance_total(totals))
        gen = sampling_generator(rng)
        cells = sample_tree(model, rows, gen)
        data = {
            name: column_values(node, i, domains[i].expand(cells[:, i], gen), gen)
            for i, name in enumerate(node.columns)
        }
        copy = pd.DataFrame(data, columns=list(node.columns))
        copy.attrs["dpframe_synth"] = self._info(
            run, model, measurements, domains, one_noisy, spec1.std, stds, rows
        )
        progress(steps, steps)
        return copy, f"{rows} synthetic rows, {len(edges)} pairs"

    def _info(
        self,
        run: Released[Synthesize],
        model: TreeModel,
        measurements: list[Measurement],
        domains: list[Compressed],
        one_noisy: list[npt.NDArray[np.float64]],
        std1: float,
        stds: list[float],
        rows: int,
    ) -> SynthInfo:
        node = run.node
        fit = []
        for m in measurements:
            if len(m.clique) == 1:
                fitted = model.nodes[m.clique[0]]
            else:
                fitted = model.pairs[model.edges.index((m.clique[0], m.clique[1]))]
            fit.append(_tv(fitted, m.values))
        select = run.noise.select_epsilon
        higher = measurements[len(node.columns) :]
        return SynthInfo(
            method="MST",
            columns=node.columns,
            edges=node.edges,
            categories=node.categories,
            rows=rows,
            rows_private=node.rows == 0,
            total=model.total,
            pairs=tuple((node.columns[i], node.columns[j]) for i, j in model.edges),
            one_way=tuple(tuple(float(v) for v in y) for y in one_noisy),
            one_way_std=std1,
            kept=tuple(
                tuple(int(c) for c in np.flatnonzero((c.mapping >= 0) & (c.mapping < c.kept)))
                for c in domains
            ),
            two_way=tuple(tuple(float(v) for v in m.values.ravel()) for m in higher),
            two_way_std=stds[-1] if stds else 0.0,
            selection_epsilon=0.0 if select is None else float(select),
            mechanism=self.mechanism_of(node, run.allocation),
            fit=tuple(fit),
            iterations=model.iterations,
            cost=run.cost,
            query=node.label,
            marginal_std=tuple(stds),
            shapes=tuple(m.values.shape for m in higher),
            kinds=node.kinds,
        )

    def explain(self, node: Synthesize, asked: Asked) -> Explanation:
        """Each measurement's noise and 95% half-width per cell; nothing is read."""
        noise = self.privacy_map(node, asked.allocation)
        d = len(node.columns)
        if isinstance(noise, AimNoise):
            found = [(f"1-way marginal cell ({d} marginals)", noise.one_way[1][2])]
            for stage, (_, planned) in enumerate(noise.stages):
                found.append((f"stage-{stage + 1} marginal cell ({d} marginals)", planned[2]))
        else:
            found = [(f"1-way marginal cell ({d} marginals)", noise.one_way[1][2])]
            if noise.two_way is not None:
                found.append((f"2-way marginal cell ({d - 1} marginals)", noise.two_way[1][2]))
        measures = tuple(
            MeasureExplanation(
                name,
                float(noise.sensitivity),
                spec.name,
                spec.scale,
                spec.abs_quantile(0.95) + spec.rounding,
            )
            for name, spec in found
        )
        return Explanation(
            node.label,
            asked.cost,
            asked.rho,
            measures,
            1,  # one table (its marginals are listed in the measures)
            asked.remaining_before,
            asked.remaining_after,
            headline=f"a synthetic table of {d} columns ({node.method.upper()})",
        )
