"""A neighbour test of the DP inequality, for discrete outputs (test-only).

For every output event, P[out | D] <= e^eps * P[out | D'] + delta must hold.
We estimate both sides from samples and flag an event only when the
Clopper-Pearson lower bound of the left side exceeds e^eps times the upper
bound of the right side plus delta, each bound at confidence 1 - ALPHA/(2m)
over the m events tested (Bonferroni), so a correct mechanism is flagged with
probability below ALPHA.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

from scipy import stats

ALPHA = 1e-7


def _bounds(k: int, n: int, alpha: float) -> tuple[float, float]:
    low = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return low, high


def worst_violation(
    outputs_d: Sequence[Hashable],
    outputs_d2: Sequence[Hashable],
    epsilon: float,
    delta: float = 0.0,
) -> float:
    """The largest certified excess P_low[D] - (e^eps P_high[D'] + delta) over events, both ways.

    Events are single outputs.  A positive value is a statistically certain
    violation of (epsilon, delta)-DP.
    """
    counts = (Counter(outputs_d), Counter(outputs_d2))
    sizes = (len(outputs_d), len(outputs_d2))
    events = set(counts[0]) | set(counts[1])
    per = ALPHA / (4 * max(len(events), 1))
    worst = -math.inf
    for event in events:
        for a, b in ((0, 1), (1, 0)):
            low, _ = _bounds(counts[a][event], sizes[a], per)
            _, high = _bounds(counts[b][event], sizes[b], per)
            worst = max(worst, low - (math.exp(epsilon) * high + delta))
    return worst
