"""A tree-structured graphical model fitted to noisy marginals, and sampling from it.

The estimation step of MST (McKenna, Miklau, Sheldon 2021, "Winning the NIST
Contest: A scalable and general approach to differentially private synthetic
data", JPC 11(3)), written in numpy for a tree (no ``mbi``/JAX needed):

* The model is p(x) ∝ exp(Σ_i θ_i(x_i) + Σ_(i,j)∈T θ_ij(x_i, x_j)) over the
  columns' (compressed) cells, T a spanning tree.  A tree is a junction tree
  of itself, so its 1- and 2-way marginals are computed *exactly* by belief
  propagation (two passes of log-sum-exp messages), and any locally
  consistent set of tree marginals is realised by one distribution.
* The marginals μ (in rows, total N̂) minimise the weighted least squares
  L(μ) = ½ Σ_m Σ_cells (μ_C(m) − y_m)² / v_m over the measurements (noisy
  marginals y_m with known per-cell noise variance v_m): the maximum
  likelihood estimate for Gaussian noise, as in private-pgm.  L is convex in
  μ and the model's marginal polytope is exactly the set of consistent
  marginals, so entropic mirror descent in θ (θ_C ← θ_C − α ∂L/∂μ_C) with an
  Armijo step size converges to the constrained optimum (McKenna, Sheldon,
  Miklau 2019, "Graphical-model based estimation and inference for
  differential privacy", ICML, Algorithm 1).
* Sampling draws whole rows by forward sampling along the tree (the root's
  marginal, then each child given its parent), with the controlled rounding
  of private-pgm's ``synthetic_data`` (counts n·p rounded, remainders drawn),
  which keeps every sampled marginal of the tree within a row or so per cell
  of the model's, and each child's rows spread evenly over the columns
  already drawn (:mod:`dpframe.mechanisms.synth.synth_sampling`), which does
  the same for the pairs the tree links only through a path.

All of this is post-processing of released noisy marginals: it reads no data.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.runtime.stopping import check_stop
from dpframe.mechanisms.synth.synth_sampling import controlled_counts, draw_given, shuffled_rows

__all__ = ["Measurement", "TreeModel", "controlled_counts", "fit_tree", "sample_tree"]

Array = npt.NDArray[np.float64]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Measurement:
    """A noisy marginal: its clique, noisy counts and per-cell noise variance.

    Attributes:
        clique: one column position ``(i,)`` or an edge ``(i, j)`` with i < j.
        values: the noisy counts, shaped like the clique's table.
        variance: each cell's noise variance (same shape, all > 0).
    """

    clique: tuple[int, ...]
    values: Array
    variance: Array


@dataclass(frozen=True)
class TreeModel:
    """A fitted tree model: the consistent marginals it implies.

    Attributes:
        sizes: cells per column.
        edges: the tree's edges (i, j), i < j.
        total: the number of rows N̂ the marginals add up to.
        nodes: per column, its 1-way marginal (counts, summing to ``total``).
        pairs: per edge, its 2-way marginal (counts, rows i, columns j).
        loss: the final weighted squared error.
        iterations: mirror-descent steps taken.
    """

    sizes: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    total: float
    nodes: tuple[Array, ...]
    pairs: tuple[Array, ...]
    loss: float
    iterations: int

    def marginal(self, i: int, j: int) -> Array:
        """The model's 2-way marginal of columns i and j (exact: along the tree path)."""
        if i == j:
            return np.diag(self.nodes[i])
        path = _path(self.edges, len(self.sizes), i, j)
        # p(x_i, x_j) = Σ over the path of the product of conditionals.
        table = np.diag(self.nodes[i] / self.total)  # (x_i, x_current) with current = i
        for a, b in itertools.pairwise(path):
            cond = _conditional(self, a, b)  # p(x_b | x_a), shape (k_a, k_b)
            table = table @ cond
        return table * self.total


def _conditional(model: TreeModel, a: int, b: int) -> Array:
    """p(x_b | x_a) from the edge between a and b (uniform where p(x_a) = 0)."""
    index = model.edges.index((min(a, b), max(a, b)))
    joint = model.pairs[index] if a < b else model.pairs[index].T
    rows = joint.sum(axis=1, keepdims=True)
    out = np.full_like(joint, 1.0 / joint.shape[1])
    np.divide(joint, rows, out=out, where=rows > 0)
    return out


