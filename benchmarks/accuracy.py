"""Accuracy: mean absolute error of repeated releases, in units of the Laplace scale.

For ``reps`` independent releases at ε = ``epsilon`` of count, clamped sum and
clamped mean on the synthetic table, the mean absolute error against the
exact (clamped) answer is divided by a reference scale:

* count: Δ/ε with Δ = 1;
* sum: Δ/ε with Δ = max(|L|, |U|) = 1e6;
* mean: (U − L)/(ε·n), the error of a Laplace sum with sensitivity U − L
  divided by the exact count n (dpframe spends ε/2 on a centred sum with
  sensitivity (U − L)/2 and ε/2 on the count, so the sum's noise alone has
  this scale; the count's noise adds a little).

For continuous Laplace noise E|X| equals the scale.  dpframe adds *discrete*
Laplace noise on a power-of-two grid, for which E|X| = 2a/(1 − a²) grid units
with a = exp(−1/t) (t the scale in grid units): 0.851 for a count at ε = 1,
about 1 for large t.  The column ``expected`` is therefore the model's MAE /
scale, simulated (numpy, 1,000,000 draws) from the noise each release reports
it used (``release.intervals.noise``) and the exact answer; the measured
ratio should agree with it within a few standard errors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

import dpframe as dp
from dpframe.mechanisms.aggregates import IntervalModel

__all__ = ["accuracy_ratios", "expected_mae"]

_SIM_DRAWS = 1_000_000


def _discrete_laplace(spec: Any, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """Draws of a NoiseSpec's discrete Laplace noise, in value units (difference of geometrics)."""
    a = math.exp(-1.0 / float(spec.parameter))
    g1 = rng.geometric(1.0 - a, _SIM_DRAWS) - 1
    g2 = rng.geometric(1.0 - a, _SIM_DRAWS) - 1
    return np.asarray((g1 - g2) * spec.grid, dtype=np.float64)


def expected_mae(
    stat: str, release: dp.Release, exact: float, n: int, bounds: tuple[float, float]
) -> float:
    """The MAE that the release's own noise model predicts (Monte Carlo)."""
    rng = np.random.default_rng(7)
    model = release.intervals
    if not isinstance(model, IntervalModel):
        raise TypeError("expected_mae needs an additive-noise release (count, sum, mean)")
    noise = model.noise
    if any(spec.kind != "laplace" for spec in noise):
        raise ValueError("expected_mae models discrete Laplace noise only")
    if stat in ("count", "sum"):
        grid = noise[0].grid
        rounding = round(exact / grid) * grid - exact
        return float(np.mean(np.abs(rounding + _discrete_laplace(noise[0], rng))))
    low, high = bounds
    center = (low + high) / 2
    centred_sum = (exact - center) * n
    count = n + _discrete_laplace(noise[0], rng)
    total = centred_sum + _discrete_laplace(noise[1], rng)
    values = np.clip(center + total / np.maximum(count, 1.0), low, high)
    return float(np.mean(np.abs(values - exact)))


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
    charge) does not grow across statistics.
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
            "expected_ratio": expected_mae(stat, releases[0], exact[stat], n, bounds)
            / reference[stat],
        }
    return out
