"""A release's own forms build their matrix only when asked, with the same intervals (issue 35).

:meth:`Forms.of_block` keeps no matrix until something needs it; its
intervals are read off the block.  Each check compares, bit for bit, with
the same block's forms built eagerly (the identity matrix given), which go
through the general path; and the "too thin" check's shortcut for "every
cell judged" with the cells it judges.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

import dpframe as dp
from dpframe.api.thin import thin_cells
from dpframe.errors import DPError
from dpframe.mechanisms.answers import Block, DPArray, Forms
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.moments.aggregates import IntervalModel

LAPLACE = NoiseSpec("laplace", Fraction(10), 1.0)
GAUSS = NoiseSpec("gaussian", Fraction(400), 0.5, rounding=0.25)
VALUES = np.array([8773.0, -6863.5, 0.0, 1e-300, np.nan, 6091.0])
LEVELS = (0.5, 0.9, 0.95, 0.999)


def _eager(block: Block) -> Forms:
    """The same forms with the identity matrix given: the general path."""
    return Forms((block,), sparse.identity(block.size, format="csr").tocsr())


def _model_block(values: np.ndarray) -> Block:
    """A mean's cells: a model block (interval arithmetic on its noises)."""
    n = len(values)
    counts = np.linspace(40.0, 400.0, n)
    model = IntervalModel(
        "mean",
        (counts, counts * 3.0),
        (LAPLACE, GAUSS),
        (0.0, 10.0),
        center=np.full(n, 5.0),
    )
    return Block(n, model=model, released=np.nan_to_num(values, nan=2.0))


def _same(got: tuple[np.ndarray, np.ndarray], want: tuple[np.ndarray, np.ndarray]) -> None:
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("spec", [LAPLACE, GAUSS])
def test_noise_block_intervals_are_bit_for_bit_the_general_paths(spec: NoiseSpec) -> None:
    block = Block(len(VALUES), noise=spec)
    lazy = Forms.of_block(block)
    for level in LEVELS:
        _same(lazy.intervals(VALUES, level), _eager(block).intervals(VALUES, level))
        _same(
            DPArray(VALUES, Forms.of_block(block)).intervals(level),
            DPArray(VALUES, _eager(block)).intervals(level),
        )


def test_model_block_intervals_are_bit_for_bit_the_general_paths() -> None:
    block = _model_block(VALUES)
    for level in LEVELS:
        _same(
            Forms.of_block(block).intervals(VALUES, level), _eager(block).intervals(VALUES, level)
        )
        _same(
            DPArray(VALUES, Forms.of_block(block)).intervals(level),
            DPArray(VALUES, _eager(block)).intervals(level),
        )


def test_a_reason_block_refuses_alike_and_an_empty_block_gives_empty_intervals() -> None:
    block = Block(3, reason="a quantile's accuracy is a rank error")
    with pytest.raises(DPError, match="rank error"):
        Forms.of_block(block).intervals(np.ones(3), 0.95)
    with pytest.raises(DPError, match="rank error"):
        _eager(block).intervals(np.ones(3), 0.95)
    for empty in (Block(0, reason="no interval"), Block(0, noise=LAPLACE)):
        _same(Forms.of_block(empty).intervals(np.zeros(0), 0.95), (np.zeros(0), np.zeros(0)))
        _same(_eager(empty).intervals(np.zeros(0), 0.95), (np.zeros(0), np.zeros(0)))
        assert Forms.of_block(empty).reasons() == []


def test_the_matrix_is_built_when_asked_and_is_the_identity() -> None:
    block = Block(4, noise=LAPLACE)
    forms = Forms.of_block(block)
    assert forms.cells == 4
    assert forms.blocks == (block,)
    dense = forms.matrix.toarray()
    assert np.array_equal(dense, np.eye(4))
    assert forms.matrix is forms.matrix  # built once
    # Once built, the general path answers: still the same intervals.
    _same(forms.intervals(VALUES[:4], 0.95), _eager(block).intervals(VALUES[:4], 0.95))


def test_steps_on_lazy_forms_keep_every_interval() -> None:
    block = Block(len(VALUES), noise=LAPLACE)
    lazy = pd.Series(DPArray(VALUES, Forms.of_block(block)))
    eager = pd.Series(DPArray(VALUES, _eager(block)))
    steps: list[Callable[[pd.Series], pd.Series]] = [
        lambda s: s.iloc[[3, 0, 5]],
        lambda s: s.cumsum(),
        lambda s: s * 2 - s.iloc[::-1].to_numpy(),
        lambda s: pd.concat([s, s.iloc[:2]]),
    ]
    for step in steps:
        got, want = dp.ci(step(lazy)).to_numpy(), dp.ci(step(eager)).to_numpy()
        _same((got[:, 0], got[:, 1]), (want[:, 0], want[:, 1]))
    assert str(lazy) == str(eager)


def test_lazy_forms_pickle_and_copy_with_their_intervals() -> None:
    block = Block(len(VALUES), noise=LAPLACE)
    array = DPArray(VALUES, Forms.of_block(block))
    for again in (pickle.loads(pickle.dumps(array)), copy.deepcopy(array)):
        assert isinstance(again, DPArray)
        _same(again.intervals(0.95), array.intervals(0.95))


def test_thin_check_judges_every_cell_when_the_values_sum_past_a_float() -> None:
    # Finite values whose sum overflows: the two-sums shortcut does not apply, and
    # the cell-by-cell check still judges every cell.
    values = np.array([1.5e308, 1.5e308, 3.0, -2.0])
    series = pd.Series(DPArray(values, Forms.of_block(Block(4, noise=LAPLACE))), index=list("abcd"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        found = thin_cells(series)
    assert found is not None
    assert (found.thin, found.judged) == (2, 4)
    assert found.example.startswith("d: -2")


def test_thin_check_leaves_missing_cells_out_and_counts_zeros() -> None:
    values = np.array([np.nan, 0.0, 5.0, 1_000.0])
    series = pd.Series(DPArray(values, Forms.of_block(Block(4, noise=LAPLACE))), index=list("wxyz"))
    found = thin_cells(series)
    assert found is not None
    assert (found.thin, found.judged, found.zeros) == (2, 3, 1)
    assert found.example.startswith("y: 5")


def _reference_thin(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[int, int, int]:
    """Thin, judged and zero counts as the check defines them, cell by cell."""
    thin = judged = zeros = 0
    for v, lo, hi in zip(values, low, high, strict=True):
        half = max(v - lo, hi - v, 0.0)
        if not np.isfinite(v) or np.isnan(half):
            continue
        judged += 1
        if half >= abs(v) and half > 0:
            thin += 1
            zeros += v == 0
    return thin, judged, zeros


@pytest.mark.parametrize("seed", range(6))
def test_thin_check_counts_as_its_definition_cell_by_cell(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.normal(0, 40, 300).round()
    values[rng.integers(0, 300, 20)] = 0.0
    values[rng.integers(0, 300, 10)] = np.nan
    blocks = [Block(300, noise=LAPLACE), _model_block(values)]
    series = pd.Series(DPArray(values, Forms.of_block(blocks[seed % 2])))
    low, high = series.array.intervals(0.95)
    thin, judged, zeros = _reference_thin(values, low, high)
    found = thin_cells(series)
    assert found is not None
    assert (found.thin, found.judged, found.zeros) == (thin, judged, zeros)
