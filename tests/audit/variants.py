"""Batched release functions for the auditor's tests: deliberately wrong ones and correct twins.

Each ``sampler(df, n)`` returns ``n`` independent releases computed on ``df``,
with the noise from our secure exact samplers.  A wrong variant re-implements
one of our mechanisms with one bug injected; its twin is the correct
mechanism (our own mechanism functions where they exist), on the same data,
so that a test can show the auditor tells them apart at the same sample size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

import dpframe as dp
from dpframe.mechanisms.selection.selection import permute_and_flip
from dpframe.mechanisms.thresholds.partition_selection import selection_threshold
from dpframe.mechanisms.thresholds.sparse_vector import _sparse_vector_runs
from dpframe.noise import SecureRandom, coarsen_up, discrete_laplace_array

Sampler = Callable[[pd.DataFrame, int], Sequence[object]]

EPSILON = 1.0
DELTA = 1e-6
BOUNDS = (0.0, 10.0)
CATEGORIES = ("a", "b", "c")
GRID = 2.0**-6  # the public output grid of the sum/mean variants


def _dlap(scale: float, n: int, rng: SecureRandom) -> np.ndarray:
    return discrete_laplace_array(coarsen_up(scale), n, rng).astype(np.float64)


def count(scale_factor: float) -> Sampler:
    """Row count + discrete Laplace of scale ``scale_factor/ε`` (1 is correct, Δ = 1)."""

    def sampler(df: pd.DataFrame, n: int) -> list[float]:
        return list(len(df) + _dlap(scale_factor / EPSILON, n, SecureRandom()))

    return sampler


def _grid_noise(scale: float, n: int) -> np.ndarray:
    return GRID * _dlap(scale / GRID, n, SecureRandom())


def sum_(clamp: bool) -> Sampler:
    """Sum of x + noise of scale max(|L|, |U|)/ε on a grid; the bug: no clamping."""
    low, high = BOUNDS

    def sampler(df: pd.DataFrame, n: int) -> list[float]:
        x = df["x"].to_numpy(dtype=np.float64)
        x = x[~np.isnan(x)]
        if clamp:
            x = np.clip(x, low, high)
        with np.errstate(invalid="ignore"):
            exact = GRID * np.rint(float(np.sum(x)) / GRID)
            return list(exact + _grid_noise(max(abs(low), abs(high)) / EPSILON, n))

    return sampler


def mean(clamp: bool) -> Sampler:
    """Noisy sum / noisy count, ε/2 each; correct: clamped centred sum and clamped output."""
    low, high = BOUNDS
    center = (low + high) / 2

    def sampler(df: pd.DataFrame, n: int) -> list[float]:
        x = df["x"].to_numpy(dtype=np.float64)
        x = x[~np.isnan(x)]
        if clamp:
            x = np.clip(x, low, high) - center
            sens = (high - low) / 2
        else:
            sens = max(abs(low), abs(high))
        with np.errstate(invalid="ignore", divide="ignore"):
            exact = GRID * np.rint(float(np.sum(x)) / GRID)
            noisy_sum = exact + _grid_noise(sens / (EPSILON / 2), n)
            noisy_count = len(x) + _dlap(1 / (EPSILON / 2), n, SecureRandom())
            if clamp:
                return list(np.clip(center + noisy_sum / np.maximum(noisy_count, 1), low, high))
            return list(noisy_sum / noisy_count)

    return sampler


#: Conditions of the sparse-vector tests, in the order they are examined.
SVT_CONDITIONS: tuple[Callable[[pd.DataFrame], pd.Series], ...] = (
    lambda df: df["g"] == "c",
    lambda df: df["x"] > 7.3,
)
#: The same conditions as expressions, for ``dp.audit.neighbours(queries=...)``.
SVT_EXPRESSIONS = (dp.col("g") == "c", dp.col("x") > 7.3)


def sparse_vector(query_noise: bool, threshold: float) -> Sampler:
    """AboveThreshold (max_hits = 1) over :data:`SVT_CONDITIONS`; the bug: no query noise."""

    def sampler(df: pd.DataFrame, n: int) -> list[tuple[int, ...]]:
        counts = np.array([int(c(df).sum()) for c in SVT_CONDITIONS], dtype=np.int64)
        rng = SecureRandom()
        if query_noise:
            runs = _sparse_vector_runs(counts, threshold, Fraction(EPSILON), 1, rng, n)
            return [tuple(np.flatnonzero(row).tolist()) for row in runs.hits]
        rho = _dlap(2 / EPSILON, n, rng)  # the threshold noise alone
        above = counts[None, :] >= np.ceil(threshold) + rho[:, None]
        first = np.where(above.any(axis=1), np.argmax(above, axis=1), -1)
        return [() if i < 0 else (int(i),) for i in first]

    return sampler


def noisy_max(release_value: bool) -> Sampler:
    """The most frequent category; the bug: one-sided noise of scale 2/ε and the max released."""

    def sampler(df: pd.DataFrame, n: int) -> list[object]:
        counts = np.array([int((df["g"] == k).sum()) for k in CATEGORIES], dtype=np.int64)
        rng = SecureRandom()
        if not release_value:
            return [
                CATEGORIES[permute_and_flip(counts, Fraction(EPSILON), 1, rng)] for _ in range(n)
            ]
        noise = np.abs(_dlap(2 / EPSILON, n * len(counts), rng)).reshape(n, len(counts))
        noisy = counts[None, :] + noise
        best = np.argmax(noisy, axis=1)
        return [(CATEGORIES[b], float(noisy[i, b])) for i, b in enumerate(best)]

    return sampler


def partition(with_delta: bool) -> Sampler:
    """Keys of g released above a threshold; the bug: a threshold of 1 that ignores δ."""

    def sampler(df: pd.DataFrame, n: int) -> list[tuple[str, ...]]:
        found = df["g"].value_counts()
        keys = [str(k) for k in found.index]
        counts = found.to_numpy(dtype=np.int64)
        # select_partitions, vectorized over draws: the same noise scale and threshold τ.
        tau = selection_threshold(Fraction(EPSILON), Fraction(DELTA)) if with_delta else 1
        noise = discrete_laplace_array(coarsen_up(1 / EPSILON), n * len(counts), SecureRandom())
        kept = counts[None, :] + noise.reshape(n, len(counts)) >= tau
        return [tuple(sorted(keys[i] for i in np.flatnonzero(row))) for row in kept]

    return sampler


@dataclass(frozen=True)
class Variant:
    """A wrong variant, its correct twin, the neighbour on which it fails, and its claim."""

    name: str
    wrong: Sampler
    correct: Sampler
    pair: str
    delta: float = 0.0


VARIANTS: tuple[Variant, ...] = (
    Variant("laplace_half_scale", count(0.5), count(1.0), "high_bound"),
    Variant("laplace_scale_30pct_small", count(0.7), count(1.0), "high_bound"),
    Variant("sum_without_clamping", sum_(clamp=False), sum_(clamp=True), "above_bounds"),
    Variant(
        "sparse_vector_without_query_noise",
        sparse_vector(query_noise=False, threshold=10.5),
        sparse_vector(query_noise=True, threshold=10.5),
        "flips_query",
    ),
    Variant("noisy_max_releasing_value", noisy_max(True), noisy_max(False), "high_bound"),
    Variant(
        "partition_threshold_without_delta", partition(False), partition(True), "new_key", DELTA
    ),
    Variant("mean_of_two_noisy_values_unclamped", mean(clamp=False), mean(clamp=True), "+inf"),
)


def base_frame() -> pd.DataFrame:
    """40 rows: x in [0, 10]; g: 18 'a' (the mode), 12 'b', 10 'c'.

    The two sparse-vector conditions both count 10 rows.
    """
    x = np.linspace(0.5, 9.5, 40)
    g = ["a"] * 18 + ["b"] * 12 + ["c"] * 10
    frame: pd.DataFrame = pd.DataFrame({"x": x, "g": g})
    return frame
