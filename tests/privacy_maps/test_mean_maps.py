"""The adaptive-centre mean: every release it makes, per cell, composes to the request.

``release_mean`` is run on exact measures of five cells chosen to take every
path (an empty and a small cell fall back to the midpoint; large cells near
each bound and at the midpoint take the adaptive path with centres far from
and at the midpoint), with a wrapper recording every call to
``release_integer_sums``: the exact values, the sensitivity, the quantum and
the share of the allocation.  Then, per cell, independently of the module:

* the shares of the releases the cell took add up to the allocation;
* each release's sensitivity covers the true worst change of its exact
  quantity for that cell (count: 1; midpoint sum: the largest |term|;
  second sum: the largest |term − j| for the centre offset j the cell got);
* the exact divergences of the noises actually used, at those worst changes
  (rounded to each release's grid), add up to at most ε (or ρα for every α),
  and with 0.1% less noise in every part (beyond each part's grid slack) to more.

The proof note is ``docs/proofs/adaptive_mean.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import pytest

from dpframe.audit.exact_divergence import dec, laplace_max_loss
from dpframe.mechanisms.calibration.additive import NoiseSpec, noise_for, release_integer_sums
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments import mean as mean_module
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from tests.privacy_maps.pins import ALPHAS, LESS, Pin, grid_shift, register, renyi_curve

BOUNDS = (0.0, 5000.0)
# (rows, value of every row): empty, small, large near the low bound, near the high bound, mid
CELLS = [(0, 0.0), (7, 4000.0), (10**6, 100.0), (2 * 10**6, 4990.0), (3 * 10**6, 2500.0)]


@dataclass(frozen=True)
class Call:
    """One call of ``release_integer_sums``: its inputs and the noise it used."""

    exact: np.ndarray[Any, Any]
    sensitivity: int
    quantum: float
    share: NoiseAllocation
    spec: NoiseSpec


def _run(
    allocation: NoiseAllocation, monkeypatch: pytest.MonkeyPatch, unit_rows: int = 1
) -> tuple[list[Call], Any, tuple[int, ...], float]:
    agg = Aggregate(
        Source("d", unit_rows=unit_rows),
        "mean",
        Col("x"),
        BOUNDS,
        (GroupKey("g", Col("g"), tuple(range(len(CELLS)))),),
        "q",
    )
    measures, sens = measures_for(agg)
    quantum = measures[1].quantum
    mid = (BOUNDS[0] + BOUNDS[1]) / 2
    counts = np.array([float(n) for n, _ in CELLS])
    sums = np.array([float(n * round((v - mid) / quantum)) for n, v in CELLS])
    calls: list[Call] = []
    original = release_integer_sums

    def record(
        exact: Any, sensitivity: int, q: float, part: NoiseAllocation, rng: Any, **options: Any
    ) -> Any:
        values, spec = original(exact, sensitivity, q, part, rng, **options)
        calls.append(Call(np.array(exact, copy=True), sensitivity, q, part, spec))
        return values, spec

    monkeypatch.setattr("dpframe.mechanisms.moments.mean.release_integer_sums", record)
    release = mean_module.release_mean(
        measures, sens, [counts, sums], BOUNDS, allocation, SecureRandom()
    )
    return calls, release, sens, quantum


def _per_cell(
    calls: list[Call], release: Any, quantum: float, unit_rows: int
) -> dict[int, list[tuple[Call, int]]]:
    """For each cell, its releases and the true worst change (in quanta) of each.

    The calls come in the module's order: the first count (every cell); on
    the fallback path a second count and the midpoint sum (the small cells,
    in order); on the adaptive path the midpoint sum (the large cells, in
    order), then the sums around the centres (one call per sensitivity
    level).  The cells' exact counts and centred sums are distinct, so each
    value is matched to its cell.
    """
    mid = (BOUNDS[0] + BOUNDS[1]) / 2
    low_term = round((BOUNDS[0] - mid) / quantum)  # the backend's rint of a clamped value
    high_term = round((BOUNDS[1] - mid) / quantum)
    largest = unit_rows * max(high_term, -low_term)
    counts = [n for n, _ in CELLS]
    sums = [n * round((v - mid) / quantum) for n, v in CELLS]
    out: dict[int, list[tuple[Call, int]]] = {i: [(calls[0], unit_rows)] for i in range(len(CELLS))}
    rest = calls[1:]
    small: list[int] = []
    if rest and rest[0].quantum == 1.0:  # the fallback path ran
        small = [counts.index(int(v)) for v in rest[0].exact]
        for cell in small:
            out[cell] += [(rest[0], unit_rows), (rest[1], largest)]
        rest = rest[2:]
    big = [i for i in range(len(CELLS)) if i not in small]
    if big:
        assert [int(v) for v in rest[0].exact] == [sums[i] for i in big]
        shifted: dict[int, list[tuple[int, int]]] = {}
        for cell in big:
            out[cell].append((rest[0], largest))
            step = round((float(release.center[cell]) - mid) / quantum)
            worst = unit_rows * max(high_term - step, step - low_term)
            shifted.setdefault(sums[cell] - step * counts[cell], []).append((cell, worst))
        for call in rest[1:]:
            for value in call.exact:
                # Several cells can share a value (n·offset is often round); the level a
                # cell is released at is its own worst change (or a rung above it).
                candidates = shifted[int(value)]
                fits = [c for c in candidates if c[1] == call.sensitivity] or [
                    c for c in candidates if c[1] <= call.sensitivity
                ]
                chosen = (fits or candidates)[0]
                candidates.remove(chosen)
                cell, worst = chosen
                out[cell].append((call, worst))
    return out


def _check_sensitivities(per_cell: dict[int, list[tuple[Call, int]]], whole: Fraction) -> None:
    for releases in per_cell.values():
        assert sum(call.share.parameter for call, _ in releases) == whole
        for call, change in releases:
            assert change <= call.sensitivity


def _laplace_total(releases: list[tuple[Call, int]], less: bool) -> Fraction:
    total = Fraction(0)
    for call, change in releases:
        grid, units, spec = noise_for(call.sensitivity, call.quantum, call.share)
        assert spec == call.spec  # the noise used is the map's
        shift = grid_shift(change, grid)
        scale = spec.parameter * LESS * shift / units if less else spec.parameter
        total += laplace_max_loss(scale, shift)
    return total


def _laplace_pin(path: str, cell: int, monkeypatch: pytest.MonkeyPatch) -> Pin:
    epsilon = Fraction(1)
    calls, release, _, quantum = _run(NoiseAllocation("laplace", epsilon), monkeypatch)
    per_cell = _per_cell(calls, release, quantum, 1)
    _check_sensitivities(per_cell, epsilon)
    releases = per_cell[cell]
    assert len(releases) == 3
    name = f"mean {BOUNDS}, {path} path, Laplace ε=1 (3 releases, exact losses added)"
    at, less = _laplace_total(releases, False), _laplace_total(releases, True)
    return Pin(name, "max loss", dec(epsilon), dec(at), dec(less), note="per-part grid slack")


def _gaussian_pin(path: str, cell: int, monkeypatch: pytest.MonkeyPatch) -> Pin:
    rho = Fraction(1, 2)
    calls, release, _, quantum = _run(NoiseAllocation("gaussian", rho), monkeypatch)
    per_cell = _per_cell(calls, release, quantum, 1)
    _check_sensitivities(per_cell, rho)
    releases = per_cell[cell]

    def curve(less: bool) -> Decimal:
        worst = Decimal(0)
        for alpha in ALPHAS:
            total = Decimal(0)
            for call, change in releases:
                grid, units, spec = noise_for(call.sensitivity, call.quantum, call.share)
                shift = grid_shift(change, grid)
                sigma2 = spec.parameter * (LESS * shift / units) ** 2 if less else spec.parameter
                bound = renyi_curve(sigma2, (shift,), alpha)
                total += bound.lower if less else bound.upper
            worst = max(worst, total / dec(alpha))
        return worst

    name = f"mean {BOUNDS}, {path} path, Gaussian ρ=1/2 (Rényi of 3 releases added)"
    return Pin(name, "max_α D_α/α", dec(rho), curve(False), curve(True), note="per-part grid slack")


# Cell 3 (values at 4990, centre far above the midpoint) is the worst adaptive cell; cell 1
# (7 rows) falls back to the midpoint.
PATHS = {"adaptive": 3, "fallback": 1}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_mean_parts_compose_to_the_request(
    path: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = _laplace_pin if kind == "laplace" else _gaussian_pin
    pin = build(path, PATHS[path], monkeypatch)
    assert pin.within(), pin
    assert pin.over(), pin


def test_every_cell_takes_one_path_and_spends_the_whole_allocation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls, release, _, quantum = _run(NoiseAllocation("laplace", Fraction(1)), monkeypatch)
    per_cell = _per_cell(calls, release, quantum, 1)
    _check_sensitivities(per_cell, Fraction(1))
    shares = {cell: sorted(c.share.parameter for c, _ in rel) for cell, rel in per_cell.items()}
    adaptive = [Fraction(1, 20), Fraction(1, 20), Fraction(18, 20)]
    fallback = [Fraction(1, 20), Fraction(9, 20), Fraction(10, 20)]
    assert shares == {0: fallback, 1: fallback, 2: adaptive, 3: adaptive, 4: adaptive}


def test_unit_rows_scale_every_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, release, _, quantum = _run(NoiseAllocation("laplace", Fraction(1)), monkeypatch, 4)
    per_cell = _per_cell(calls, release, quantum, 4)
    for releases in per_cell.values():
        for call, change in releases:
            assert change <= call.sensitivity


class _Registry:
    """The pins for the report (each needs its own monkeypatch)."""

    @staticmethod
    def build(path: str, kind: str) -> Pin:
        with pytest.MonkeyPatch.context() as mp:
            builder = _laplace_pin if kind == "laplace" else _gaussian_pin
            return builder(path, PATHS[path], mp)


register(
    {
        f"mean {path} {kind}": partial(_Registry.build, path, kind)
        for path in PATHS
        for kind in ("laplace", "gaussian")
    }
)
