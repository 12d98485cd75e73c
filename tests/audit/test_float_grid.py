"""Floating point (Mironov 2012): neighbours release on one public grid, nothing in between.

For each additive release, D0 (the base frame) and D1 (plus one row at the far
bound) are released 25 times each.  Every noisy measure must be an integer
multiple of its grid; the grid must be the same on both sides (it depends on
public facts only, and for the adaptive variance on its released centre); no
other float within ±100 ulps of a released measure may lie on that grid (so
the low-order bits carry nothing); and the released value must be the fixed
post-processing of the measures.  Since the integer noise has full support,
every output reachable from D0 is then reachable from D1 and conversely: no
output value can single out one of the two inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.mechanisms.moments.aggregates import IntervalModel
from tests.audit.variants import BOUNDS, CATEGORIES, base_frame

ULPS = 100
DRAWS = 25

QUERIES: dict[str, tuple[Callable[[Any], Any], str | None]] = {
    "count": (lambda pf: pf.count(epsilon=0.7), None),
    "sum": (lambda pf: pf["x"].sum(epsilon=0.7), None),
    "mean": (lambda pf: pf["x"].mean(epsilon=0.7), None),
    "var": (lambda pf: pf["x"].var(epsilon=0.7), None),
    "std": (lambda pf: pf["x"].std(epsilon=0.7), None),
    "grouped_mean": (lambda pf: pf.groupby("g")["x"].mean(epsilon=0.7), None),
    "hist": (lambda pf: pf["x"].hist(bins=4, epsilon=0.7), None),
    "gaussian_sum": (lambda pf: pf["x"].sum(rho=0.3), "zcdp"),
    "gaussian_var": (lambda pf: pf["x"].var(rho=0.3), "zcdp"),
}


def _model(release: Any) -> IntervalModel:
    meta = release.attrs["dpframe"] if isinstance(release, pd.Series) else release
    model = meta.intervals
    assert isinstance(model, IntervalModel)
    return model


def _values(release: Any) -> np.ndarray:
    if isinstance(release, pd.Series):
        meta = release.attrs["dpframe"]  # every group's value, thin groups too (shown missing)
        return release.to_numpy(dtype=float) if meta.released is None else meta.released
    return np.array([float(release)])


def _post_process(model: IntervalModel) -> np.ndarray:
    """The released statistic from the noisy measures (mechanisms/moments/aggregates)."""
    noisy = model.noisy
    if model.statistic in ("count", "sum"):
        return noisy[0]
    assert model.bounds is not None
    low, high = model.bounds
    center = (low + high) / 2 if model.center is None else model.center
    n = np.maximum(noisy[0], 1.0)
    mean_c = noisy[1] / n
    if model.statistic == "mean":
        return np.clip(center + mean_c, low, high)
    var = np.clip(noisy[2] / n - mean_c**2, 0.0, ((high - low) / 2) ** 2)
    return var if model.statistic == "var" else np.sqrt(var)


def _nearby(value: float) -> list[float]:
    out, up, down = [], value, value
    for _ in range(ULPS):
        up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        out += [float(up), float(down)]
    return out


@pytest.mark.fresh_releases  # repeats one request to sample its noise (issue 31)
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_neighbours_release_on_one_public_grid(name: str) -> None:
    query, accounting = QUERIES[name]
    base = base_frame()
    pair = next(
        p
        for p in dp.audit.neighbours(base, bounds={"x": BOUNDS}, categories={"g": list(CATEGORIES)})
        if p.name == "high_bound"
    )
    # The grid may depend on public facts and on earlier parts of the same release
    # (the adaptive variance's squares take their grid from its noisy centre, a
    # release of its own): on both sides, one grid per released centre.
    grids: dict[tuple[float, ...] | None, set[tuple[float, ...]]] = {}
    for data in (pair.base, pair.neighbour):
        session = dp.Session(
            epsilon=1e6, delta=0.5 if accounting else 0, ledger=":memory:", accounting=accounting
        )
        pf = session.private_frame(data, bounds={"x": BOUNDS}, categories={"g": list(CATEGORIES)})
        for _ in range(DRAWS):
            release = query(pf)
            model = _model(release)
            centre = None if model.center is None else tuple(np.ravel(model.center).tolist())
            grids.setdefault(centre, set()).add(tuple(spec.grid for spec in model.noise))
            for measure, spec in zip(model.noisy, model.noise, strict=True):
                units = measure / spec.grid
                assert np.array_equal(units, np.round(units)), "a measure is off its grid"
                for value in measure.tolist():
                    off_grid = [w for w in _nearby(value) if (w / spec.grid).is_integer()]
                    assert not off_grid, "a float within 100 ulps lies on the grid"
            np.testing.assert_array_equal(_values(release), _post_process(model))
    assert all(len(found) == 1 for found in grids.values()), grids  # d0 and d1 alike
    if None in grids:
        assert len(grids) == 1  # no centre: one grid per query, from public facts only
