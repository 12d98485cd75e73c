"""The junction-tree model behind AIM: triangulation, exact belief propagation, fit, sampling."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpframe.mechanisms.synth.synth_junction import JunctionTree, fit_junction, sample_junction
from dpframe.mechanisms.synth.synth_model import Measurement

SIZES = (3, 4, 2, 5)
# A 4-cycle: not a tree, needs a chord.
CYCLE: list[tuple[int, ...]] = [(0, 1), (1, 2), (2, 3), (0, 3)]


def _brute(theta: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """The full joint ∝ exp(Σ θ) over all cells (small domains only)."""
    log = np.zeros(SIZES)
    for clique, values in theta.items():
        shape = [SIZES[a] if a in clique else 1 for a in range(len(SIZES))]
        log = log + values.reshape(shape)
    joint: np.ndarray = np.exp(log - log.max())
    found: np.ndarray = joint / joint.sum()
    return found


def _marginal(joint: np.ndarray, clique: tuple[int, ...]) -> np.ndarray:
    others = tuple(a for a in range(joint.ndim) if a not in clique)
    found: np.ndarray = joint.sum(axis=others)
    return found


def test_min_fill_triangulates_a_cycle_into_two_triangles() -> None:
    tree = JunctionTree(SIZES, CYCLE)
    assert len(tree.cliques) == 2
    assert all(len(c) == 3 for c in tree.cliques)
    assert set(tree.cliques[0]) & set(tree.cliques[1]) in ({0, 2}, {1, 3})  # the chord
    assert tree.size() == sum(tree.cells(k) for k in range(2))
    assert sorted(tree.parent) == [-1, 0] or sorted(tree.parent) == [-1, 1]
    for clique in CYCLE:
        assert set(clique) <= set(tree.cliques[tree.home[clique]])


def test_belief_propagation_is_exact_on_a_loopy_model() -> None:
    gen = np.random.default_rng(5)  # test data only
    theta = {c: gen.normal(size=tuple(SIZES[a] for a in c)) for c in CYCLE}
    tree = JunctionTree(SIZES, CYCLE)
    belief = tree.beliefs(theta)
    joint = _brute(theta)
    for k, clique in enumerate(tree.cliques):
        np.testing.assert_allclose(belief[k], _marginal(joint, clique), atol=1e-12)
    for clique in CYCLE:
        np.testing.assert_allclose(tree.marginal(belief, clique), _marginal(joint, clique))


def test_nested_cliques_add_and_sum_through_each_other() -> None:
    """A triple, its pairs and its 1-ways (AIM measures all of them): the potentials
    go into the junction tree through the triple, and the marginals come out of it,
    exactly as the full joint says."""
    gen = np.random.default_rng(8)  # test data only
    nested = [(0, 1, 2), (0, 1), (1, 2), (0,), (2,), (2, 3), (3,), (0, 1)]
    theta = {c: gen.normal(size=tuple(SIZES[a] for a in c)) for c in dict.fromkeys(nested)}
    tree = JunctionTree(SIZES, list(theta))
    plan = tree.plan(list(theta))
    sources = {clique: source for clique, _, source in plan}
    assert sources[(0, 1)] == sources[(1, 2)] == (0, 1, 2)
    assert sources[(0,)] == (0, 1) and sources[(2,)] in {(1, 2), (2, 3)}
    assert [clique for clique, _, _ in plan].index((0, 1, 2)) == 0  # the largest first
    belief = tree.beliefs(theta, plan)
    joint = _brute(theta)
    for k, clique in enumerate(tree.cliques):
        np.testing.assert_allclose(belief[k], _marginal(joint, clique), atol=1e-12)
    for clique, found in tree.marginals(belief, plan).items():
        np.testing.assert_allclose(found, _marginal(joint, clique), atol=1e-12)


def test_fit_recovers_consistent_measurements_and_infers_the_rest() -> None:
    gen = np.random.default_rng(6)  # test data only
    truth = {c: gen.normal(size=tuple(SIZES[a] for a in c)) for c in CYCLE}
    joint = _brute(truth)
    n = 10_000.0
    measurements = [
        Measurement(c, _marginal(joint, c) * n, np.full(_marginal(joint, c).shape, 1e-6))
        for c in CYCLE
    ]
    model = fit_junction(SIZES, measurements, n, iterations=3000)
    for c in CYCLE:
        np.testing.assert_allclose(model.counts(c), _marginal(joint, c) * n, atol=0.05)
    # The cycle's model family holds the truth, so its maximum-entropy fit is the truth:
    # an unmeasured pair (a chord) and the whole table come out right too.
    np.testing.assert_allclose(model.any_counts((0, 2)), _marginal(joint, (0, 2)) * n, atol=0.5)
    np.testing.assert_allclose(model.any_counts((1, 3)), _marginal(joint, (1, 3)) * n, atol=0.5)


def test_fit_is_warm_started_and_handles_repeated_cliques() -> None:
    gen = np.random.default_rng(8)  # test data only
    joint = gen.dirichlet(np.ones(int(np.prod(SIZES)))).reshape(SIZES)
    n = 5_000.0
    pair = _marginal(joint, (0, 1)) * n
    measurements = [
        Measurement((0, 1), pair + 3.0, np.ones(pair.shape)),
        Measurement((0, 1), pair - 3.0, np.ones(pair.shape)),  # the same clique, measured again
        *(Measurement((a,), _marginal(joint, (a,)) * n, np.ones(SIZES[a])) for a in range(4)),
    ]
    first = fit_junction(SIZES, measurements, n, iterations=50)
    again = fit_junction(SIZES, measurements, n, iterations=50, start=first.theta)
    assert again.loss <= first.loss
    np.testing.assert_allclose(again.counts((0, 1)), pair, atol=0.5)  # the mean of the two


def test_sampled_rows_follow_the_model_closely() -> None:
    gen = np.random.default_rng(9)  # test data only
    theta = {c: gen.normal(size=tuple(SIZES[a] for a in c)) for c in [(0, 1, 2), (2, 3)]}
    joint = _brute(theta)
    measurements = [
        Measurement(c, _marginal(joint, c) * 1000, np.full(_marginal(joint, c).shape, 1e-6))
        for c in theta
    ]
    model = fit_junction(SIZES, measurements, 1000.0, iterations=2000)
    rows = sample_junction(model, 50_000, gen)
    assert rows.shape == (50_000, 4)
    for clique in [(0, 1, 2), (2, 3), (0, 3)]:
        counts = np.zeros(tuple(SIZES[a] for a in clique))
        np.add.at(counts, tuple(rows[:, a] for a in clique), 1)
        tv = 0.5 * np.abs(counts / 50_000 - _marginal(joint, clique)).sum()
        assert tv < 0.002, clique  # (0, 3) too: spread given 2 (before: 0.0028-0.0055)


def test_a_large_cliques_small_columns_come_out_within_a_row_or_two() -> None:
    """One column at a time (fewer cells first): a sub-marginal of a clique with far more
    cells than rows keeps the controlled counts' precision (drawn jointly: about √(n·p))."""
    sizes = (2, 2, 60, 60)
    gen = np.random.default_rng(4)  # test data only
    belief = gen.dirichlet(np.ones(math.prod(sizes))).reshape(sizes)
    measured = [Measurement((0, 1, 2, 3), belief * 3000, np.full(sizes, 1e-6))]
    model = fit_junction(sizes, measured, 3000.0, iterations=500)
    expected = model.belief[0].sum(axis=(2, 3)) * 3000
    for _ in range(5):
        rows = sample_junction(model, 3000, gen)
        counts = np.zeros((2, 2))
        np.add.at(counts, (rows[:, 0], rows[:, 1]), 1)
        assert np.abs(counts - expected).max() <= 2.0


@pytest.mark.parametrize(
    "cliques", [[(0, 1)], [(0, 1, 2), (1, 2, 3)], list(itertools.combinations(range(4), 2))]
)
def test_every_clique_has_a_home(cliques: list[tuple[int, ...]]) -> None:
    tree = JunctionTree(SIZES, cliques)
    for clique in cliques:
        assert set(clique) <= set(tree.cliques[tree.home[clique]])
    with pytest.raises(KeyError):
        JunctionTree(SIZES, [(0, 1)]).holder((0, 1, 2, 3))
