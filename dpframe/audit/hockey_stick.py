"""The hockey-stick (δ-estimation) test of one (ε, δ) claim on binned outputs.

A mechanism M is (ε, δ)-DP on a pair of neighbouring datasets (D0, D1) iff,
for every set S of outputs, both P[M(D1) ∈ S] − e^ε·P[M(D0) ∈ S] ≤ δ and the
same with D0 and D1 swapped; the largest left side over S is the hockey-stick
divergence.  Binning outputs is post-processing, so the binned divergence
Σ_b max(0, P1(b) − e^ε·P0(b)) is a lower bound of the true one, and a
violation on bins is a violation of the mechanism.

One *vote* of the test (Ding, Wang, Wang, Zhang, Kifer 2018, "Detecting
Violations of Differential Privacy", CCS — the same split into an event-finding
and a testing sample):

1. draw a pilot sample and a test sample of outputs from each dataset;
2. learn the bins from the pooled pilot outputs only (quantile bins for
   numbers, the values themselves for labels and for numbers with few
   distinct values; NaN and ±inf get bins of their own);
3. per direction, take as event S the candidate event with the best pilot
   z-score (P̂_a − e^ε·P̂_b − δ over its standard error); candidates are the
   unions of the bins with the largest pilot ratios and, for outputs that are
   single numbers, the tails {v ≤ t} and {v ≥ t};
4. on the test sample, estimate δ̂ = P̂_a(S) − e^ε·P̂_b(S) and flag the
   direction when the exact Clopper–Pearson bounds give
   P_a,low(S) − e^ε·P_b,high(S) > δ, each bound one-sided at level α_v/2.

Because S is chosen on independent data, a correct mechanism flags a
direction with probability at most α_v, a vote at most 2·α_v, and a majority
of V independent votes at most P[Binomial(V, 2·α_v) ≥ ⌊V/2⌋ + 1]; α_v is
solved from the overall false-alarm bound α the caller asks for
(:func:`vote_level`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpframe.errors import InvalidArgumentError

__all__ = [
    "Binning",
    "Direction",
    "Vote",
    "as_features",
    "clopper_pearson",
    "features",
    "hockey_stick_vote",
    "majority_false_alarm",
    "vote_level",
]

#: A feature vector: numbers (binned) and labels (compared exactly).
Feature = tuple[Any, ...]
#: Cells are hashable keys: (labels, per-coordinate bin keys).
Cell = tuple[tuple[Hashable, ...], tuple[Hashable, ...]]
_UNSEEN = "<unseen>"


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _label(value: object) -> Hashable:
    if isinstance(value, (list, tuple)):
        return tuple(_label(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()  # type: ignore[no-any-return]
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def features(output: object, max_coords: int = 3) -> Feature:
    """The feature vector of one release: numbers to bin, and labels.

    * a :class:`~dpframe.Release` or a number: one number;
    * a label (str, bool, None, a tuple or list of labels such as the hits of
      ``above_threshold``): one label;
    * a tuple or list of numbers: those numbers;
    * a pandas Series (a grouped release): its index as one label (so keys
      that appear or vanish are seen) and its first ``max_coords`` values as
      numbers, then the noisy count of the rows with undeclared keys when
      the group-by has that cell (``result.dp.undeclared``);
    * a DataFrame: its values, flattened, as numbers (first ``max_coords``).

    Args:
        output: what a release function returned.
        max_coords: the most numbers kept from a Series or DataFrame.

    Returns:
        A tuple whose numeric entries are floats and other entries are labels.
    """
    import pandas as pd

    from dpframe.mechanisms.answers.results import GroupedRelease, Release

    if isinstance(output, Release):
        return (float(output.value),)
    if _is_number(output):
        return (float(output),)  # type: ignore[arg-type]
    if isinstance(output, pd.Series):
        values = [float(v) if _is_number(v) else _label(v) for v in output.tolist()[:max_coords]]
        meta = output.attrs.get("dpframe")
        if isinstance(meta, GroupedRelease) and meta.undeclared is not None:
            values.append(float(meta.undeclared.count.value))
        return (_label(tuple(output.index.tolist())), *values)
    if isinstance(output, pd.DataFrame):
        flat = output.to_numpy().ravel().tolist()[:max_coords]
        return tuple(float(v) if _is_number(v) else _label(v) for v in flat)
    if isinstance(output, (list, tuple)) and output and all(_is_number(v) for v in output):
        return tuple(float(v) for v in output)
    return (_label(output),)


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return None


@dataclass(frozen=True)
class _Axis:
    """How one numeric coordinate is binned: exact values, or quantile edges."""

    exact: frozenset[float] | None
    edges: tuple[float, ...]

    def key(self, value: float) -> Hashable:
        special = _special(value)
        if special is not None:
            return special
        if self.exact is not None:
            return value if value in self.exact else _UNSEEN
        return int(np.searchsorted(np.asarray(self.edges), value, side="right"))


@dataclass(frozen=True)
class Binning:
    """Bins learned from pilot outputs (never from the outputs they will count).

    Attributes:
        axes: one rule per numeric coordinate position.
    """

    axes: tuple[_Axis, ...]

    @classmethod
    def fit(cls, pilot: Sequence[Feature], bins: int) -> Binning:
        """Learn the bins of each numeric coordinate from pooled pilot features.

        Args:
            pilot: the feature vectors of the pilot outputs of both datasets.
            bins: the total number of numeric cells to aim for; with m numeric
                coordinates each gets about ``bins ** (1/m)`` bins (at least 2).
        """
        columns: list[list[float]] = []
        for feature in pilot:
            numeric = [v for v in feature if isinstance(v, float)]
            for j, value in enumerate(numeric):
                if j == len(columns):
                    columns.append([])
                columns[j].append(value)
        per_axis = max(2, round(bins ** (1.0 / max(len(columns), 1))))
        axes = []
        for values in columns:
            finite = np.array([v for v in values if math.isfinite(v)], dtype=np.float64)
            distinct = np.unique(finite)
            if distinct.size <= per_axis:
                axes.append(_Axis(frozenset(float(v) for v in distinct), ()))
                continue
            cuts = np.quantile(finite, np.linspace(0.0, 1.0, per_axis + 1)[1:-1])
            axes.append(_Axis(None, tuple(float(c) for c in np.unique(cuts))))
        return cls(tuple(axes))

    def cell(self, feature: Feature) -> Cell:
        """The bin of one feature vector."""
        labels = tuple(v for v in feature if not isinstance(v, float))
        numeric = [v for v in feature if isinstance(v, float)]
        keys = tuple(
            self.axes[j].key(v) if j < len(self.axes) else _UNSEEN for j, v in enumerate(numeric)
        )
        return labels, keys


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact one-sided binomial bounds: P(p < low) ≤ α and P(p > high) ≤ α.

    Args:
        k: successes.
        n: trials (> 0).
        alpha: the error probability of each one-sided bound.

    Returns:
        (low, high).
    """
    from scipy import stats

    low = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))
    return low, high


