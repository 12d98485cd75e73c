"""Accuracy: mean absolute error of repeated releases, in units of the Laplace scale.

For ``reps`` independent releases at ε = ``epsilon`` of count, clamped sum and
clamped mean on the synthetic table, the mean absolute error against the
exact (clamped) answer is divided by a reference scale:

* count: Δ/ε with Δ = 1;
* sum: Δ/ε with Δ = max(|L|, |U|) = 1e6;
* mean: (U − L)/(ε·n), the error of a Laplace sum with sensitivity U − L
  divided by the exact count n: the error of a mean with n public, no
  count noise and the whole ε on the sum (a mean that also protects n spends
  part of ε on a count; dpframe's sums around a centre, whose sensitivity is
  the larger distance from the centre to a bound).

For continuous Laplace noise E|X| equals the scale.  dpframe adds *discrete*
Laplace noise on a power-of-two grid, for which E|X| = 2a/(1 − a²) grid units
with a = exp(−1/t) (t the scale in grid units): 0.851 for a count at ε = 1,
about 1 for large t.  The column ``expected`` is therefore the model's MAE /
scale, simulated (numpy, 1,000,000 draws) from the noise each release reports
it used (``release.intervals``: noise and, for a mean, centre) and the
exact answer; the measured
ratio should agree with it within a few standard errors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

import dpframe as dp
from dpframe.mechanisms.moments.aggregates import IntervalModel

__all__ = ["accuracy_ratios", "expected_mae"]

_SIM_DRAWS = 1_000_000


def _discrete_laplace(spec: Any, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
    """Draws of a NoiseSpec's discrete Laplace noise, in value units (difference of geometrics)."""
    a = math.exp(-1.0 / float(spec.parameter))
    g1 = rng.geometric(1.0 - a, size) - 1
    g2 = rng.geometric(1.0 - a, size) - 1
    return np.asarray((g1 - g2) * spec.grid, dtype=np.float64)


def _model(release: dp.Release) -> IntervalModel:
    model = release.intervals
    if not isinstance(model, IntervalModel):
        raise TypeError("expected_mae needs an additive-noise release (count, sum, mean)")
    if any(spec.kind != "laplace" for spec in model.noise):
        raise ValueError("expected_mae models discrete Laplace noise only")
    return model


def expected_mae(
    stat: str,
    releases: Sequence[dp.Release],
    exact: float,
    n: int,
    bounds: tuple[float, float],
) -> float:
    """The MAE that the releases' own noise models predict (Monte Carlo).

    A count or sum: the exact answer rounded to the noise grid plus the
    noise of the first release (the same for all).  A mean is its centre
    plus (noisy centred sum) / (noisy count), clamped to the bounds; a mean
    that picks its centre privately has its own centre (and so its own sum
    sensitivity) per release, so each release's model (``center``, noise)
    gets an equal share of the draws.  The simulation treats the count noise
    as independent of the centre (dpframe's centre is chosen with that same
    noisy count), so for such a mean it is an approximation.
    """
    rng = np.random.default_rng(7)
    if not releases:
        raise ValueError("expected_mae needs at least one release")
    if stat in ("count", "sum"):
        noise = _model(releases[0]).noise[0]
        rounding = round(exact / noise.grid) * noise.grid - exact
        return float(np.mean(np.abs(rounding + _discrete_laplace(noise, rng, _SIM_DRAWS))))
    low, high = bounds
    size = max(_SIM_DRAWS // len(releases), 1_000)
    errors = []
    for release in releases:
        model = _model(release)
        center = (
            (low + high) / 2
            if model.center is None
            else float(np.asarray(model.center, dtype=np.float64).reshape(-1)[0])
        )
        count = n + _discrete_laplace(model.noise[0], rng, size)
        total = (exact - center) * n + _discrete_laplace(model.noise[1], rng, size)
        values = np.clip(center + total / np.maximum(count, 1.0), low, high)
        errors.append(np.abs(values - exact))
    return float(np.mean(np.concatenate(errors)))


def accuracy_ratios(
    df: pd.DataFrame,
    *,
    value: str,
    bounds: tuple[float, float],
    categories: dict[str, list[str]],
    reps: int = 200,
    epsilon: float = 1.0,
) -> dict[str, dict[str, Any]]:
    """MAE / reference scale of count, sum and mean over ``reps`` releases each.

    Each statistic gets its own session so the ledger (re-read on every
    charge) does not grow across statistics; ``epsilon_spent`` is that
    session's spent ε divided by ``reps`` (dpframe's cost of one release).
    """
    low, high = bounds
    clipped = df[value].clip(low, high)
    n = len(df)
    exact = {"count": float(n), "sum": float(clipped.sum()), "mean": float(clipped.mean())}
    reference = {
        "count": 1.0 / epsilon,
        "sum": max(abs(low), abs(high)) / epsilon,
        "mean": (high - low) / (epsilon * n),
    }
    out: dict[str, dict[str, Any]] = {}
    for stat in ("count", "sum", "mean"):
        session = dp.Session(epsilon=1e9, ledger=":memory:")
        pf = session.private_frame(df, bounds={value: bounds}, categories=categories)
        releases = []
        for _ in range(reps):
            if stat == "count":
                releases.append(pf.count(epsilon=epsilon))
            elif stat == "sum":
                releases.append(pf[value].sum(epsilon=epsilon))
            else:
                releases.append(pf[value].mean(epsilon=epsilon))
        errors = np.abs(np.array([r.value for r in releases]) - exact[stat])
        mae = float(errors.mean())
        # Standard error of the ratio, so the reader can judge "near 1".
        sem = float(errors.std(ddof=1) / np.sqrt(reps)) / reference[stat]
        out[stat] = {
            "reps": reps,
            "epsilon": epsilon,
            "mae": mae,
            "reference_scale": reference[stat],
            "ratio": mae / reference[stat],
            "ratio_sem": sem,
            "reported_scale": float(releases[0].scale),
            # dpframe's own accounting: the session's spent ε per release.
            "epsilon_spent": float(session.spent.epsilon) / reps,
            "delta_spent": float(session.spent.delta) / reps,
            "expected_ratio": expected_mae(stat, releases, exact[stat], n, bounds)
            / reference[stat],
        }
    return out
