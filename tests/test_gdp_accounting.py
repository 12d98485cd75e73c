"""The Gaussian DP accountant (accounting="gdp") in sessions: filter, refusals, resumption, views.

The proof is docs/proofs/gdp_accounting.md; curves and the discrete Gaussian
correction are tested in tests/test_gdp_curves.py.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.accounting import Charge, GaussianDPAccountant, make_accountant
from dpframe.mechanisms.calibration.additive import release_integer_sums
from dpframe.mechanisms.calibration.gdp_curves import gdp_delta, mu_from_epsilon_delta
from dpframe.noise import SecureRandom, discrete_gaussian_pmf
from dpframe.plan.privacy import Budget, PrivacyRequest

TOTAL = Budget(1, Fraction(1, 10**6))
RESERVE = Fraction(1, 10**7)  # the default δ reserve: δ/10
GAUSSIAN_DELTA = 9e-7  # the δ left to the μ filter: δ − reserve


def _frame(session: dp.Session) -> dp.PrivateFrame:
    df = pd.DataFrame({"x": np.arange(2000) % 50, "g": ["a", "b", "c", "d"] * 500})
    return session.private_frame(df, bounds={"x": (0, 50)}, categories={"g": ["a", "b", "c", "d"]})


def _gdp(ledger: str | Path = ":memory:", **kwargs: object) -> dp.Session:
    return dp.Session(epsilon=1, delta=1e-6, ledger=ledger, accounting="gdp", **kwargs)  # type: ignore[arg-type]


# -- the accountant's arithmetic ----------------------------------------------------------


def test_session_mu_and_shares() -> None:
    acc = GaussianDPAccountant(TOTAL)
    assert make_accountant(TOTAL, "gdp").kind == "gdp"
    assert acc.delta_reserve == RESERVE
    assert acc.mu_total == pytest.approx(0.2355015, rel=1e-6)  # μ of (1, 9e-7)
    assert GaussianDPAccountant(TOTAL, Fraction(0)).mu_total == pytest.approx(0.2367044, rel=1e-6)
    charge, allocation = acc.allocate(PrivacyRequest(epsilon=Fraction(1, 4)))
    assert charge.rho == acc.rho_total / 4  # a quarter of μ² (shares mean μ²)
    assert allocation.currency == "gdp" and allocation.kind == "gaussian"
    assert acc.cost(PrivacyRequest(epsilon=Fraction(1, 4)), charge) == Budget(Fraction(1, 4))


def test_filter_is_tight_at_the_total() -> None:
    acc = GaussianDPAccountant(TOTAL)
    full, _ = acc.allocate(PrivacyRequest(epsilon=1))
    assert acc.admits(Charge(), full)
    assert not acc.admits(Charge(), full + Charge(rho=Fraction(1, 2**70)))
    assert acc.spent(full).epsilon <= 1
    assert float(acc.spent(full).epsilon) == pytest.approx(1.0, rel=1e-8)
    # A total μ only 1% above the session's μ breaks the (ε, δ − reserve) of the μ part.
    assert gdp_delta(1.0, acc.mu_total) <= GAUSSIAN_DELTA
    assert gdp_delta(1.0, acc.mu_total * 1.01) > GAUSSIAN_DELTA


shares = st.lists(st.fractions(min_value=Fraction(1, 10**4), max_value=1), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(shares)
def test_filter_never_exceeds_the_total(asks: list[Fraction]) -> None:
    """Admitting greedily, the admitted μ² never exceeds μ_total² and the spend stays in (ε, δ)."""
    acc = make_accountant(TOTAL, "gdp")
    spent = Charge()
    for ask in asks:
        charge, _ = acc.allocate(PrivacyRequest(epsilon=ask))
        if acc.admits(spent, charge):
            spent = spent + charge
    assert spent.rho <= acc.rho_total  # type: ignore[attr-defined]
    if spent.rho:
        assert gdp_delta(1.0, math.sqrt(2 * float(spent.rho))) <= GAUSSIAN_DELTA * (1 + 1e-9)
        assert acc.spent(spent).epsilon <= 1


@settings(max_examples=80, deadline=None)
@given(shares, st.randoms(use_true_random=False))
def test_filter_is_order_independent_and_monotone(asks: list[Fraction], rnd: object) -> None:
    """Whether a set of charges fits depends only on its sum; any subset of a fit fits."""
    acc = make_accountant(TOTAL, "gdp")
    charges = [acc.allocate(PrivacyRequest(epsilon=a))[0] for a in asks]
    total = sum(charges, Charge())
    shuffled = list(charges)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    fits = acc.admits(Charge(), total)
    assert acc.admits(Charge(), sum(shuffled, Charge())) == fits
    running = Charge()
    for c in shuffled[:-1]:
        running = running + c
    assert acc.admits(running, shuffled[-1]) == fits  # sequential = all at once
    if fits:
        for c in charges:
            assert acc.admits(Charge(), c)
    assert acc.remaining(total).epsilon >= 0


# -- sessions -------------------------------------------------------------------------------


def test_one_count_gets_the_analytic_sigma() -> None:
    """σ = 4.2561 at (1, 1e-6) with the default reserve δ/10 (the analytic σ of (1, 9e-7)
    plus the discrete correction); 4.2345 without a reserve (analytic 4.2247); zcdp: 5.35."""
    r = _frame(_gdp()).count(epsilon=1)
    assert r.scale == pytest.approx(4.2561, rel=1e-4)
    assert r.scale == pytest.approx(4.22, rel=0.01)
    default = _frame(dp.Session(epsilon=1, delta=1e-6, ledger=":memory:")).count(epsilon=1)
    assert default.scale == r.scale  # gdp is the default
    no_reserve = _frame(_gdp(delta_reserve=0)).count(epsilon=1)
    assert no_reserve.scale == pytest.approx(4.2345, rel=1e-4)
    zcdp = _frame(dp.Session(epsilon=1, delta=1e-6, ledger=":memory:", accounting="zcdp"))
    assert zcdp.count(epsilon=1).scale == pytest.approx(5.35, rel=1e-3)


@pytest.mark.fresh_releases
def test_hundred_counts_share_the_session() -> None:
    session = _gdp()
    pf = _frame(session)
    scales = [pf.count(epsilon=0.01).scale for _ in range(100)]
    assert scales[0] == pytest.approx(42.2, rel=0.02)
    assert scales[0] == pytest.approx(42.4636, rel=1e-4)
    assert len(set(scales)) == 1
    assert session.remaining.epsilon == 0
    assert float(session.spent.epsilon) == pytest.approx(1.0, rel=1e-8)
    assert session.spent.delta == Fraction(9, 10**7)  # the reserve was not used


def test_budget_exceeded_charges_nothing() -> None:
    session = _gdp()
    pf = _frame(session)
    pf.count(epsilon=0.7)
    before_rows, before = len(session.ledger), session.remaining
    with pytest.raises(dp.BudgetExceededError, match=r"Requested:  ε=0\.4"):
        pf.count(epsilon=0.4)
    assert len(session.ledger) == before_rows
    assert session.remaining == before
    assert pf.count(epsilon=0.3).scale > 0  # exactly the rest still fits


def test_releases_with_their_own_delta_are_refused_without_a_reserve() -> None:
    session = _gdp(delta_reserve=0)
    assert session.delta_reserve == 0
    df = pd.DataFrame({"k": ["a", "b"] * 50})
    pf = session.private_frame(df)
    with pytest.raises(dp.InvalidBudgetError, match=r"delta of its own.*delta_reserve="):
        pf.discover_keys("k", epsilon=0.5, delta=1e-7)
    with pytest.raises(dp.InvalidBudgetError, match="no delta of its own in a Gaussian DP"):
        _frame(session).count(epsilon=0.5, delta=1e-7)
    with pytest.raises(dp.InvalidBudgetError, match="rho= is only accepted in a zCDP session"):
        _frame(session).count(rho=0.01)
    assert len(session.ledger) == 0
    assert session.spent == Budget(0)


def test_key_discovery_spends_the_reserve() -> None:
    """Discovery is charged its share of μ² (its ε-DP part, μ(ε)) and its δ from the reserve."""
    from dpframe.mechanisms.calibration.gdp_curves import mu_of_epsilon
    from dpframe.mechanisms.core.allocation import pure_epsilon

    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:")  # gdp by default
    assert session.accounting == "gdp" and session.delta_reserve == RESERVE
    df = pd.DataFrame({"k": ["a"] * 3000 + ["b"] * 2000 + ["rare"]})
    pf = session.private_frame(df)
    keys = pf.discover_keys("k", epsilon=0.5, delta=Fraction(6, 10**8))
    assert set(keys) <= {"a", "b", "rare"} and {"a", "b"} <= set(keys)
    row = session.ledger.iloc[0]
    rho_total = session._accountant.rho_total  # type: ignore[attr-defined]
    assert row["delta"] == pytest.approx(6e-8, rel=1e-12)
    assert row["rho"] == pytest.approx(float(rho_total / 2), rel=1e-12)
    # Its ε-DP part: the largest ε with μ(ε) ≤ μ_q (tight to 0.1%).
    acc = session._accountant
    _, allocation = acc.allocate(
        PrivacyRequest(epsilon=Fraction(1, 2), delta=Fraction(6, 10**8)), mechanism_delta=True
    )
    eps = pure_epsilon(allocation, Fraction(1, 2))
    mu_q = math.sqrt(float(rho_total))
    assert float(mu_of_epsilon(eps)) <= mu_q < float(mu_of_epsilon(eps * Fraction(1001, 1000)))
    assert session.remaining == Budget(Fraction(1, 2), Fraction(94, 10**8))
    assert session._accountant.reserve_left(session._charges()) == Fraction(4, 10**8)  # type: ignore[attr-defined]
    spent = session.spent
    assert spent.delta == Fraction(9, 10**7) + Fraction(6, 10**8)
    mu = math.sqrt(2 * float(session._charges().rho))
    assert gdp_delta(float(spent.epsilon), mu) <= GAUSSIAN_DELTA * (1 + 1e-9)
    # More δ than the reserve has left: refused before any charge, saying why.
    with pytest.raises(dp.BudgetExceededError, match=r"reserve for such releases has 4e-08 left"):
        pf.discover_keys("k", epsilon=0.1, delta=Fraction(5, 10**8))
    assert len(session.ledger) == 1
    pf.discover_keys("k", epsilon=0.1, delta=Fraction(4, 10**8))  # exactly the rest fits
    assert session._charges().delta == RESERVE
    with pytest.raises(dp.InvalidBudgetError, match=r"needs a delta of its own.*reserve"):
        pf.discover_keys("k", epsilon=0.1)
    assert len(session.ledger) == 2


def test_copy_with_delta_in_a_gdp_session() -> None:
    session = _gdp()
    df = pd.DataFrame({"c": ["x", "y"] * 500})
    pf = session.private_frame(df, categories={"c": ["x", "y"]})
    copy = pf["c"].randomized_response(epsilon=0.5, delta=1e-8)
    assert len(copy) > 0
    assert session.ledger.iloc[0]["delta"] == pytest.approx(1e-8, rel=1e-12)
    assert session.remaining.epsilon == Fraction(1, 2)


def test_delta_reserve_is_checked_before_the_ledger() -> None:
    with pytest.raises(dp.InvalidBudgetError, match="delta_reserve must be at least 0 and below"):
        _gdp(delta_reserve=1e-6)
    with pytest.raises(dp.InvalidBudgetError, match="delta_reserve must be at least 0 and below"):
        _gdp(delta_reserve=-1e-9)
    with pytest.raises(dp.InvalidBudgetError, match="delta_reserve= applies to Gaussian DP"):
        dp.Session(epsilon=1, delta=1e-6, ledger=":memory:", accounting="zcdp", delta_reserve=0)
    with pytest.raises(dp.InvalidBudgetError, match="delta_reserve= applies to Gaussian DP"):
        dp.Session(epsilon=1, ledger=":memory:", delta_reserve=0)  # delta=0: pure
    assert (
        dp.Session(epsilon=1, delta=1e-6, ledger=":memory:", accounting="zcdp").delta_reserve
        is None
    )
    assert _gdp(delta_reserve=Fraction(1, 10**9)).delta_reserve == Fraction(1, 10**9)


def test_resumed_session_keeps_its_reserve(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    first = _gdp(path, name="study", delta_reserve=2e-7)
    _frame(first).count(epsilon=0.25)
    resumed = dp.Session(epsilon=1, delta=1e-6, ledger=path, name="study")
    assert resumed.delta_reserve == Fraction(2, 10**7)
    assert resumed._accountant.rho_total == first._accountant.rho_total  # type: ignore[attr-defined]
    assert resumed.remaining.epsilon == Fraction(3, 4)
    assert dp.Session(epsilon=1, delta=1e-6, ledger=path, name="study", delta_reserve=2e-7)
    with pytest.raises(dp.LedgerError, match="delta reserve of 2e-07"):
        dp.Session(epsilon=1, delta=1e-6, ledger=path, name="study", delta_reserve=1e-7)
    with pytest.raises(dp.LedgerError, match="delta reserve of 2e-07"):
        dp.Session(epsilon=1, delta=1e-6, ledger=path, name="study", delta_reserve=0)
    import sqlite3

    conn = sqlite3.connect(path)
    recorded = conn.execute("SELECT delta_reserve FROM budgets WHERE session='study'").fetchone()
    conn.close()
    assert Fraction(recorded[0]) == Fraction(2, 10**7)


def test_regressions_and_kde_in_a_gdp_session() -> None:
    """analysis='rdp' and kde run (vector discrete Gaussians); 'iteration' needs a δ."""
    session = _gdp()
    rng = np.random.default_rng(0)  # the data only, not noise
    df = pd.DataFrame({"x": rng.uniform(0, 1, 500), "y": rng.uniform(0, 1, 500)})
    pf = session.private_frame(df, bounds={"x": (0, 1), "y": (0, 1)})
    with pytest.raises(dp.InvalidBudgetError, match=r"delta of its own.*analysis='iteration'"):
        pf.linear_regression(["x"], "y", epsilon=0.3, analysis="iteration", progress=False)
    assert len(session.ledger) == 0
    model = pf.linear_regression(["x"], "y", epsilon=0.3, progress=False)
    assert np.isfinite(model.coef_).all()
    curve = pf["x"].kde(0.1, epsilon=0.5)
    assert len(curve) > 0
    assert len(session.ledger) == 2
    assert session.remaining.epsilon == Fraction(1, 5)


def test_iteration_regression_spends_the_reserve() -> None:
    """A Rényi-only regression is an (ε_i, δ_i)-DP release: μ(ε_i) ≤ its μ, δ_i from the reserve.

    Its ρ is the largest whose zCDP conversion at δ_i is within ε_i (tight: 0.1% more
    ρ exceeds ε_i), and ε_i the largest with μ(ε_i) ≤ μ (0.1% more exceeds μ).
    """
    from dpframe.accounting.gdp import _renyi_rho
    from dpframe.mechanisms.calibration.gdp_curves import epsilon_of_mu, mu_of_epsilon
    from dpframe.mechanisms.core.allocation import zcdp_epsilon

    session = _gdp()
    rng = np.random.default_rng(1)  # the data only, not noise
    df = pd.DataFrame({"x": rng.uniform(0, 1, 2000), "y": rng.uniform(0, 1, 2000)})
    pf = session.private_frame(df, bounds={"x": (0, 1), "y": (0, 1)})
    model = pf.linear_regression(
        ["x"], "y", epsilon=0.3, delta=1e-8, analysis="iteration", progress=False
    )
    assert model.accounting == "iteration" and np.isfinite(model.coef_).all()
    row = session.ledger.iloc[0]
    assert row["delta"] == pytest.approx(1e-8, rel=1e-12)
    assert session._charges().delta == Fraction(1, 10**8)
    rho = session._accountant.rho_total * Fraction(3, 10)  # type: ignore[attr-defined]
    renyi = _renyi_rho(rho, Fraction(1, 10**8))
    mu = math.sqrt(2 * float(rho))
    eps = epsilon_of_mu(Fraction(mu))
    assert float(mu_of_epsilon(eps)) <= mu < float(mu_of_epsilon(eps * Fraction(1001, 1000)))
    assert zcdp_epsilon(float(renyi), 1e-8) <= float(eps)
    assert zcdp_epsilon(float(renyi) * 1.001, 1e-8) > float(eps)
    none = _gdp(delta_reserve=0)
    with pytest.raises(dp.InvalidBudgetError, match=r"delta_reserve=0"):
        none.private_frame(df, bounds={"x": (0, 1), "y": (0, 1)}).linear_regression(
            ["x"], "y", epsilon=0.3, delta=1e-8, analysis="iteration", progress=False
        )
    assert len(none.ledger) == 0


def test_gradient_steps_are_each_within_their_mu() -> None:
    """Each of T steps gets ρ′ = discrete_gaussian_rho(ρ_model/T): ‖v‖·K(σ)/σ ≤ sqrt(2ρ_model/T)."""
    from dpframe.mechanisms.calibration.gaussian_vector import vector_noise
    from dpframe.mechanisms.calibration.gdp_curves import discrete_gaussian_slack
    from dpframe.mechanisms.models.model_family import _split_steps_gdp

    acc = GaussianDPAccountant(TOTAL)
    _, allocation = acc.allocate(PrivacyRequest(epsilon=Fraction(1, 2)))
    steps = 50
    count, rho_model = _split_steps_gdp(allocation, steps)
    assert count.parameter == allocation.parameter / 10
    spec = vector_noise(2.0, 3, rho_model / steps)
    sigma = math.sqrt(float(spec.sigma2_units))
    mu_step = spec.sensitivity_units * discrete_gaussian_slack(sigma) / sigma
    budget = math.sqrt(2 * float(allocation.parameter) * 9 / 10 / steps)
    assert mu_step <= budget
    assert mu_step > budget * 0.999  # tight: the correction is all it gives away


def test_selections_get_the_gdp_epsilon() -> None:
    session = _gdp()
    pf = _frame(session)
    pf.groupby("g")["x"].count(epsilon=0.5)
    median = pf["x"].median(epsilon=0.5)
    assert "exponential" in median.mechanism or "permute" in median.mechanism
    assert session.remaining.epsilon == 0


def test_resumed_session_keeps_its_accounting(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    first = _gdp(path, name="study")
    _frame(first).count(epsilon=0.25)
    resumed = dp.Session(epsilon=1, delta=1e-6, ledger=path, name="study")  # no accounting=
    assert resumed.accounting == "gdp"
    assert resumed.remaining.epsilon == Fraction(3, 4)
    fresh = dp.Session(epsilon=1, delta=1e-6, ledger=path, name="fresh")  # a new one: the default
    assert fresh.accounting == "gdp"
    old = dp.Session(epsilon=1, delta=1e-6, ledger=path, name="old", accounting="zcdp")
    assert old.accounting == "zcdp"
    _frame(old).count(epsilon=0.5)
    again = dp.Session(epsilon=1, delta=1e-6, ledger=path, name="old")
    assert again.accounting == "zcdp"
    assert again.ledger["rho"].iloc[0] == pytest.approx(0.5 * float(again._accountant.rho_total))  # type: ignore[attr-defined]
    with pytest.raises(dp.LedgerError, match="with gdp accounting"):
        dp.Session(epsilon=1, delta=1e-6, ledger=path, name="study", accounting="zcdp")


def test_views_of_a_gdp_session() -> None:
    session = _gdp()
    pf = _frame(session)
    pf.count(epsilon=0.25)
    explained = session.explain(lambda: pf.count(epsilon=0.1))
    assert "ρ=" not in str(explained)  # a gdp charge is not shown as a zCDP ρ
    assert "ε=0.1" in str(explained)
    assert "gdp accounting" in repr(session)
    summary = session.composition()
    assert summary.used == "GDP"
    gdp_row = summary.to_frame().loc["GDP"]
    assert gdp_row["used"]
    assert gdp_row["epsilon"] == pytest.approx(float(session.spent.epsilon), rel=1e-6)
    assert summary.to_frame().loc["zCDP", "epsilon"] > gdp_row["epsilon"]
    assert set(session.ledger["currency"]) == {"gdp"}


def test_meter_shows_the_gdp_guarantee() -> None:
    from dpframe.jupyter.meter import BudgetMeter

    session = _gdp()
    meter = BudgetMeter(session)
    _frame(session).count(epsilon=0.5)
    assert "gdp accounting" in meter.text()
    assert meter.guarantee_text().startswith("Guarantee so far: (ε=0.69, δ=9e-07)-DP")
    assert meter.fraction == pytest.approx(0.5)
    assert meter.remaining.epsilon == Fraction(1, 2)


# -- the noise actually carries the stated σ ----------------------------------------------


def test_gdp_count_noise_has_the_stated_sigma() -> None:
    """20,000 draws of a gdp count's noise: the mean square is within [0.8, 1.2]·σ².

    With X the discrete Gaussian actually used (E X² = v ≤ σ², computed from the
    pmf), the upper tail is bounded by the χ² Chernoff bound (X is sub-Gaussian
    with proxy σ², Canonne, Kamath, Steinke 2020, so E e^{tX²} ≤ (1 − 2tσ²)^(−1/2)):
    P(mean > 1.2σ²) ≤ exp(−n(0.2 − ln 1.2)/2) = e^(−177); the lower tail by
    Maurer's inequality for non-negative variables: P(mean < v − b) ≤
    exp(−n b²/(2 E X⁴)) with b = v − 0.8σ² ≥ 0.19σ², E X⁴ ≤ 3.01σ⁴: e^(−119).
    False failure below 1e-50. A noise scale 30% off (0.7σ or 1.3σ) has
    E X² = 0.49σ² or 1.69σ²: rejected except with probability below 1e-50 by
    the same bounds.
    """
    acc = make_accountant(TOTAL, "gdp")
    _, allocation = acc.allocate(PrivacyRequest(epsilon=1))
    n = 20_000
    noisy, spec = release_integer_sums(np.zeros(n), 1, 1.0, allocation, SecureRandom())
    sigma2 = float(spec.parameter)
    assert math.sqrt(sigma2) == pytest.approx(4.2561, rel=1e-4)
    k = np.arange(-200, 201)
    pmf = discrete_gaussian_pmf(sigma2, k)
    v, m4 = float((pmf * k**2).sum()), float((pmf * k**4).sum())
    assert 0.99 * sigma2 <= v <= sigma2 and m4 <= 3.01 * sigma2**2
    mean_square = float(np.mean(noisy**2))
    assert 0.8 * sigma2 <= mean_square <= 1.2 * sigma2


def test_mu_total_matches_the_curve() -> None:
    """μ_total is the curve's μ at (ε, δ − reserve)."""
    mu = mu_from_epsilon_delta(Fraction(1), Fraction(9, 10**7))
    assert make_accountant(TOTAL, "gdp").rho_total == mu * mu / 2  # type: ignore[attr-defined]
    mu = mu_from_epsilon_delta(Fraction(1), Fraction(1, 10**6))
    assert make_accountant(TOTAL, "gdp", Fraction(0)).rho_total == mu * mu / 2  # type: ignore[attr-defined]