def majority_false_alarm(votes: int, per_vote: float) -> float:
    """P[Binomial(votes, per_vote) > votes/2]: the chance a majority flags by accident."""
    need = votes // 2 + 1
    return float(
        sum(
            math.comb(votes, k) * per_vote**k * (1.0 - per_vote) ** (votes - k)
            for k in range(need, votes + 1)
        )
    )


def vote_level(alpha: float, votes: int) -> float:
    """The per-direction level α_v so that a majority of ``votes`` false-alarms w.p. ≤ ``alpha``.

    A vote flags a correct mechanism with probability at most 2·α_v (two
    directions); α_v is the largest value (found by bisection) with
    :func:`majority_false_alarm` ``(votes, 2·α_v) ≤ alpha``.
    """
    if not 0.0 < alpha < 1.0:
        raise InvalidArgumentError("alpha must lie strictly between 0 and 1.")
    if isinstance(votes, bool) or not isinstance(votes, int) or votes < 1:
        raise InvalidArgumentError("votes must be an integer >= 1 (an odd number avoids ties).")
    low, high = 0.0, 1.0
    for _ in range(200):
        mid = (low + high) / 2
        if majority_false_alarm(votes, mid) <= alpha:
            low = mid
        else:
            high = mid
    return low / 2


@dataclass(frozen=True)
class Direction:
    """The test of P_a(S) − e^ε·P_b(S) ≤ δ on one event S, for one vote.

    Attributes:
        delta_hat: the estimate P̂_a(S) − e^ε·P̂_b(S) on the test sample (0 if S is empty).
        tolerance: how far above δ the estimate must be to flag (from the
            Clopper–Pearson bounds at the vote's level).
        cells: the number of bins in S.
        flagged: whether the lower confidence bound exceeds δ.
    """

    delta_hat: float
    tolerance: float
    cells: int
    flagged: bool


@dataclass(frozen=True)
class Vote:
    """One independent vote: both directions of the test.

    Attributes:
        forward: P1(S) − e^ε·P0(S) (the neighbour D1 against the base D0).
        backward: P0(S') − e^ε·P1(S').
        plugin: Σ_b max(0, ·) over all bins of the pooled pilot and test
            samples, the larger direction: the naive estimate, biased upwards
            by noise (shown for information; it decides nothing).
    """

    forward: Direction
    backward: Direction
    plugin: float

    @property
    def flagged(self) -> bool:
        """Whether either direction was flagged."""
        return self.forward.flagged or self.backward.flagged

    @property
    def delta_hat(self) -> float:
        """The larger of the two directions' estimates."""
        return max(self.forward.delta_hat, self.backward.delta_hat)


def _counts(cells: Sequence[Cell]) -> dict[Cell, int]:
    out: dict[Cell, int] = {}
    for cell in cells:
        out[cell] = out.get(cell, 0) + 1
    return out


def _score(k_a: int, k_b: int, n_a: int, n_b: int, factor: float, delta: float) -> float:
    """The pilot z-score of an event: (P̂_a − e^ε·P̂_b − δ) over its standard error."""
    p_a, p_b = k_a / n_a, k_b / n_b
    excess = p_a - factor * p_b - delta
    if excess <= 0:
        return 0.0
    # +1 pseudo-count in the variance: an event seen a handful of times is not trusted.
    var = (p_a * (1 - p_a) + 1 / n_a) / n_a + factor * factor * (p_b * (1 - p_b) + 1 / n_b) / n_b
    return excess / math.sqrt(var)