def _path(edges: Sequence[tuple[int, int]], d: int, start: int, end: int) -> list[int]:
    """The columns on the tree path from ``start`` to ``end`` (both included)."""
    adjacent: list[list[int]] = [[] for _ in range(d)]
    for a, b in edges:
        adjacent[a].append(b)
        adjacent[b].append(a)
    parent = [-1] * d
    seen = [False] * d
    seen[start] = True
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in adjacent[node]:
            if not seen[other]:
                seen[other] = True
                parent[other] = node
                queue.append(other)
    path = [end]
    while path[-1] != start:
        path.append(parent[path[-1]])
    return path[::-1]


def _order(d: int, edges: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """A breadth-first order from column 0 and each column's parent (−1 for the root)."""
    adjacent: list[list[int]] = [[] for _ in range(d)]
    for a, b in edges:
        adjacent[a].append(b)
        adjacent[b].append(a)
    parent = [-1] * d
    order = [0]
    seen = {0}
    for node in order:
        for other in adjacent[node]:
            if other not in seen:
                seen.add(other)
                parent[other] = node
                order.append(other)
    if len(order) != d:
        raise ValueError("The edges do not form a spanning tree.")
    return order, parent


def _logsumexp(x: Array, axis: int) -> Array:
    # The arrays' own methods: the same reductions as np.max/np.sum, without numpy's
    # dispatch (a fit calls this about 4,000 times on small tables).
    top = x.max(axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    summed = np.log(np.exp(x - top).sum(axis=axis, keepdims=True)) + top
    out: Array = summed.squeeze(axis=axis)
    return out


class _Tree:
    """Exact belief propagation on a tree: marginals (as probabilities) from potentials."""

    def __init__(self, sizes: Sequence[int], edges: Sequence[tuple[int, int]]) -> None:
        self.sizes = tuple(sizes)
        self.edges = tuple(edges)
        self.order, self.parent = _order(len(sizes), edges)
        self.edge_of = {(a, b): k for k, (a, b) in enumerate(edges)}

    def _oriented(self, theta_e: Sequence[Array], parent: int, child: int) -> Array:
        """The edge potential as a (parent, child) table."""
        if parent < child:
            return theta_e[self.edge_of[(parent, child)]]
        flipped: Array = theta_e[self.edge_of[(child, parent)]].T
        return flipped

    def marginals(
        self, theta_n: Sequence[Array], theta_e: Sequence[Array]
    ) -> tuple[list[Array], list[Array]]:
        """Every 1-way and edge marginal (probabilities) of exp(Σθ), by two message passes."""
        d = len(self.sizes)
        up: list[Array] = [np.zeros(0)] * d  # message child -> parent, over the parent's cells
        inner = [np.array(t, dtype=np.float64) for t in theta_n]  # θ_i + Σ messages from children
        for node in reversed(self.order[1:]):
            par = self.parent[node]
            table = self._oriented(theta_e, par, node) + inner[node][None, :]
            up[node] = _logsumexp(table, axis=1)
            inner[par] = inner[par] + up[node]
        belief = [np.zeros(0)] * d
        belief[self.order[0]] = inner[self.order[0]]
        down: list[Array] = [np.zeros(0)] * d  # message parent -> child, over the child's cells
        for node in self.order[1:]:
            par = self.parent[node]
            cavity = belief[par] - up[node]
            table = self._oriented(theta_e, par, node) + cavity[:, None]
            down[node] = _logsumexp(table, axis=0)
            belief[node] = inner[node] + down[node]
        log_z = float(_logsumexp(belief[self.order[0]], axis=0))
        nodes = [np.exp(b - log_z) for b in belief]
        pairs: list[Array] = [np.zeros(0)] * len(self.edges)
        for node in self.order[1:]:
            par = self.parent[node]
            table = (
                self._oriented(theta_e, par, node)
                + (belief[par] - up[node])[:, None]
                + inner[node][None, :]
                - log_z
            )
            joint = np.exp(table)
            pairs[self.edge_of[(min(par, node), max(par, node))]] = joint if par < node else joint.T
        return nodes, pairs


def _loss(
    nodes: Sequence[Array],
    pairs: Sequence[Array],
    measurements: Sequence[Measurement],
    edge_of: dict[tuple[int, int], int],
    total: float,
) -> tuple[float, list[Array], list[Array]]:
    """L(μ) and its gradient in θ coordinates (∂L/∂p = N̂·(μ − y)/v for each clique)."""
    loss = 0.0
    grad_n = [np.zeros(p.shape) for p in nodes]
    grad_e = [np.zeros(p.shape) for p in pairs]
    for m in measurements:
        if len(m.clique) == 1:
            mu = nodes[m.clique[0]] * total
            target = grad_n[m.clique[0]]
        else:
            k = edge_of[(m.clique[0], m.clique[1])]
            mu = pairs[k] * total
            target = grad_e[k]
        residual = (mu - m.values) / m.variance
        loss += 0.5 * float(((mu - m.values) * residual).sum())
        target += total * residual
    return loss, grad_n, grad_e


def fit_tree(
    sizes: Sequence[int],
    edges: Sequence[tuple[int, int]],
    measurements: Sequence[Measurement],
    total: float,
    iterations: int = 1000,
    progress: Progress | None = None,
    tolerance: float = 1e-7,
) -> TreeModel:
    """Consistent marginals closest (weighted least squares) to the measurements.

    Entropic mirror descent over the tree's potentials with an Armijo step
    (see the module docstring); stops after ``iterations`` steps or when a
    step improves the loss by less than ``tolerance`` (relative) ten times in
    a row.

    Args:
        sizes: cells per column.
        edges: a spanning tree (i, j), i < j (empty for one column).
        measurements: noisy marginals on single columns or on tree edges.
        total: the row count N̂ the marginals add up to (> 0).
        iterations: the most mirror-descent steps.
        progress: called with (step, iterations).
        tolerance: the relative improvement below which the fit stops.
    """
    tree = _Tree(sizes, edges)
    theta_n = [np.zeros(k) for k in sizes]
    theta_e = [np.zeros((sizes[a], sizes[b])) for a, b in edges]
    nodes, pairs = tree.marginals(theta_n, theta_e)
    loss, grad_n, grad_e = _loss(nodes, pairs, measurements, tree.edge_of, total)
    smallest = min(float(np.min(m.variance)) for m in measurements)
    alpha = smallest / (total * total * max(len(measurements), 1))
    quiet = 0
    step = 0
    for step in range(1, iterations + 1):
        check_stop()  # a curator past its wall-clock limit stops here
        alpha *= 2.0
        for _ in range(30):
            new_n = [t - alpha * g for t, g in zip(theta_n, grad_n, strict=True)]
            new_e = [t - alpha * g for t, g in zip(theta_e, grad_e, strict=True)]
            new_nodes, new_pairs = tree.marginals(new_n, new_e)
            new_loss, new_gn, new_ge = _loss(
                new_nodes, new_pairs, measurements, tree.edge_of, total
            )
            # Armijo: the decrease is at least half the linear prediction.
            predicted = sum(
                float((g * (p - q)).sum()) for g, p, q in zip(grad_n, nodes, new_nodes, strict=True)
            ) + sum(
                float((g * (p - q)).sum()) for g, p, q in zip(grad_e, pairs, new_pairs, strict=True)
            )
            if loss - new_loss >= 0.5 * predicted:
                break
            alpha *= 0.5
        else:
            break  # no step decreases the loss: at the optimum (to float precision)
        improvement = (loss - new_loss) / max(loss, 1e-300)
        theta_n, theta_e, nodes, pairs = new_n, new_e, new_nodes, new_pairs
        loss, grad_n, grad_e = new_loss, new_gn, new_ge
        quiet = quiet + 1 if improvement < tolerance else 0
        if progress is not None and (step % 10 == 0 or step == iterations):
            progress(step, iterations)
        if quiet >= 10:
            break
    if progress is not None:
        progress(iterations, iterations)
    return TreeModel(
        tuple(sizes),
        tuple(edges),
        float(total),
        tuple(p * total for p in nodes),
        tuple(p * total for p in pairs),
        float(loss),
        step,
    )


def sample_tree(
    model: TreeModel,
    n: int,
    gen: np.random.Generator,  # not privacy noise
) -> npt.NDArray[np.int64]:
    """``n`` rows of cell indices (n × columns) drawn by forward sampling along the tree.

    The root's counts are :func:`controlled_counts` of its marginal; then, in
    breadth-first order, the rows of each parent cell get their child's cells
    by :func:`~dpframe.mechanisms.synth.synth_sampling.draw_given` of the
    conditional p(x_child | x_parent) (controlled counts, spread evenly over
    the columns already drawn); the rows come out in a random order.
    """
    d = len(model.sizes)
    order, parent = _order(d, model.edges)
    out = np.zeros((n, d), dtype=np.int64, order="F")  # columns contiguous
    if n == 0:
        return out
    root = order[0]
    out[:, root] = np.repeat(
        np.arange(model.sizes[root]), controlled_counts(model.nodes[root], n, gen)
    )
    gen.shuffle(out[:, root])
    for k, node in enumerate(order[1:], start=1):
        par = parent[node]
        context = [(out[:, c], model.sizes[c]) for c in order[:k] if c != par]
        out[:, node] = draw_given(_conditional(model, par, node), out[:, par], context, gen)
    return shuffled_rows(out, gen)
