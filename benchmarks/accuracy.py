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

For Laplace noise E|X| equals the scale, so a ratio near 1 means no noise
beyond the mechanism's own (dpframe's discrete Laplace on a power-of-two grid
widens the scale by at most 0.1% and rounds by at most scale/2048).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp

__all__ = ["accuracy_ratios"]


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
        }
    return out
