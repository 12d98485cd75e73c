"""A junction-tree graphical model fitted to noisy marginals, and sampling from it (AIM).

The estimation step of AIM (McKenna, Mullins, Sheldon, Miklau 2022, "AIM:
An Adaptive and Iterative Mechanism for Differentially Private Synthetic
Data", PVLDB 15(11)) in numpy, generalising :mod:`dpframe.mechanisms.synth.synth_model`
from a tree of pairs to any set of measured cliques:

* The model is p(x) ∝ exp(Σ_m θ_m(x_m)) over the measured cliques m.  Their
  graph is triangulated by greedy min-fill elimination; the elimination
  cliques that are maximal form the nodes of a junction tree (a maximum
  spanning tree on separator sizes, which has the running intersection
  property for the cliques of a triangulated graph).
* Exact belief propagation on the junction tree (sum-product messages, rescaled, up
  and down) gives every clique's marginal; a measured clique's marginal is
  summed from a junction-tree clique that holds it.
* The potentials are fitted by entropic mirror descent on the weighted
  least squares L(μ) = ½ Σ_m Σ_cells (μ_m − y_m)² / v_m with an Armijo step
  (McKenna, Sheldon, Miklau 2019, ICML, Algorithm 1; private-pgm's estimator).
* Rows are sampled along the junction tree, each clique's new columns (the
  root clique's all, a child's those not in its separator with the parent)
  one at a time by the chain rule, fewer cells first: each given the
  separator and the clique's columns drawn before it, by the controlled
  rounding of :func:`~dpframe.mechanisms.synth.synth_sampling.controlled_counts`
  spread evenly over the other columns already drawn
  (:func:`~dpframe.mechanisms.synth.synth_sampling.draw_given`).

All of this is post-processing of released noisy marginals: it reads no data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.runtime.stopping import check_stop
from dpframe.mechanisms.synth.synth_model import Measurement
from dpframe.mechanisms.synth.synth_sampling import draw_given, shuffled_rows

__all__ = ["JunctionModel", "JunctionTree", "fit_junction", "sample_junction"]

Array = npt.NDArray[np.float64]
Clique = tuple[int, ...]
Progress = Callable[[int, int], None]


def _shape(attrs: Clique, target: Clique, sizes: Sequence[int]) -> tuple[int, ...]:
    """The shape that broadcasts a table over ``attrs`` into one over ``target`` (both sorted)."""
    return tuple(sizes[a] if a in attrs else 1 for a in target)


def _triangulate(d: int, cliques: Sequence[Clique], sizes: Sequence[int]) -> list[Clique]:
    """The maximal cliques of a min-fill triangulation of the cliques' graph."""
    adjacent: list[set[int]] = [set() for _ in range(d)]
    for clique in cliques:
        for a in clique:
            adjacent[a].update(b for b in clique if b != a)
    left = set(range(d))
    found: list[Clique] = []
    while left:

        def fill(v: int) -> tuple[int, int]:
            near = [u for u in adjacent[v] if u in left]
            missing = sum(
                1 for i, a in enumerate(near) for b in near[i + 1 :] if b not in adjacent[a]
            )
            return missing, math.prod(sizes[u] for u in near) * sizes[v]

        v = min(sorted(left), key=fill)
        near = [u for u in adjacent[v] if u in left]
        for a in near:
            adjacent[a].update(b for b in near if b != a)
        found.append(tuple(sorted([v, *near])))
        left.remove(v)
    maximal = [c for c in found if not any(set(c) < set(o) for o in found)]
    return sorted(set(maximal))