# -- the approx accountant ---------------------------------------------------------------


def test_approx_gaussian_is_the_analytic_gaussian_corrected() -> None:
    """approx: one count at (1, 1e-6) gets σ = 4.2345 (zCDP conversion gave 5.35)."""
    session = dp.Session(epsilon=2, delta=1e-5, ledger=":memory:", accounting="approx")
    pf = _frame(session)
    r = pf.count(epsilon=1, delta=1e-6)
    assert r.scale == pytest.approx(4.2345, rel=1e-4)
    assert r.cost == Budget(1, Fraction(1, 10**6))
    assert session.spent == Budget(1, Fraction(1, 10**6))


def test_approx_regression_stays_in_zcdp() -> None:
    """A regression by amplification by iteration (Rényi only) in an approx session spends
    the zCDP ρ of its (ε, δ) in all its parts (so the whole is ρ-zCDP)."""
    from dpframe.accounting import rho_from_epsilon_delta
    from dpframe.mechanisms.models.model_family import _split_rdp

    acc = make_accountant(Budget(2, Fraction(1, 10**5)), "approx")
    _, allocation = acc.allocate(PrivacyRequest(epsilon=1, delta=Fraction(1, 10**6)))
    count, model = _split_rdp(allocation, "linear_regression()")
    rho = rho_from_epsilon_delta(Fraction(1), Fraction(1, 10**6))
    assert count.currency == "zcdp"
    assert count.parameter + model == rho