def _ordered_axis(cells: Sequence[Cell]) -> list[Cell] | None:
    """The cells in value order when every output is one number (no labels), else None."""
    keys = []
    for labels, coords in cells:
        if labels or len(coords) != 1 or not isinstance(coords[0], (int, float)):
            return None
        keys.append((coords[0], (labels, coords)))
    return [cell for _, cell in sorted(set(keys))]


def _event(
    pilot_a: Sequence[Cell],
    pilot_b: Sequence[Cell],
    factor: float,
    delta: float,
) -> set[Cell]:
    """The candidate event with the best pilot z-score (empty when none shows an excess).

    Candidates: the unions of the k bins with the largest pilot ratio c_a/c_b
    (the Neyman–Pearson order), and, when outputs are single numbers, the
    tails {v ≤ t} and {v ≥ t} at every pilot bin boundary (monotone likelihood
    ratios, as for additive noise).  Only pilot draws are used, so the event
    is independent of the test draws.
    """
    count_a, count_b = _counts(pilot_a), _counts(pilot_b)
    n_a, n_b = len(pilot_a), len(pilot_b)
    candidates: list[list[Cell]] = []
    by_ratio = sorted(count_a, key=lambda c: (count_a[c] + 0.5) / (count_b.get(c, 0) + 0.5))
    candidates.append(by_ratio[::-1])
    ordered = _ordered_axis([*count_a, *count_b])
    if ordered is not None:
        candidates += [ordered, ordered[::-1]]
    best: set[Cell] = set()
    best_score = 0.0
    for order in candidates:
        k_a = k_b = 0
        for i, cell in enumerate(order):
            k_a += count_a.get(cell, 0)
            k_b += count_b.get(cell, 0)
            score = _score(k_a, k_b, n_a, n_b, factor, delta)
            if score > best_score:
                best_score, best = score, set(order[: i + 1])
    return best


def _direction(
    event: set[Cell],
    test_a: Sequence[Cell],
    test_b: Sequence[Cell],
    factor: float,
    delta: float,
    level: float,
) -> Direction:
    if not event:
        return Direction(0.0, 0.0, 0, False)
    n_a, n_b = len(test_a), len(test_b)
    k_a = sum(1 for c in test_a if c in event)
    k_b = sum(1 for c in test_b if c in event)
    low_a, _ = clopper_pearson(k_a, n_a, level / 2)
    _, high_b = clopper_pearson(k_b, n_b, level / 2)
    estimate = k_a / n_a - factor * k_b / n_b
    certified = low_a - factor * high_b
    return Direction(estimate, estimate - certified, len(event), certified > delta)


def _plugin(cells_a: Sequence[Cell], cells_b: Sequence[Cell], factor: float) -> float:
    count_a, count_b = _counts(cells_a), _counts(cells_b)
    n_a, n_b = len(cells_a), len(cells_b)
    return sum(
        max(0.0, c / n_a - factor * count_b.get(cell, 0) / n_b) for cell, c in count_a.items()
    )


def hockey_stick_vote(
    pilot0: Sequence[Feature],
    pilot1: Sequence[Feature],
    test0: Sequence[Feature],
    test1: Sequence[Feature],
    *,
    epsilon: float,
    delta: float,
    level: float,
    bins: int = 20,
) -> Vote:
    """One vote of the hockey-stick test on four independent samples of features.

    Args:
        pilot0: pilot features from the base dataset D0 (learn bins and events).
        pilot1: pilot features from the neighbour D1.
        test0: test features from D0 (estimate).
        test1: test features from D1.
        epsilon: the claimed ε.
        delta: the claimed δ.
        level: α_v, the per-direction false-alarm probability (see :func:`vote_level`).
        bins: about how many numeric bins to use (see :meth:`Binning.fit`).

    Returns:
        The :class:`Vote`.
    """
    if not (pilot0 and pilot1 and test0 and test1):
        raise InvalidArgumentError("Every sample of a vote needs at least one output.")
    binning = Binning.fit([*pilot0, *pilot1], bins)
    p0 = [binning.cell(f) for f in pilot0]
    p1 = [binning.cell(f) for f in pilot1]
    t0 = [binning.cell(f) for f in test0]
    t1 = [binning.cell(f) for f in test1]
    factor = math.exp(epsilon)
    forward = _direction(_event(p1, p0, factor, delta), t1, t0, factor, delta, level)
    backward = _direction(_event(p0, p1, factor, delta), t0, t1, factor, delta, level)
    plugin = max(_plugin(p1 + t1, p0 + t0, factor), _plugin(p0 + t0, p1 + t1, factor))
    return Vote(forward, backward, plugin)


def as_features(outputs: Sequence[object], max_coords: int) -> list[Feature]:
    """:func:`features` of every output."""
    return [features(o, max_coords) for o in outputs]