class JunctionTree:
    """A junction tree over the columns covering the given cliques (structure only).

    Attributes:
        sizes: cells per column.
        cliques: the junction tree's cliques (sorted column tuples).
        order: the cliques in breadth-first order from clique 0.
        parent: each clique's parent (−1 for a root; one root per component).
        home: for each covered clique, a junction-tree clique containing it.
    """

    def __init__(self, sizes: Sequence[int], cliques: Sequence[Clique]) -> None:
        self.sizes = tuple(sizes)
        d = len(sizes)
        covered = [*cliques, *((i,) for i in range(d))]
        self.cliques = _triangulate(d, covered, sizes)
        n = len(self.cliques)
        weighted = sorted(
            (
                (-len(set(self.cliques[a]) & set(self.cliques[b])), a, b)
                for a in range(n)
                for b in range(a + 1, n)
            ),
        )
        component = list(range(n))

        def find(x: int) -> int:
            while component[x] != x:
                component[x] = component[component[x]]
                x = component[x]
            return x

        adjacent: list[list[int]] = [[] for _ in range(n)]
        for _, a, b in weighted:
            if find(a) != find(b):
                component[find(a)] = find(b)
                adjacent[a].append(b)
                adjacent[b].append(a)
        self.parent = [-1] * n
        self.order: list[int] = []
        seen = [False] * n
        for start in range(n):
            if seen[start]:
                continue
            seen[start] = True
            self.order.append(start)
            queue = [start]
            while queue:
                node = queue.pop(0)
                for other in adjacent[node]:
                    if not seen[other]:
                        seen[other] = True
                        self.parent[other] = node
                        self.order.append(other)
                        queue.append(other)
        self.home = {c: self.holder(c) for c in cliques}

    def holder(self, clique: Clique) -> int:
        """The smallest junction-tree clique containing ``clique`` (KeyError if none)."""
        holding = [k for k, c in enumerate(self.cliques) if set(clique) <= set(c)]
        if not holding:
            raise KeyError(clique)
        return min(holding, key=lambda k: self.cells(k))

    def cells(self, k: int) -> int:
        """Cells of junction-tree clique ``k``."""
        return math.prod(self.sizes[a] for a in self.cliques[k])

    def size(self) -> int:
        """The model size: the cells of all junction-tree cliques together."""
        return sum(self.cells(k) for k in range(len(self.cliques)))

    def separator(self, k: int) -> Clique:
        """The columns clique ``k`` shares with its parent (empty for a root)."""
        par = self.parent[k]
        if par < 0:
            return ()
        return tuple(a for a in self.cliques[k] if a in self.cliques[par])

    def beliefs(
        self, theta: dict[Clique, Array], plan: Sequence[tuple[Clique, int, Clique]] | None = None
    ) -> list[Array]:
        """Each junction-tree clique's marginal (probabilities) under p ∝ exp(Σ θ).

        Sum-product in probability space: each clique's potential is
        exponentiated once, shifted by its largest log value, and every
        message is rescaled to a largest entry of 1 (the shifts and scales
        cancel when each belief is normalised), so no logarithm is taken per
        message.  A downward message divides the parent's belief by the
        child's upward message; where that message is 0 the child's own
        belief is 0 whatever comes down, so 0 is sent there.

        The potentials are added along ``plan`` (:meth:`plan` of the cliques
        of ``theta``) backwards: a pair's into the triple holding it, the
        triple's into its junction-tree clique, one pass over a large clique
        per measured clique summed from it rather than one per measurement.
        """
        n = len(self.cliques)
        log_psi = [np.zeros(tuple(self.sizes[a] for a in c)) for c in self.cliques]
        added = dict(theta)
        for clique, k, source in reversed(self.plan(list(theta)) if plan is None else plan):
            values = added[clique]
            if source == self.cliques[k]:
                log_psi[k] = log_psi[k] + values.reshape(_shape(clique, source, self.sizes))
            else:
                added[source] = added[source] + values.reshape(_shape(clique, source, self.sizes))
        inner = [np.exp(t - t.max()) for t in log_psi]
        up: list[Array] = [np.zeros(0)] * n
        for k in reversed(self.order):
            par = self.parent[k]
            if par < 0:
                continue
            sep = self.separator(k)
            up[k] = _scaled(_sum_to(inner[k], self.cliques[k], sep))
            inner[par] = inner[par] * up[k].reshape(_shape(sep, self.cliques[par], self.sizes))
        belief = [np.zeros(0)] * n
        for k in self.order:
            par = self.parent[k]
            if par >= 0:
                sep = self.separator(k)
                message = up[k].reshape(_shape(sep, self.cliques[par], self.sizes))
                cavity = np.divide(
                    belief[par], message, out=np.zeros_like(belief[par]), where=message > 0
                )
                down = _scaled(_sum_to(cavity, self.cliques[par], sep))
                inner[k] = inner[k] * down.reshape(_shape(sep, self.cliques[k], self.sizes))
            total = float(inner[k].sum())
            belief[k] = inner[k] / total if total > 0 else np.full_like(inner[k], 1 / inner[k].size)
        return belief

    def marginal(self, belief: Sequence[Array], clique: Clique) -> Array:
        """The probabilities of ``clique`` (held by some junction-tree clique)."""
        k = self.home[clique] if clique in self.home else self.holder(clique)
        return _sum_to(belief[k], self.cliques[k], clique)

    def plan(self, cliques: Sequence[Clique]) -> list[tuple[Clique, int, Clique]]:
        """How :meth:`marginals` sums each of ``cliques``: from which table, the largest first.

        Each entry is (clique, junction-tree clique k, source): the source is
        the junction-tree clique itself, or a larger measured clique summed
        before it (the smallest such): a triple's pairs come from the triple,
        not again from a clique of tens of thousands of cells.
        """
        steps: list[tuple[Clique, int, Clique]] = []
        for clique in sorted(dict.fromkeys(cliques), key=lambda c: -_cells(c, self.sizes)):
            k = self.home[clique] if clique in self.home else self.holder(clique)
            source = self.cliques[k]
            for before, _, _ in steps:
                inside = set(clique) <= set(before)
                if inside and _cells(before, self.sizes) < _cells(source, self.sizes):
                    source = before
            steps.append((clique, k, source))
        return steps

    def marginals(
        self, belief: Sequence[Array], plan: Sequence[tuple[Clique, int, Clique]]
    ) -> dict[Clique, Array]:
        """The probabilities of every clique of ``plan`` (:meth:`plan`)."""
        found: dict[Clique, Array] = {}
        for clique, k, source in plan:
            table = belief[k] if source == self.cliques[k] else found[source]
            found[clique] = _sum_to(table, source, clique)
        return found


