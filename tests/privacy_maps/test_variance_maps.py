"""The adaptive-centre variance: every release it makes, per path, composes to the request.

``release_variance`` runs on the exact measures of one cell whose rows all
hold one value v (so the first pass puts the centre at v in every draw when
the cell is large), with a wrapper recording every call of
``release_integer_sums``: the exact values, the sensitivity, the quantum, the
share and the noise.  Then, independently of the module:

* the shares of the releases add up to the allocation (1/20 + 1/20 + 4/20 +
  14/20 adaptive, 3/60 + 19/60 × 3 fallback);
* each release's sensitivity covers the true worst change of its exact
  quantity (count: 1; midpoint sum: the largest |term|; sum around ĉ: the
  largest |term − j|; squares around ĉ: the largest |F(x)| with
  F(x) = 2^s·rint(u²/q₂) − 2j·rint(u/q) + j², evaluated with the backend's
  transform at the bounds, where it is largest), and by at most one part in
  10⁶ more (the stated slack 2^(s−1) + |j| over (2K)²);
* the exact largest privacy losses (pure DP) or Rényi divergences (zCDP) of
  the noises actually used, at those worst changes rounded to each grid, add
  up to at most ε (or ρα for every α), and with 0.1% less noise in every part
  (beyond each part's grid slack) to more.

The proof note is ``docs/proofs/adaptive_mean.md`` (section "Variance").
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
from dpframe.mechanisms.calibration.additive import NoiseSpec, release_integer_sums
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments import variance as variance_module
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, Source
from tests.privacy_maps.pins import ALPHAS, LESS, Pin, grid_shift, register, renyi_curve

BOUNDS = (0.0, 5000.0)
MID = 2500.0
# (rows, value): large near the high bound (the worst centre), large near the low bound,
# large at the midpoint, small (fallback)
CELLS = {
    "adaptive high": (2 * 10**6, 4990.0),
    "adaptive low": (10**6, 100.0),
    "adaptive mid": (10**6, 2500.0),
    "fallback": (7, 4000.0),
}


@dataclass(frozen=True)
class Call:
    """One call of ``release_integer_sums``: its inputs and the noise it used."""

    exact: np.ndarray[Any, Any]
    sensitivity: int
    quantum: float
    share: NoiseAllocation
    spec: NoiseSpec
    grid: int  # the grid in quanta the exact value was (or will be) rounded to


def _agg(unit_rows: int = 1) -> Aggregate:
    return Aggregate(Source("d", unit_rows=unit_rows), "var", Col("x"), BOUNDS, (), "q")


def _terms(value: float, quantum: float, squares_quantum: float) -> tuple[int, int]:
    """The backend's per-row terms of a value: rint(u/q) and rint(u²/q₂), u = clip(x) − c."""
    u = min(max(value, BOUNDS[0]), BOUNDS[1]) - MID
    return round(u / quantum), round(u * u / squares_quantum)


def _run(
    cell: str, allocation: NoiseAllocation, monkeypatch: pytest.MonkeyPatch, unit_rows: int = 1
) -> tuple[list[Call], Any]:
    measures, sens = measures_for(_agg(unit_rows))
    rows, value = CELLS[cell]
    term, square = _terms(value, measures[1].quantum, measures[2].quantum)
    exact = [np.array([float(rows)]), np.array([float(rows * term)]), np.array([rows * square])]
    calls: list[Call] = []

    def record(
        values: Any,
        sensitivity: int,
        q: float,
        part: NoiseAllocation,
        rng: Any,
        *args: Any,
        **kw: Any,
    ) -> Any:
        out, spec = release_integer_sums(values, sensitivity, q, part, rng, *args, **kw)
        planned = args[0] if args else kw.get("planned")
        grid = round(spec.grid / q) if planned is not None and planned[0] == 1 else 0
        calls.append(Call(np.array(values, copy=True), sensitivity, q, part, spec, grid))
        return out, spec

    monkeypatch.setattr(variance_module, "release_integer_sums", record)
    release = variance_module.release_variance(
        measures, sens, exact, BOUNDS, allocation, SecureRandom()
    )
    return calls, release


def _worst_changes(calls: list[Call], release: Any, unit_rows: int) -> list[int]:
    """The true worst change of each call's exact quantity, in its own units."""
    measures, _ = measures_for(_agg())
    q, q2 = measures[1].quantum, measures[2].quantum
    low_term, low_square = _terms(BOUNDS[0], q, q2)
    high_term, high_square = _terms(BOUNDS[1], q, q2)
    if len(calls) == 4 and calls[1].quantum == 1.0:  # fallback: count, count, sum, squares
        return [unit_rows, unit_rows, unit_rows * high_term, unit_rows * high_square]
    step = round((float(release.center[0]) - MID) / q)
    shift = round(q2 / (q * q)).bit_length() - 1
    assert 2**shift == q2 / (q * q)

    def f(term: int, square: int) -> int:
        return (square << shift) - 2 * step * term + step * step

    worst_r = max(abs(f(low_term, low_square)), abs(f(high_term, high_square)))
    worst_s = max(high_term - step, step - low_term)
    return [unit_rows, unit_rows * high_term, unit_rows * worst_s, unit_rows * worst_r]