@pytest.mark.parametrize(
    ("rho", "sensitivity"), [(Fraction(10**7), 5000), (Fraction(50), 40), (Fraction(1, 50), 1)]
)
def test_noise_is_calibrated_at_its_own_sensitivity(rho: Fraction, sensitivity: int) -> None:
    """σ in grid units keeps Δ_u·K(σ)/σ ≤ μ (Lemmas B–D), and 1% less noise would exceed μ.

    At large μ a wide sensitivity needs only the correction K(σ) at its own σ (σ ≥ Δ_u/u
    is far above 1/u): a sum of Δ = 5000 at ρ = 10⁷ gets σ = 1.155 grid units, 3.3% above
    Δ/μ = 1.118 (K ≈ 1 + 1/(24σ²)), where the Δ = 1 correction K(1/u) gave σ = 578.
    """
    from dpframe.mechanisms.calibration.additive import noise_for
    from dpframe.mechanisms.calibration.gdp_curves import discrete_gaussian_mu
    from dpframe.mechanisms.core.allocation import NoiseAllocation

    mu = math.sqrt(2 * float(rho))
    grid, units, spec = noise_for(sensitivity, 1.0, NoiseAllocation("gaussian", rho, "gdp"))
    sigma = math.sqrt(float(spec.parameter))
    assert grid == 1 and units == sensitivity
    assert discrete_gaussian_mu(sigma, units) <= mu
    assert discrete_gaussian_mu(sigma * 0.99, units) > mu
    if sensitivity == 5000:
        assert sensitivity / mu < sigma < 1.04 * sensitivity / mu