def _cells(clique: Clique, sizes: Sequence[int]) -> int:
    return math.prod(sizes[a] for a in clique)


def _sum_to(table: Array, attrs: Clique, keep: Clique) -> Array:
    """A table over ``attrs`` summed down to the sorted subset ``keep``."""
    axes = tuple(k for k, a in enumerate(attrs) if a not in keep)
    return table.sum(axis=axes) if axes else table


def _scaled(message: Array) -> Array:
    """A message rescaled to a largest entry of 1 (all zeros stay zeros)."""
    top = float(message.max()) if message.size else 0.0
    return message / top if top > 0 else message


@dataclass(frozen=True)
class JunctionModel:
    """A fitted junction-tree model.

    Attributes:
        tree: its junction tree.
        theta: the fitted log-potentials per measured clique.
        belief: each junction-tree clique's marginal (probabilities).
        total: the number of rows N̂ the marginals add up to.
        loss: the final weighted squared error.
        iterations: mirror-descent steps taken.
    """

    tree: JunctionTree
    theta: dict[Clique, Array]
    belief: list[Array]
    total: float
    loss: float
    iterations: int

    def counts(self, clique: Clique) -> Array:
        """The model's counts on a clique inside one junction-tree clique."""
        return self.tree.marginal(self.belief, clique) * self.total

    def any_counts(self, clique: Clique) -> Array:
        """The model's counts on any clique (a junction tree holding it, recalibrated)."""
        try:
            return self.counts(clique)
        except KeyError:
            tree = JunctionTree(self.tree.sizes, [*self.theta, clique])
            return tree.marginal(tree.beliefs(self.theta), clique) * self.total


def _loss(
    tree: JunctionTree,
    belief: Sequence[Array],
    measurements: Sequence[Measurement],
    total: float,
    plan: Sequence[tuple[Clique, int, Clique]],
) -> tuple[float, dict[Clique, Array], dict[Clique, Array]]:
    """L(μ), its gradient in θ coordinates, and each measured clique's probabilities."""
    loss = 0.0
    mu = tree.marginals(belief, plan)
    grad = {c: np.zeros_like(p) for c, p in mu.items()}
    for m in measurements:
        fitted = mu[m.clique] * total
        residual = (fitted - m.values) / m.variance
        loss += 0.5 * float(np.sum((fitted - m.values) * residual))
        grad[m.clique] += total * residual
    return loss, grad, mu


