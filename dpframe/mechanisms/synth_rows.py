"""The data side of a synthetic copy: exact marginals, noisy measurements, rows' values.

Shared by MST (:mod:`dpframe.mechanisms.synth_family`) and AIM
(:mod:`dpframe.mechanisms.synth_aim`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.mechanisms.additive import NoiseSpec, release_integer_sums
from dpframe.mechanisms.allocation import NoiseAllocation
from dpframe.mechanisms.family import Released
from dpframe.noise import SecureRandom
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey
from dpframe.plan.releases import Synthesize

__all__ = [
    "FIT_ITERATIONS",
    "FULL_TABLE_CELLS",
    "ExactTables",
    "column_values",
    "inverse_variance_total",
    "measure_marginal",
]

#: The most mirror-descent steps of the fit (it stops earlier once it has converged).
FIT_ITERATIONS = 1000
#: The most cells of the full contingency table counted in one pass over the data (32 MiB
#: of float64); a larger domain is counted one column and one pair of columns at a time.
FULL_TABLE_CELLS = 2**22

Planned = tuple[int, int, NoiseSpec]


def measure_marginal(
    exact: npt.NDArray[np.float64],
    planned: tuple[NoiseAllocation, Planned],
    sensitivity: int,
    rng: SecureRandom,
) -> tuple[npt.NDArray[np.float64], NoiseSpec]:
    """One noisy marginal: exact cell counts plus the planned secure noise (every cell)."""
    allocation, plan = planned
    return release_integer_sums(
        exact.ravel(), sensitivity, 1.0, allocation, rng, planned=plan, spread=sensitivity
    )


def sampling_generator(rng: SecureRandom) -> np.random.Generator:  # not privacy noise
    """A numpy generator for drawing the copy's rows from the fitted model.

    Sampling is post-processing of released marginals, so it needs no secure
    noise; the generator is still seeded from the secure source (256 bits), so
    copies are not reproducible from a guessable seed.
    """
    entropy = [int(v) for v in rng.uniform_below(2**62, 4)]
    seed = np.random.SeedSequence(entropy)  # not privacy noise
    return np.random.default_rng(seed)  # not privacy noise


def inverse_variance_total(totals: list[tuple[float, float]]) -> float:
    """The inverse-variance weighted mean of noisy totals given as (total, variance)."""
    weights = sum(1.0 / v for _, v in totals)
    return sum(t / v for t, v in totals) / weights


def column_values(
    node: Synthesize,
    i: int,
    cells: npt.NDArray[np.int64],
    gen: np.random.Generator,  # not privacy noise
) -> Any:
    """A column's values from its (original) cells: categories, or draws within the bins."""
    keys = node.categories[i]
    if keys:
        if all(isinstance(k, (bool, np.bool_)) for k in keys):
            return np.asarray(keys, dtype=bool)[cells]
        return pd.Categorical.from_codes(cells, categories=pd.Index(list(keys), dtype=object))
    edges = np.asarray(node.edges[i], dtype=np.float64)
    low, high = edges[cells], edges[cells + 1]
    if not node.integer[i]:
        values = low + (high - low) * gen.random(len(cells))
        return np.minimum(values, high)
    last = len(edges) - 2
    first_int = np.ceil(low)
    end_int = np.where(cells == last, np.floor(high), np.ceil(high) - 1)
    empty = end_int < first_int
    middle = np.round((low + high) / 2)
    first_int = np.where(empty, middle, first_int)
    end_int = np.where(empty, middle, end_int)
    span = (end_int - first_int + 1).astype(np.int64)
    drawn = first_int + np.floor(gen.random(len(cells)) * span)
    return pd.array(drawn.astype(np.int64), dtype="Int64")


class ExactTables:
    """The exact 1- and 2-way counts of the complete rows (``Synthesize.complete``).

    When the full contingency table has at most :data:`FULL_TABLE_CELLS`
    cells it is counted in one pass over the data and every marginal is a sum
    of it; otherwise each marginal is its own grouped count.  Both give the
    same counts.
    """

    def __init__(
        self, run: Released[Synthesize], node: Synthesize, keys: tuple[GroupKey, ...]
    ) -> None:
        self._run, self._plan, self._keys = run, node.complete(), keys
        self._sizes = node.sizes()
        self._full: npt.NDArray[np.float64] | None = None
        if math.prod(self._sizes) <= FULL_TABLE_CELLS:
            counts = run.backend.compute(self._plan, (Measure("rows"),), keys)[0]
            self._full = counts.reshape(self._sizes)

    def clique(self, clique: tuple[int, ...]) -> npt.NDArray[np.float64]:
        """The exact counts of the columns in ``clique`` (sorted), flattened row-major."""
        if self._full is None:
            return self._count(tuple(self._keys[i] for i in clique))
        others = tuple(a for a in range(len(self._sizes)) if a not in clique)
        found: npt.NDArray[np.float64] = self._full.sum(axis=others).ravel()
        return found

    def _count(self, keys: tuple[GroupKey, ...]) -> npt.NDArray[np.float64]:
        counts: npt.NDArray[np.float64] = self._run.backend.compute(
            self._plan, (Measure("rows"),), keys
        )[0]
        return counts

    def one(self, i: int) -> npt.NDArray[np.float64]:
        """Column ``i``'s exact cell counts."""
        if self._full is None:
            return self._count((self._keys[i],))
        others = tuple(a for a in range(len(self._sizes)) if a != i)
        found: npt.NDArray[np.float64] = self._full.sum(axis=others)
        return found

    def two(self, i: int, j: int) -> npt.NDArray[np.float64]:
        """Columns ``i`` and ``j``'s exact table (rows: i's cells)."""
        if self._full is None:
            return self._count((self._keys[i], self._keys[j])).reshape(
                self._sizes[i], self._sizes[j]
            )
        others = tuple(a for a in range(len(self._sizes)) if a not in (i, j))
        found: npt.NDArray[np.float64] = self._full.sum(axis=others)
        return found
