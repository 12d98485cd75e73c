"""Shares of released counts (``value_counts(normalize=True)``): post-processing, free.

Each share is a cell's noisy count (negative ones read as 0) over the sum of
the cells' noisy counts, as pandas divides by the non-missing total.

Privacy:
    A function of released counts only: no charge, nothing read.

Accuracy:
    With probability ≥ ``level`` every true count lies in its interval at
    level ``1 − (1 − level)/k`` (Bonferroni over the k cells) and is ≥ 0; on
    that event the true share ``x_i / Σ x_j`` lies between
    ``lo_i / (lo_i + Σ_{j≠i} hi_j)`` and ``hi_i / (hi_i + Σ_{j≠i} lo_j)``
    (the share grows with ``x_i`` and falls with every other count), so the
    intervals hold for all cells at once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import InvalidArgumentError
from dpframe.mechanisms.answers.results import GroupedRelease, grouped_series

__all__ = ["ShareIntervals", "shares"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ShareIntervals:
    """Simultaneous intervals of shares, from the counts' own intervals (see the module)."""

    counts: Any  # the counts' intervals (an IntervalModel)
    statistic: str = "share"

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """(low, high) of every share, all covered at once with probability ≥ ``level``."""
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
            raise InvalidArgumentError("level must be a number strictly between 0 and 1.")
        probe_low, _ = self.counts.interval(level)
        cells = len(probe_low)
        low, high = self.counts.interval(1 - (1 - level) / max(cells, 1))
        low, high = np.maximum(low, 0.0), np.maximum(high, 0.0)
        others_high = high.sum() - high
        others_low = low.sum() - low
        with np.errstate(invalid="ignore", divide="ignore"):
            share_low = np.where(low > 0, low / (low + others_high), 0.0)
            share_high = np.where(high > 0, high / (high + others_low), 0.0)
        return np.nan_to_num(share_low), np.where(np.isnan(share_high), 1.0, share_high)


def shares(counts: pd.Series) -> pd.Series:
    """Released counts as shares of their (noisy) total, with simultaneous intervals."""
    meta = counts.attrs["dpframe"]
    assert isinstance(meta, GroupedRelease)
    values = np.maximum(counts.to_numpy(dtype=float), 0.0)
    whole = values.sum()
    proportions = values / whole if whole > 0 else np.zeros_like(values)
    shared = dataclasses.replace(
        meta,
        query=f"shares of {meta.query}",
        intervals=ShareIntervals(meta.intervals),
        scales=np.asarray(meta.scales, dtype=float) / max(whole, 1.0),
        undeclared=None,
    )
    return grouped_series(proportions, shared, "proportion")
