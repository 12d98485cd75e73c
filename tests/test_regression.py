"""Private linear and logistic regression by noisy projected gradient descent."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.calibration.gaussian_vector import gaussian_vector
from dpframe.mechanisms.models.model_family import (
    PrivateLinearRegression,
    PrivateLogisticRegression,
)
from dpframe.mechanisms.models.regression import (
    denormalize,
    fit_composition,
    gradient_sum,
    iteration_sigma,
    loss_spec,
    normalize_features,
    normalize_target,
    smoothed_gaussian,
)
from dpframe.mechanisms.runtime.progress import ProgressBar
from dpframe.noise import SecureRandom
from tests.sessions import local
from tests.stats_helpers import ALPHA, ks_pvalue

FEATURES = ["education", "experience"]


def _frame(tmp_path: Path, cps: pd.DataFrame, **kw: object) -> dp.PrivateFrame:
    session = dp.Session(ledger=tmp_path / "l.sqlite", **kw)  # type: ignore[arg-type]
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def _ols(cps: pd.DataFrame) -> np.ndarray:
    x = np.column_stack(
        [cps["education"].clip(0, 20), cps["experience"].clip(-8, 64), np.ones(len(cps))]
    )
    solution = np.linalg.lstsq(x, cps["wage"].clip(0, 5000).to_numpy(float), rcond=None)[0]
    return np.asarray(solution, dtype=np.float64)


# -- the analysis' premises ----------------------------------------------------


def test_design_vectors_have_norm_at_most_one() -> None:
    bounds = [(0.0, 20.0), (-8.0, 64.0), (0.0, 1.0)]
    extreme = [
        np.array([-1e9, 1e9, 0.0, 20.0]),
        np.array([64.0, -8.0, 1e9, -8.0]),
        np.array([1.0, 0.0, 1.0, 1.0]),
    ]
    z = normalize_features(extreme, bounds)
    assert np.all(np.linalg.norm(z, axis=1) <= 1 + 1e-12)
    assert np.linalg.norm(z[3]) == pytest.approx(1.0)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_per_row_gradients_are_bounded_by_the_lipschitz_constant(loss: str) -> None:
    rng = np.random.default_rng(7)  # test inputs only
    spec = loss_spec(loss, 2.0)  # type: ignore[arg-type]
    for _ in range(2000):
        w = rng.normal(size=3)
        w *= spec.radius * float(rng.uniform()) ** (1 / 3) / float(np.linalg.norm(w))
        z = rng.normal(size=(1, 3))
        z /= max(float(np.linalg.norm(z)), 1.0)
        y = rng.uniform(-1, 1, 1) if loss == "squared" else rng.uniform(0, 1, 1)
        assert np.linalg.norm(gradient_sum(w, z, y, loss)) <= spec.lipschitz + 1e-12  # type: ignore[arg-type]
    # The worst case is attained for the squared loss: w and z aligned, y on the other side.
    z = np.array([[1.0, 0.0, 0.0]])
    grad = gradient_sum(np.array([2.0, 0, 0]), z, np.array([-1.0]), "squared")
    assert np.linalg.norm(grad) == pytest.approx(loss_spec("squared", 2.0).lipschitz)


def test_denormalize_gives_the_same_predictions() -> None:
    bounds = [(0.0, 20.0), (-8.0, 64.0)]
    rng = np.random.default_rng(3)
    x = [rng.uniform(0, 20, 50), rng.uniform(-8, 64, 50)]
    w = np.array([0.3, -0.2, 0.5])
    for loss, target in (("squared", (0.0, 5000.0)), ("logistic", (0.0, 1.0))):
        coef, intercept = denormalize(w, bounds, target, loss)  # type: ignore[arg-type]
        direct = normalize_features(x, bounds) @ w
        original = np.column_stack(x) @ coef + intercept
        if loss == "squared":
            direct = 2500 + 2500 * direct
        assert original == pytest.approx(direct)


def test_gaussian_vector_noise_has_the_stated_sigma() -> None:
    rng = SecureRandom()
    rho = Fraction(1, 2)
    sample = np.concatenate(
        [gaussian_vector(np.full(16, 0.25), 3.0, rho, rng)[0] - 0.25 for _ in range(1000)]
    )
    sigma = gaussian_vector(np.zeros(16), 3.0, rho, rng)[1].sigma
    assert sigma == pytest.approx(3.0 / math.sqrt(2 * 0.5), rel=2e-3)
    assert ks_pvalue(sample, stats.norm(scale=sigma).cdf) > ALPHA
    assert ks_pvalue(sample, stats.norm(scale=1.3 * sigma).cdf) < ALPHA
    assert ks_pvalue(sample, stats.norm(scale=sigma / 1.3).cdf) < ALPHA


def test_smoothed_gaussian_for_amplification_by_iteration() -> None:
    spec = loss_spec("squared", 2.0)
    sigma, grid = iteration_sigma(spec, 3, Fraction(1, 5), passes=2)
    # Two passes at ε₀ = (2L + γ·sqrt(d))²/(2σ²) each spend exactly ρ per order.
    shift = 2 * spec.lipschitz + grid * math.sqrt(3)
    assert 2 * shift**2 / (2 * sigma**2) == pytest.approx(0.2)
    assert grid * math.sqrt(3) <= 2 * spec.lipschitz * 2**-10
    sample = smoothed_gaussian(sigma, grid, 20_000, SecureRandom())
    assert ks_pvalue(sample, stats.norm(scale=sigma).cdf) > ALPHA
    assert ks_pvalue(sample, stats.norm(scale=1.3 * sigma).cdf) < ALPHA
    assert ks_pvalue(sample, stats.norm(scale=sigma / 1.3).cdf) < ALPHA


def test_noiseless_limit_is_least_squares(cps: pd.DataFrame) -> None:
    bounds = [(0.0, 20.0), (-8.0, 64.0)]
    z = normalize_features([cps[c].to_numpy(float) for c in FEATURES], bounds)
    y = normalize_target(cps["wage"].to_numpy(float), (0.0, 5000.0), "squared")
    w, _ = fit_composition(
        z, y, loss_spec("squared", 2.0), Fraction(10**9), len(y), 200, 1, SecureRandom()
    )
    coef, intercept = denormalize(w, bounds, (0.0, 5000.0), "squared")
    ols = _ols(cps)
    assert coef == pytest.approx(ols[:2], rel=0.01)
    assert intercept == pytest.approx(ols[2], rel=0.02)


# -- through the session -------------------------------------------------------


def test_linear_regression_through_the_session(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=4.0, delta=1e-6)
    model = pf.linear_regression(FEATURES, "wage", epsilon=4.0, progress=False)
    assert isinstance(model, PrivateLinearRegression)
    assert model.feature_names_in_ == ("education", "experience") and model.n_features_in_ == 2
    ols = _ols(cps)
    # At ε = 4 on 28,155 rows the slopes are within 25% of OLS (noise σ per step ≈ 1e-3 of n).
    assert model.coef_ == pytest.approx(ols[:2], rel=0.25)
    predicted = model.predict(cps)
    assert predicted.shape == (len(cps),)
    assert model.predict(cps[FEATURES].to_numpy()) == pytest.approx(predicted)
    ledger = pf.session.ledger
    assert len(ledger) == 1
    assert ledger["mechanism"].iloc[0].startswith("noisy gradient descent")
    with pytest.raises(
        dp.InvalidArgumentError, match=r"X lacks the feature columns \['experience'\]"
    ):
        model.predict(cps[["education"]])


def test_logistic_regression_through_the_session(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=4.0, delta=1e-6)
    labelled = pf.assign(pt=pf["parttime"] == "yes")
    model = labelled.logistic_regression(
        FEATURES, "pt", epsilon=4.0, radius=8.0, steps=50, progress=False
    )
    assert isinstance(model, PrivateLogisticRegression)
    proba = model.predict_proba(cps)[:, 1]
    assert np.all((proba > 0) & (proba < 1))
    truth = (cps["parttime"] == "yes").to_numpy()
    # Part-time work falls with experience in the middle range, rises at the extremes;
    # the model must at least rank better than chance (AUC > 0.5 by a margin).
    auc = stats.mannwhitneyu(proba[truth], proba[~truth]).statistic / (truth.sum() * (~truth).sum())
    assert auc > 0.6
    assert set(np.unique(model.predict(cps))) <= {0, 1}


def test_amplification_by_iteration_accounting(
    tmp_path: Path, cps: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    pf = _frame(tmp_path, cps.head(3000), epsilon=8.0, delta=1e-6, accounting="zcdp")
    model = pf.linear_regression(FEATURES, "wage", epsilon=8.0, analysis="iteration", passes=2)
    assert model.accounting == "iteration"
    assert np.all(np.isfinite(model.coef_))
    assert "linear regression: 100%" in capsys.readouterr().err  # tqdm's bar: 2 of 2 passes
    rho = float(pf.session.ledger["rho"].iloc[0])
    sigma, _ = iteration_sigma(loss_spec("squared", 2.0), 3, Fraction(rho) * Fraction(9, 10), 2)
    assert model.noise_sigma == pytest.approx(sigma)
    assert "amplification by iteration" in pf.session.ledger["mechanism"].iloc[0]


def test_progress_bar_text(capsys: pytest.CaptureFixture[str]) -> None:
    bar = ProgressBar("fit", use_tqdm=False)
    assert bar.kind == "text"
    for i in range(1, 101):
        bar(i, 100)
    err = capsys.readouterr().err
    assert err.count("\r") <= 21 and err.endswith("100/100\n")
    silent = ProgressBar("fit", enabled=False)
    silent(1, 1)
    assert capsys.readouterr().err == ""


def test_bad_input_charges_nothing(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=4.0, delta=1e-6)
    unbounded = local(pf).private_frame(cps.assign(age=cps["experience"] + 18))
    cases: list[tuple[Callable[[], object], type[dp.DPError], str]] = [
        (
            lambda: unbounded.linear_regression(["age"], "wage", epsilon=1.0),
            dp.SchemaError,
            "Feature 'age' needs public bounds",
        ),
        (
            lambda: pf.linear_regression(FEATURES, "region", epsilon=1.0),
            dp.SchemaError,
            "The target 'region' is categorical, not numeric",
        ),
        (
            lambda: pf.linear_regression(["region"], "wage", epsilon=1.0),
            dp.SchemaError,
            "Feature 'region' is categorical; regression features must be numeric",
        ),
        (
            lambda: pf.linear_regression([], "wage", epsilon=1.0),
            dp.SchemaError,
            "features= takes a list of column names",
        ),
        (
            lambda: pf.linear_regression(["wage"], "wage", epsilon=1.0),
            dp.SchemaError,
            "The target cannot also be a feature",
        ),
        (
            lambda: pf.linear_regression(FEATURES, "wage", epsilon=1.0, analysis="magic"),
            dp.InvalidArgumentError,
            "analysis= must be 'rdp' or 'iteration'",
        ),
        (
            lambda: pf.linear_regression(FEATURES, "wage", epsilon=1.0, steps=0),
            dp.InvalidArgumentError,
            r"steps must be an integer in \[1, 10000\]",
        ),
        (
            lambda: pf.linear_regression(FEATURES, "wage", epsilon=1.0, radius=-1),
            dp.InvalidArgumentError,
            "radius must be a positive number, got -1",
        ),
        (
            lambda: pf.linear_regression(
                FEATURES, "wage", epsilon=1.0, analysis="iteration", step_size=5.0
            ),
            dp.InvalidArgumentError,
            r"step_size must be in \(0, 2\]",
        ),
        (
            lambda: pf.logistic_regression(FEATURES, "wage", epsilon=1.0),
            dp.SchemaError,
            r"A logistic target must be boolean or bounded in \[0, 1\]; 'wage' has bounds",
        ),
        (
            lambda: pf.linear_regression(["nope"], "wage", epsilon=1.0),
            dp.SchemaError,
            "Unknown column 'nope'",
        ),
    ]
    for case, error, match in cases:
        with pytest.raises(error, match=match):
            case()
    with pytest.raises(dp.DPError, match="bounds"):
        unbounded.linear_regression(["age"], "wage", epsilon=1.0)
    with pytest.raises(dp.DPError, match="not numeric"):
        pf.linear_regression(FEATURES, "region", epsilon=1.0)
    assert pf.session.spent.is_zero and len(pf.session.ledger) == 0
    pure = _frame(tmp_path / "pure", cps, epsilon=2.0)
    with pytest.raises(dp.DPError, match="delta > 0"):
        pure.linear_regression(FEATURES, "wage", epsilon=1.0)
    assert pure.session.spent.is_zero


def test_progress_uses_tqdm_when_installed(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    bar = ProgressBar("fit")
    assert bar.kind == "tqdm"
    for i in range(1, 51):
        bar(i, 50)
    err = capsys.readouterr().err
    assert "fit: 100%" in err and "50/50" in err
    assert ProgressBar("fit", enabled=False).kind == "off"