def _grid_of(call: Call) -> int:
    """The grid (in quanta) of a call: from the noise when the caller rounded (grid > 0)."""
    return call.grid if call.grid else round(call.spec.grid / call.quantum)


def _shift(change: int, grid: int) -> int:
    """The largest move of the grid-rounded value when the exact value moves by ``change``."""
    if grid < 2**12:
        return grid_shift(change, grid)
    # Half-up rounding of an integer: ⌊Δ/g⌋, or one more when g does not divide Δ.
    return change // grid + (1 if change % grid else 0)


def _parts(cell: str, kind: str, monkeypatch: pytest.MonkeyPatch, unit_rows: int = 1) -> Any:
    whole = Fraction(1) if kind == "laplace" else Fraction(1, 2)
    calls, release = _run(cell, NoiseAllocation(kind, whole), monkeypatch, unit_rows)  # type: ignore[arg-type]
    changes = _worst_changes(calls, release, unit_rows)
    assert sum(call.share.parameter for call in calls) == whole
    parts = []
    for call, change in zip(calls, changes, strict=True):
        assert change <= call.sensitivity <= change * (1 + Fraction(1, 10**6)) + unit_rows
        grid = _grid_of(call)
        shift = _shift(change, grid)
        units = call.sensitivity // grid + 1 if grid > 1 else call.sensitivity
        parts.append((call, shift, units))
    return whole, parts


def _laplace_pin(cell: str, monkeypatch: pytest.MonkeyPatch) -> Pin:
    epsilon, parts = _parts(cell, "laplace", monkeypatch)

    def total(less: bool) -> Fraction:
        out = Fraction(0)
        for call, shift, units in parts:
            scale = call.spec.parameter
            out += laplace_max_loss(scale * LESS * shift / units if less else scale, shift)
        return out

    name = f"var {BOUNDS}, {cell}, Laplace ε=1 ({len(parts)} releases, exact losses added)"
    at, less = total(False), total(True)
    return Pin(name, "max loss", dec(epsilon), dec(at), dec(less), note="per-part grid slack")


def _gaussian_pin(cell: str, monkeypatch: pytest.MonkeyPatch) -> Pin:
    rho, parts = _parts(cell, "gaussian", monkeypatch)

    def curve(less: bool) -> Decimal:
        worst = Decimal(0)
        for alpha in ALPHAS:
            total = Decimal(0)
            for call, shift, units in parts:
                sigma2 = call.spec.parameter
                sigma2 = sigma2 * (LESS * shift / units) ** 2 if less else sigma2
                bound = renyi_curve(sigma2, (shift,), alpha)
                total += bound.lower if less else bound.upper
            worst = max(worst, total / dec(alpha))
        return worst

    name = f"var {BOUNDS}, {cell}, Gaussian ρ=1/2 (Rényi of {len(parts)} releases added)"
    return Pin(name, "max_α D_α/α", dec(rho), curve(False), curve(True), note="per-part grid slack")


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_variance_parts_compose_to_the_request(
    cell: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = (_laplace_pin if kind == "laplace" else _gaussian_pin)(cell, monkeypatch)
    assert pin.within(), pin
    assert pin.over(), pin


def test_each_path_has_its_shares_and_centre(monkeypatch: pytest.MonkeyPatch) -> None:
    laplace = NoiseAllocation("laplace", Fraction(1))
    calls, release = _run("adaptive high", laplace, monkeypatch)
    assert [c.share.parameter for c in calls] == [Fraction(w, 20) for w in (1, 1, 4, 14)]
    assert abs(float(release.center[0]) - 4990.0) < 1.0  # the centre found by the first pass
    calls, release = _run("fallback", laplace, monkeypatch)
    assert [c.share.parameter for c in calls] == [Fraction(w, 60) for w in (3, 19, 19, 19)]
    assert release.center.tolist() == [MID]


def test_unit_rows_scale_every_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    for cell in CELLS:
        calls, release = _run(cell, NoiseAllocation("laplace", Fraction(1)), monkeypatch, 4)
        for call, change in zip(calls, _worst_changes(calls, release, 4), strict=True):
            assert change <= call.sensitivity, (cell, call)


class _Registry:
    """The pins for the report (each needs its own monkeypatch)."""

    @staticmethod
    def build(cell: str, kind: str) -> Pin:
        with pytest.MonkeyPatch.context() as mp:
            return (_laplace_pin if kind == "laplace" else _gaussian_pin)(cell, mp)


register(
    {
        f"var {cell} {kind}": partial(_Registry.build, cell, kind)
        for cell in CELLS
        for kind in ("laplace", "gaussian")
    }
)
