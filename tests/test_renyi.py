"""The Rényi view: mechanism curves, the session's composed curve and its conversion."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

import dpframe as dp
from dpframe.accounting.accountants import rho_from_epsilon_delta
from dpframe.accounting.renyi import (
    DEFAULT_ORDERS,
    best_conversion,
    gaussian_rdp,
    laplace_rdp,
    pure_dp_rdp,
    session_curve,
    zcdp_rdp,
)
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.calibration.gdp_curves import mu_from_epsilon_delta


def _renyi_numeric(p: object, q: object, alpha: float, lo: float, hi: float) -> float:
    """D_α(P||Q) by quadrature of p^α q^(1−α) (test-only reference)."""

    def integrand(x: float) -> float:
        return float(np.exp(alpha * p(x) + (1 - alpha) * q(x)))  # type: ignore[operator]

    value, _ = integrate.quad(integrand, lo, hi, points=[0.0, 1.0], limit=400)
    return math.log(value) / (alpha - 1)


def test_laplace_curve_reproduces_mironov() -> None:
    # Mironov 2017, Table 2: the Laplace mechanism with λ = 1 has ε(2) = 0.619124.
    assert laplace_rdp(2, 1.0) == pytest.approx(0.619124, abs=1e-6)
    assert laplace_rdp(math.inf, 0.5) == 2.0


@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0])
@pytest.mark.parametrize("scale", [0.7, 1.0, 3.0])
def test_laplace_curve_matches_quadrature(alpha: float, scale: float) -> None:
    def logp(x: float) -> float:
        return -abs(x) / scale - math.log(2 * scale)

    def logq(x: float) -> float:
        return -abs(x - 1) / scale - math.log(2 * scale)

    reference = _renyi_numeric(logp, logq, alpha, -60 * scale, 60 * scale)
    assert laplace_rdp(alpha, scale) == pytest.approx(reference, rel=1e-6)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0])
def test_gaussian_curve_is_alpha_over_two_sigma_squared(sigma: float) -> None:
    for alpha in (1.5, 2.0, 10.0):
        assert gaussian_rdp(alpha, sigma) == pytest.approx(alpha / (2 * sigma**2), rel=1e-15)

        def logp(x: float, s: float = sigma) -> float:
            return -(x**2) / (2 * s**2)

        def logq(x: float, s: float = sigma) -> float:
            return -((x - 1) ** 2) / (2 * s**2)

        norm = math.log(sigma * math.sqrt(2 * math.pi))
        reference = _renyi_numeric(
            lambda x, f=logp, c=norm: f(x) - c,
            lambda x, f=logq, c=norm: f(x) - c,
            alpha,
            -40 * sigma - 20,
            40 * sigma + 20,
        )
        assert gaussian_rdp(alpha, sigma) == pytest.approx(reference, rel=1e-6)


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 3.0])
def test_pure_dp_curve_is_randomized_response_and_below_the_classical_bounds(
    epsilon: float,
) -> None:
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))
    for alpha in (1.25, 2.0, 8.0, 100.0):
        value = pure_dp_rdp(alpha, epsilon)
        # Rényi divergence of binary randomized response, computed directly.
        direct = math.log(
            keep**alpha * (1 - keep) ** (1 - alpha) + (1 - keep) ** alpha * keep ** (1 - alpha)
        ) / (alpha - 1)
        assert value == pytest.approx(min(direct, epsilon), rel=1e-9)
        assert value <= min(epsilon, alpha * epsilon**2 / 2) * (1 + 1e-12)
        # Laplace with scale 1/ε is ε-DP, so its curve lies below the bound for all ε-DP.
        assert laplace_rdp(alpha, 1 / epsilon) <= value * (1 + 1e-9)


def test_best_conversion_minimises_over_the_grid() -> None:
    orders = list(DEFAULT_ORDERS)
    rho = 0.05
    eps, alpha = best_conversion(orders, [zcdp_rdp(a, rho) for a in orders], 1e-6)
    candidates = [a * rho + math.log(1e6) / (a - 1) for a in orders]
    assert eps == pytest.approx(min(candidates))
    assert alpha == orders[int(np.argmin(candidates))]
    # The continuous optimum is ρ + 2·sqrt(ρ·log(1/δ)); the grid can only be above it.
    assert eps >= rho + 2 * math.sqrt(rho * math.log(1e6)) - 1e-12
    assert eps <= (rho + 2 * math.sqrt(rho * math.log(1e6))) * 1.05


@pytest.mark.parametrize("bad", [1.0, 0.5, float("nan"), -2])
def test_bad_orders_raise(bad: float) -> None:
    with pytest.raises(dp.InvalidArgumentError, match="A Rényi order alpha must be > 1"):
        gaussian_rdp(bad, 1.0)


def test_bad_conversion_delta_raises() -> None:
    with pytest.raises(dp.InvalidBudgetError, match=r"needs 0 < delta < 1, got 0\.0"):
        best_conversion([2.0], [0.1], 0.0)


def _ledger(rows: list[tuple[str, float, float, float]]) -> pd.DataFrame:
    table: pd.DataFrame = pd.DataFrame(rows, columns=["mechanism", "epsilon", "delta", "rho"])
    return table


def test_session_curve_per_accounting() -> None:
    orders = (2.0, 8.0)
    pure = session_curve("pure", _ledger([("discrete Laplace", 0.5, 0, 0)] * 3), orders)
    assert pure.epsilons == pytest.approx([3 * pure_dp_rdp(a, 0.5) for a in orders])
    zcdp = session_curve(
        "zcdp", _ledger([("discrete Gaussian", 0.1, 0, 0.01), ("x", 0.1, 1e-8, 0.02)]), orders
    )
    assert zcdp.epsilons == pytest.approx([a * 0.03 for a in orders])
    assert zcdp.mechanism_delta == pytest.approx(1e-8)
    approx = session_curve(
        "approx",
        _ledger([("discrete Gaussian", 0.5, 1e-6, 0), ("partition selection", 0.2, 1e-7, 0)]),
        orders,
    )
    # An approx Gaussian row is μ-GDP (analytic calibration), so (μ²/2)-zCDP: more than the
    # zCDP conversion's ρ, which older rows used (the larger covers both).
    older = float(rho_from_epsilon_delta(dp.Budget(0.5).epsilon, dp.Budget(0, 1e-6).delta))
    mu = float(mu_from_epsilon_delta(dp.Budget(0.5).epsilon, dp.Budget(0, 1e-6).delta))
    rho = mu * mu / 2
    assert rho > older
    expected = [a * rho + pure_dp_rdp(a, 0.2) for a in orders]
    assert approx.epsilons == pytest.approx(expected)
    assert approx.mechanism_delta == pytest.approx(1e-7)


def test_session_renyi_view(tmp_path: Path, cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=2.0, ledger=tmp_path / "l.sqlite")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    empty = session.renyi()
    assert empty.releases == 0 and empty.to_dp(1e-6)[0] == 0.0
    pf.count(epsilon=0.25)
    pf["wage"].mean(epsilon=0.25)
    curve = session.renyi(orders=[2, 4, 16])
    assert curve.releases == 2
    assert curve.epsilon(2) == pytest.approx(2 * pure_dp_rdp(2, 0.25))
    eps, alpha = curve.to_dp(1e-6)
    assert eps == pytest.approx(
        min(2 * pure_dp_rdp(a, 0.25) + math.log(1e6) / (a - 1) for a in (2, 4, 16))
    )
    assert alpha in (2.0, 4.0, 16.0)
    assert "2 releases" in str(curve)
    assert list(curve.to_frame().index) == [2.0, 4.0, 16.0]
    with pytest.raises(dp.InvalidArgumentError, match="alpha=3 is not on this curve's grid"):
        curve.epsilon(3)


def test_renyi_plot_runs(tmp_path: Path, cps: pd.DataFrame) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=tmp_path / "l.sqlite")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS)
    pf.count(epsilon=0.5)
    ax = session.renyi().plot(delta=1e-6)
    assert len(ax.lines) == 2


def test_meter_renyi_view_is_live(tmp_path: Path, cps: pd.DataFrame) -> None:
    from dpframe.jupyter.meter import BudgetMeter

    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=tmp_path / "l.sqlite")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS)
    meter = BudgetMeter(session)
    view = meter.renyi_view
    assert "<svg" in view.value and "0 releases" in view.value
    pf.count(epsilon=0.2)
    assert "1 releases" in view.value
    eps, alpha = session.renyi().to_dp(1e-6)
    assert f"ε={eps:.4g} at α={alpha:g}" in view.value
    assert f"ε={eps:.4g}" in meter.renyi_text()
    # The budget view is unchanged by the second view.
    assert meter.widget.children[1].value == pytest.approx(meter.fraction)
    meter.close()
