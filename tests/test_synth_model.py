"""The tree model behind MST: exact belief propagation, the fit, and controlled sampling."""

from __future__ import annotations

import numpy as np

from dpframe.mechanisms.synth.synth_model import (
    Measurement,
    controlled_counts,
    fit_tree,
    sample_tree,
)


def _chain() -> tuple[np.ndarray, list[np.ndarray]]:
    """A 3-column chain distribution 0 - 1 - 2 (sizes 3, 4, 2) and its full joint."""
    gen = np.random.default_rng(3)  # test data only
    p0 = gen.dirichlet(np.ones(3))
    p1_0 = gen.dirichlet(np.ones(4), size=3)
    p2_1 = gen.dirichlet(np.ones(2), size=4)
    joint = p0[:, None, None] * p1_0[:, :, None] * p2_1[None, :, :]
    return joint, [p0, p1_0, p2_1]


def test_fit_recovers_exact_tree_marginals_and_off_tree_pairs() -> None:
    joint, _ = _chain()
    n = 10_000.0
    tiny = 1e-6
    measurements = [
        Measurement((0,), joint.sum(axis=(1, 2)) * n, np.full(3, tiny)),
        Measurement((1,), joint.sum(axis=(0, 2)) * n, np.full(4, tiny)),
        Measurement((2,), joint.sum(axis=(0, 1)) * n, np.full(2, tiny)),
        Measurement((0, 1), joint.sum(axis=2) * n, np.full((3, 4), tiny)),
        Measurement((1, 2), joint.sum(axis=0) * n, np.full((4, 2), tiny)),
    ]
    model = fit_tree((3, 4, 2), [(0, 1), (1, 2)], measurements, n, iterations=3000)
    assert np.abs(model.pairs[0] - joint.sum(axis=2) * n).max() < 1.0
    assert np.abs(model.pairs[1] - joint.sum(axis=0) * n).max() < 1.0
    # The pair (0, 2) is not an edge: the model gives it through the path 0 - 1 - 2,
    # exactly the chain's marginal.
    assert np.abs(model.marginal(0, 2) - joint.sum(axis=1) * n).max() < 1.0
    for i, m in enumerate(model.nodes):
        assert abs(m.sum() - n) < 1e-6 * n, i


def test_fit_makes_inconsistent_measurements_consistent() -> None:
    # Two edges sharing column 1 measured with different margins for it.
    a = np.array([[30.0, 10.0], [5.0, 55.0]])
    b = np.array([[50.0, -4.0], [20.0, 34.0]])  # negative noise; column 1 margin (46, 54)
    measurements = [
        Measurement((0, 1), a, np.ones((2, 2))),
        Measurement((1, 2), b, np.ones((2, 2))),
    ]
    model = fit_tree((2, 2, 2), [(0, 1), (1, 2)], measurements, 100.0)
    np.testing.assert_allclose(model.pairs[0].sum(axis=0), model.pairs[1].sum(axis=1))
    assert (model.pairs[1] >= 0).all()


def test_controlled_counts_are_within_one_row() -> None:
    gen = np.random.default_rng(5)
    p = gen.dirichlet(np.ones(17))
    for n in (0, 1, 16, 17, 1001):
        counts = controlled_counts(p, n, gen)
        assert counts.sum() == n
        assert np.all(np.abs(counts - n * p) < 1.0)


def test_sampled_rows_follow_the_model_closely() -> None:
    joint, _ = _chain()
    n = 5000.0
    measurements = [
        Measurement((0, 1), joint.sum(axis=2) * n, np.full((3, 4), 1e-6)),
        Measurement((1, 2), joint.sum(axis=0) * n, np.full((4, 2), 1e-6)),
    ]
    model = fit_tree((3, 4, 2), [(0, 1), (1, 2)], measurements, n, iterations=3000)
    rows = sample_tree(model, 5000, np.random.default_rng(9))
    assert rows.shape == (5000, 3)
    pair = np.zeros((3, 4))
    np.add.at(pair, (rows[:, 0], rows[:, 1]), 1)
    # Controlled rounding: every cell within a few rows of the model (not √n).
    assert np.abs(pair - model.pairs[0]).max() < 4
    # The pair off the tree (0 - 1 - 2): column 2's rows spread evenly over column 0 in each
    # cell of column 1, so within 3 rows per cell of column 1 (i.i.d. rows: σ ≈ 26 rows).
    path = np.zeros((3, 2))
    np.add.at(path, (rows[:, 0], rows[:, 2]), 1)
    assert np.abs(path - model.marginal(0, 2)).max() < 12
