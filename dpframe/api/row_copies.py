"""Row-level releases of a column: sanitized copies and the kernel density estimate.

Functions bound as :class:`~dpframe.api.series.PrivateSeries` methods; each
builds one release node and runs it (one charge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from dpframe.api.node_builders import copy_node, kde_node, request_of

if TYPE_CHECKING:
    from dpframe.api.series import PrivateSeries
    from dpframe.plan.privacy import Number, Privacy

__all__ = ["kde", "laplace_copy", "randomized_response"]


def randomized_response(
    self: PrivateSeries,
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
    length_share: float = 0.05,
) -> pd.Series:
    """A sanitized copy of a categorical column by randomized response (a public Series).

    Privacy: (ε, δ)-DP for the whole copy, charged once.  Each row reports
    its category with probability 1 − m·p and each of the other m declared
    categories with p ≥ (1 − δ)/(m + e^ε_v) (ε-local DP per row); the
    copy's length is a noisy count (``length_share`` of the request) and
    its order is random, so the number of rows stays private.

    Accuracy: a report is correct with probability 1 − m·p (see
    ``copy.attrs["dpframe_copy"]``); ``dpframe.mechanisms.copy_family.estimate_frequencies``
    debiases the counts.  Source: Warner 1965; the seed texts of issue 8.
    """
    node = copy_node(self, "rr", request_of(epsilon, delta, rho, privacy), length_share)
    return self._frame._session.run(node)  # type: ignore[no-any-return]


def laplace_copy(
    self: PrivateSeries,
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
    length_share: float = 0.05,
) -> pd.Series:
    """A sanitized copy of a bounded numeric column: each value plus Laplace noise.

    Privacy: (ε, δ)-DP for the whole copy, charged once.  Values are
    clamped to the bounds [L, U] and get noise of scale
    b = (U − L)/(ε_v − ln(1 − δ)) (discrete Laplace on a fine public
    power-of-two grid); the length is a noisy count (``length_share``).

    Accuracy: unbiased for the clamped values; noise standard deviation
    about sqrt(2)·b per value.  Source: Dwork, McSherry, Nissim, Smith
    2006; the seed texts of issue 8.
    """
    node = copy_node(self, "laplace", request_of(epsilon, delta, rho, privacy), length_share)
    return self._frame._session.run(node)  # type: ignore[no-any-return]


def kde(
    self: PrivateSeries,
    bandwidth: float,
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
    grid: int | Sequence[float] = 256,
) -> pd.Series:
    """A private Gaussian kernel density estimate on a grid (Hall, Rinaldo, Wasserman 2013).

    Privacy: Gaussian-process noise whose covariance is the kernel, so
    the released curve is smooth; the RKHS sensitivity of the kernel sum
    is (2πh²)^{-1/2} per row, calibrated through zCDP (valid for all ε);
    the row count used to normalise is a noisy count.  Needs δ > 0
    (an approx or zCDP session).

    Accuracy: pointwise standard deviation in
    ``result.attrs["dpframe_kde"].std``; ``.plot()`` draws it.
    """
    node = kde_node(self, bandwidth, grid, request_of(epsilon, delta, rho, privacy))
    return self._frame._session.run(node)  # type: ignore[no-any-return]