def fit_junction(
    sizes: Sequence[int],
    measurements: Sequence[Measurement],
    total: float,
    iterations: int = 1000,
    start: dict[Clique, Array] | None = None,
    progress: Progress | None = None,
    tolerance: float = 1e-7,
    cell_steps: int | None = None,
) -> JunctionModel:
    """Consistent marginals closest (weighted least squares) to the measurements.

    Entropic mirror descent over the measured cliques' potentials with an
    Armijo step, warm-started from ``start`` (missing cliques at zero); stops
    after ``iterations`` steps or when a step improves the loss by less than
    ``tolerance`` (relative) ten times in a row.

    Args:
        sizes: cells per column.
        measurements: noisy marginals (cliques sorted; a clique may repeat).
        total: the row count N̂ the marginals add up to (> 0).
        iterations: the most mirror-descent steps.
        start: potentials to start from (a previous fit's ``theta``).
        progress: called with (step, iterations).
        tolerance: the relative improvement below which the fit stops.
        cell_steps: at most this many steps times the junction tree's cells
            (a step's cost grows with the cells: a model four times larger
            takes a quarter of the steps; none when fewer than its cells are
            left: the start stands, the new measurements unfitted).
    """
    cliques = list(dict.fromkeys(m.clique for m in measurements))
    tree = JunctionTree(sizes, cliques)
    limit = iterations if cell_steps is None else min(iterations, cell_steps // tree.size())
    given = start or {}
    theta = {
        c: np.array(given[c]) if c in given else np.zeros(tuple(sizes[a] for a in c))
        for c in cliques
    }
    plan = tree.plan(cliques)
    belief = tree.beliefs(theta, plan)
    loss, grad, mu = _loss(tree, belief, measurements, total, plan)
    smallest = min(float(np.min(m.variance)) for m in measurements)
    alpha = smallest / (total * total * max(len(measurements), 1))
    quiet = 0
    step = 0
    for step in range(1, limit + 1):
        alpha *= 2.0
        check_stop()  # a curator past its wall-clock limit stops here
        for _ in range(30):
            new_theta = {c: theta[c] - alpha * grad[c] for c in cliques}
            new_belief = tree.beliefs(new_theta, plan)
            new_loss, new_grad, new_mu = _loss(tree, new_belief, measurements, total, plan)
            predicted = sum(float(np.sum(grad[c] * (mu[c] - new_mu[c]))) for c in cliques)
            if loss - new_loss >= 0.5 * predicted:
                break
            alpha *= 0.5
        else:
            break  # no step decreases the loss: at the optimum (to float precision)
        improvement = (loss - new_loss) / max(loss, 1e-300)
        theta, belief, loss, grad, mu = new_theta, new_belief, new_loss, new_grad, new_mu
        quiet = quiet + 1 if improvement < tolerance else 0
        if progress is not None and (step % 10 == 0 or step == limit):
            progress(step, iterations)
        if quiet >= 10:
            break
    if progress is not None:
        progress(iterations, iterations)
    return JunctionModel(tree, theta, belief, float(total), float(loss), step)


def sample_junction(
    model: JunctionModel,
    n: int,
    gen: np.random.Generator,  # not privacy noise
) -> npt.NDArray[np.int64]:
    """``n`` rows of cell indices (n × columns) drawn along the junction tree.

    In breadth-first order, each clique's new columns (those not in its
    separator with the parent) are drawn one at a time by the chain rule,
    the columns with fewer cells first: column a gets
    :func:`~dpframe.mechanisms.synth.synth_sampling.draw_given` of the
    clique belief's p(a | separator, the clique's columns drawn before a),
    the rows grouped by those columns' cells (one group for the first
    column of a root clique) and spread evenly over the other columns
    already drawn; the rows come out in a random order.

    Drawn jointly, a clique of tens of thousands of cells would get 0 or 1
    rows in most cells and its sub-marginals (a pair of two-cell columns
    in it) nearly multinomial error; one column at a time, each step's
    groups are coarser and their controlled counts hold the sub-marginals
    of the columns drawn so far within a row or so per group.  The product
    of the conditionals is the clique's belief, so the copy's expected
    tables are unchanged.
    """
    tree = model.tree
    sizes = tree.sizes
    out = np.zeros((n, len(sizes)), dtype=np.int64, order="F")  # columns contiguous
    if n == 0:
        return out
    drawn: list[int] = []
    for k in tree.order:
        clique = tree.cliques[k]
        given = list(tree.separator(k))
        new = sorted((a for a in clique if a not in given), key=lambda a: sizes[a])
        for a in new:
            kept = [b for b in clique if b in given or b == a]
            rest = tuple(p for p, b in enumerate(clique) if b not in kept)
            marginal = model.belief[k].sum(axis=rest) if rest else model.belief[k]
            perm = [kept.index(b) for b in (*given, a)]
            given_cells = math.prod(sizes[b] for b in given)
            table = np.transpose(marginal, perm).reshape(given_cells, sizes[a])
            if given:
                group = np.ravel_multi_index(
                    tuple(out[:, b] for b in given), [sizes[b] for b in given]
                )
            else:
                group = np.zeros(n, dtype=np.int64)
            context = [(out[:, b], sizes[b]) for b in drawn if b not in given]
            out[:, a] = draw_given(table, group.astype(np.int64), context, gen)
            given.append(a)
            drawn.append(a)
    return shuffled_rows(out, gen)
