"""Model releases on private frames: the kernel density estimate and the regressions.

Each function validates its arguments first (nothing is charged for bad
input), then hands one unit of work to the session's release path.  Both
mechanisms add Gaussian noise, so they need a session with δ > 0 (approx or
zCDP accounting); in a pure-DP session they are refused before any charge.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import DPError, InvalidArgumentError, InvalidBudgetError, SchemaError
from dpframe.mechanisms.calibration.additive import noise_for, release_integer_sums
from dpframe.mechanisms.calibration.gdp_curves import discrete_gaussian_rho
from dpframe.mechanisms.core.allocation import NoiseAllocation, gaussian_rho, rdp_rho
from dpframe.mechanisms.core.family import Family, Released
from dpframe.mechanisms.core.work import Units, Work
from dpframe.mechanisms.models.kde import (
    MAX_GRID,
    KernelSums,
    kde_noise,
    release_kernel_sums,
)
from dpframe.mechanisms.models.regression import (
    GradientSum,
    Loss,
    check_steps,
    denormalize,
    fit_by_gradients,
    fit_iteration,
    iteration_sigma,
    loss_spec,
    normalize_features,
    normalize_target,
)
from dpframe.mechanisms.runtime.progress import ProgressBar
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import unit_rows
from dpframe.plan.privacy import Budget
from dpframe.plan.releases import KernelDensity, Regression
from dpframe.plan.schema import Schema

__all__ = [
    "KDEInfo",
    "KernelDensityFamily",
    "PrivateLinearRegression",
    "PrivateLogisticRegression",
    "ProgressBar",
    "RegressionFamily",
    "check_features",
    "check_regression_options",
    "kde_grid",
    "plot_kde",
]

#: Shares of ρ: the noisy count gets 1/10, the curve or the model 9/10.
_COUNT_SHARE = Fraction(1, 10)


def _gaussian_only(allocation: NoiseAllocation, what: str) -> None:
    if allocation.kind != "gaussian":
        raise InvalidBudgetError(
            f"{what} adds Gaussian noise, which needs delta > 0: use a session with "
            "delta > 0 (zCDP accounting, or accounting='approx' and delta=... here)."
        )


def _split(allocation: NoiseAllocation) -> tuple[NoiseAllocation, Fraction]:
    """The count's allocation and the discrete-Gaussian ρ of the rest (GDP: corrected)."""
    count = allocation.scaled(_COUNT_SHARE)
    return count, gaussian_rho(allocation.scaled(1 - _COUNT_SHARE))


def _split_steps_gdp(allocation: NoiseAllocation, steps: int) -> tuple[NoiseAllocation, Fraction]:
    """GDP: the count's allocation, and ``steps`` times the corrected ρ′ of one gradient step.

    Each of the ``steps`` gradient releases is a vector of discrete Gaussians at
    ρ′ = ``discrete_gaussian_rho(ρ_model/steps)``, so it is sqrt(2ρ_model/steps)-GDP
    (docs/proofs/gdp_accounting.md, Lemma B); adaptively chosen, they compose to
    sqrt(2ρ_model)-GDP (Dong, Roth & Su 2019, Thm 3.2), and with the count to
    sqrt(2ρ)-GDP.  ``fit_by_gradients`` divides the returned ρ by ``steps``.
    """
    per_step = discrete_gaussian_rho(allocation.parameter * (1 - _COUNT_SHARE) / steps)
    return allocation.scaled(_COUNT_SHARE), per_step * steps


def _split_rdp(allocation: NoiseAllocation, what: str) -> tuple[NoiseAllocation, Fraction]:
    """The count's allocation and the ρ of a model analysed in Rényi DP (refused under GDP)."""
    rho = rdp_rho(allocation)
    if rho is None:
        raise InvalidBudgetError(
            f"{what} with analysis='iteration' is analysed in Renyi DP, which Gaussian DP "
            "accounting composes only as a release with a delta of its own: pass delta=... "
            "(from the session's delta_reserve), use analysis='rdp' (per-step Gaussian "
            "noise), or create the session with accounting='zcdp'."
        )
    # Both parts in zCDP (ρ adds), so the whole is ρ-zCDP as the accountant assumed.
    # The one place a mechanism builds an allocation: a zCDP one on purpose, from the
    # Rényi ρ the accountant granted (tests/test_synth_accounting.py allows only this).
    return NoiseAllocation("gaussian", rho * _COUNT_SHARE), rho * (1 - _COUNT_SHARE)


def _noisy_count(
    n: int, rows_per_unit: int, allocation: NoiseAllocation, rng: SecureRandom
) -> tuple[float, float]:
    values, spec = release_integer_sums(np.array([float(n)]), rows_per_unit, 1.0, allocation, rng)
    return float(values[0]), spec.scale


# -- kernel density ------------------------------------------------------------


@dataclass(frozen=True)
class KDEInfo:
    """What a private density estimate is (``result.attrs["dpframe_kde"]``).

    Attributes:
        column: the column estimated.
        bandwidth: the kernel bandwidth h.
        std: the noise's standard deviation at each grid point, in density units
            (c·sqrt(1 + τ)/ñ; the count's own noise is in ``count_scale``).
        noisy_count: ñ, the released row count used to normalise.
        count_scale: the noisy count's σ.
        sigma: c, the Gaussian process's σ in kernel-sum units.
        classical_sigma: Hall et al.'s sqrt(2·log(2/δ))·Δ/ε for the same request
            (None in zCDP sessions, where the request is a ρ share).
        calibration: how c was calibrated.
        cost: the budget charged.
        query: the ledger label.
    """

    column: str
    bandwidth: float
    std: tuple[float, ...]
    noisy_count: float
    count_scale: float
    sigma: float
    classical_sigma: float | None
    calibration: str
    cost: Budget
    query: str


def kde_grid(grid: object, bounds: tuple[float, float]) -> npt.NDArray[np.float64]:
    """The public grid points of a density: a number of points over the bounds, or a list."""
    if isinstance(grid, bool):
        raise InvalidArgumentError("grid= takes a number of points or a list of points.")
    if isinstance(grid, (int, np.integer)):
        if not 1 <= grid <= MAX_GRID:
            raise InvalidArgumentError(f"grid= must be between 1 and {MAX_GRID} points.")
        return np.linspace(bounds[0], bounds[1], int(grid))
    try:
        points = np.asarray([float(p) for p in grid], dtype=np.float64)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise InvalidArgumentError("grid= takes a number of points or a list of points.") from None
    if points.size == 0:
        raise InvalidArgumentError("grid= is empty: give at least one point.")
    if points.size > MAX_GRID or not np.all(np.isfinite(points)):
        raise InvalidArgumentError(f"grid= needs 1 to {MAX_GRID} finite points.")
    if len(np.unique(points)) != len(points):
        raise InvalidArgumentError("grid= points must be distinct.")
    return points


_KDE_CALIBRATION = (
    "zCDP: c = Δ/sqrt(2ρ), Δ = (2πh²)^(-1/2) per row added or removed "
    "(Hall, Rinaldo, Wasserman 2013; Bun & Steinke 2016); valid for every ε"
)


class KernelDensityFamily(Family[KernelDensity]):
    """A Gaussian KDE with Gaussian-process noise (see :mod:`dpframe.mechanisms.models.kde`)."""

    node_type = KernelDensity

    def work(self, node: KernelDensity) -> Work:
        """A pass over the rows per grid point, and the Cholesky factor of the grid."""
        size = len(node.points)  # a pass per point; the grid's kernel matrix, its factor
        return Work(per_row=Units(row_ops=size), fixed=Units(flops=size**3 / 3 + size * size))

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (KDEInfo,)

    mechanism = "Gaussian process (kernel covariance)"

    def privacy_map(self, node: KernelDensity, allocation: NoiseAllocation) -> Any:
        """Gaussian only; 1/10 of ρ to the count, the rest to the curve."""
        _gaussian_only(allocation, "kde()")
        count, rho_sums = _split(allocation)
        rows_per_unit = unit_rows(node.plan)
        noise_for(rows_per_unit, 1.0, count)
        kde_noise(node.bandwidth, rows_per_unit, len(node.points), rho_sums)
        return count, rho_sums

    def release(self, run: Released[KernelDensity]) -> tuple[Any, str]:
        """Kernel sums on the grid plus kernel-shaped noise, over a noisy count."""
        node = run.node
        rng = run.rng
        count, rho_sums = run.noise
        points = np.asarray(node.points, dtype=np.float64)
        h = node.bandwidth
        rows_per_unit = unit_rows(node.plan)
        reducer = KernelSums(node.points, h, node.bounds)
        n, sums = run.backend.row_reduce(node.plan, [node.expr], reducer)
        n_hat, count_scale = _noisy_count(n, rows_per_unit, count, rng)
        noisy, noise = release_kernel_sums(sums, points, h, rows_per_unit, rho_sums, rng)
        denominator = max(n_hat, 1.0)
        density = noisy / denominator
        std = noise.sigma * math.sqrt(1 + 1e-6) / denominator
        classical = None
        if run.accounting == "approx" and float(run.cost.delta) > 0:
            classical = (
                math.sqrt(2 * math.log(2 / float(run.cost.delta)))
                * noise.sensitivity
                / float(run.cost.epsilon)
            )
        info = KDEInfo(
            str(node.expr),
            h,
            tuple([std] * len(points)),
            n_hat,
            count_scale,
            noise.sigma,
            classical,
            _KDE_CALIBRATION,
            run.cost,
            node.label,
        )
        result = pd.Series(density, index=pd.Index(points, name=str(node.expr)), name="density")
        result.attrs["dpframe_kde"] = info
        return result, f"{len(points)} points"


def plot_kde(result: pd.Series, level: float = 0.95, ax: Any = None) -> Any:
    """Draw a released density with its pointwise ``level`` band (free post-processing)."""
    info = result.attrs.get("dpframe_kde") if isinstance(result, pd.Series) else None
    if not isinstance(info, KDEInfo):
        raise InvalidArgumentError("plot_kde() takes a result of PrivateSeries.kde().")
    if not 0 < float(level) < 1:
        raise InvalidArgumentError("level must be in (0, 1).")
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise DPError("Plotting needs matplotlib: pip install matplotlib.") from None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + float(level) / 2)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    x = result.index.to_numpy(dtype=float)
    y = result.to_numpy()
    band = z * np.asarray(info.std)
    ax.plot(x, y, color="#4c72b0", label="private density")
    ax.fill_between(x, y - band, y + band, color="#4c72b0", alpha=0.2, label=f"{level:.0%} band")
    ax.set_xlabel(info.column)
    ax.set_ylabel("density")
    ax.set_title(info.query, fontsize=10)
    ax.legend(fontsize=8)
    return ax


# -- regression ------------------------------------------------------------------


@dataclass(frozen=True)
class _FittedModel:
    coef_: npt.NDArray[np.float64]
    intercept_: float
    feature_names_in_: tuple[str, ...]
    target: str
    accounting: str
    cost: Budget
    noisy_count: float
    noise_sigma: float
    radius: float
    query: str

    @property
    def n_features_in_(self) -> int:
        """Number of features (scikit-learn's name)."""
        return len(self.feature_names_in_)

    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:  # noqa: N803
        """X·coef_ + intercept_ (X: a DataFrame with the feature columns, or an array)."""
        if isinstance(X, pd.DataFrame):
            missing = [c for c in self.feature_names_in_ if c not in X.columns]
            if missing:
                raise InvalidArgumentError(f"X lacks the feature columns {missing}.")
            matrix = X[list(self.feature_names_in_)].to_numpy(dtype=np.float64)
        else:
            matrix = np.asarray(X, dtype=np.float64)
            if matrix.ndim == 1:
                matrix = matrix.reshape(-1, 1)
            if matrix.shape[1] != self.n_features_in_:
                raise InvalidArgumentError(f"X needs {self.n_features_in_} columns.")
        return np.asarray(matrix @ self.coef_ + self.intercept_, dtype=np.float64)


@dataclass(frozen=True)
class PrivateLinearRegression(_FittedModel):
    """A released linear model with scikit-learn's attribute names (``coef_``, ``intercept_``).

    Public after release: predicting is free.
    """

    def predict(self, X: Any) -> npt.NDArray[np.float64]:  # noqa: N803
        """Predicted targets (clamping was applied when fitting, not here)."""
        return self.decision_function(X)


@dataclass(frozen=True)
class PrivateLogisticRegression(_FittedModel):
    """A released logistic model with scikit-learn's names (``coef_``, ``predict``, ...)."""

    def predict_proba(self, X: Any) -> npt.NDArray[np.float64]:  # noqa: N803
        """P(target = 1), as scikit-learn's second column."""
        p = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1 - p, p])

    def predict(self, X: Any) -> npt.NDArray[np.int64]:  # noqa: N803
        """1 where P(target = 1) ≥ 1/2, else 0."""
        return (self.decision_function(X) >= 0).astype(np.int64)


def check_features(
    schema: Schema, features: object, target: object, loss: Loss
) -> tuple[list[str], list[tuple[float, float]], str, tuple[float, float]]:
    """Validate the features and target of a regression against the public schema."""
    if isinstance(features, str):
        features = [features]
    if not isinstance(features, (list, tuple)) or not features:
        raise SchemaError("features= takes a list of column names.")
    if not all(isinstance(f, str) for f in features):
        raise SchemaError("features= takes a list of column names.")
    names = list(features)
    if len(set(names)) != len(names):
        raise SchemaError("features= lists a column twice.")
    bounds = []
    for name in names:
        info = schema.get(name)
        if not info.summable:
            raise SchemaError(
                f"Feature {name!r} is {info.kind}; regression features must be numeric."
            )
        if info.bounds is None or not info.bounds[1] > info.bounds[0]:
            raise SchemaError(
                f"Feature {name!r} needs public bounds with low < high: pass "
                f"bounds={{{name!r}: (low, high)}} when loading, or pf.with_bounds(...)."
            )
        bounds.append(info.bounds)
    if not isinstance(target, str):
        raise SchemaError("target= takes a column name.")
    if target in names:
        raise SchemaError("The target cannot also be a feature.")
    tinfo = schema.get(target)
    if not tinfo.summable:
        raise SchemaError(
            f"The target {target!r} is {tinfo.kind}, not numeric; derive a number or a "
            "boolean first, e.g. pf.assign(y=pf['col'] == 'yes')."
        )
    if tinfo.bounds is None or not tinfo.bounds[1] > tinfo.bounds[0]:
        raise SchemaError(f"The target {target!r} needs public bounds with low < high.")
    if loss == "logistic" and not (tinfo.bounds[0] >= 0 and tinfo.bounds[1] <= 1):
        raise SchemaError(
            f"A logistic target must be boolean or bounded in [0, 1]; {target!r} has "
            f"bounds {tinfo.bounds}."
        )
    return names, bounds, target, tinfo.bounds


def check_regression_options(options: dict[str, Any], loss: Loss) -> dict[str, Any]:
    """Validate a regression's options (public inputs; nothing is charged for bad ones)."""
    accounting = options.get("analysis", "rdp")
    if accounting not in ("rdp", "iteration"):
        raise InvalidArgumentError("analysis= must be 'rdp' or 'iteration'.")
    spec = loss_spec(loss, options.get("radius", 2.0))
    steps = check_steps(options.get("steps", 50), "steps", 10_000)
    passes = check_steps(options.get("passes", 1), "passes", 100)
    chosen_step = options.get("step_size")
    step_size = None if chosen_step is None else float(chosen_step)
    checked_step = 1.0 if step_size is None else step_size
    if accounting == "iteration" and not 0 < checked_step <= 2 / spec.smoothness:
        raise InvalidArgumentError(f"step_size must be in (0, {2 / spec.smoothness:g}] (2/β).")
    return {
        "analysis": str(accounting),
        "radius": spec.radius,
        "steps": steps,
        "passes": passes,
        "step_size": step_size,
        "progress": bool(options.get("progress", True)),
    }


class RegressionFamily(Family[Regression]):
    """Linear or logistic regression by noisy projected gradient descent (one charge)."""

    node_type = Regression

    def work(self, node: Regression) -> Work:
        """Full-batch steps, or a noisy step per row and pass (``analysis="iteration"``)."""
        columns = len(node.features) + 1
        if node.analysis == "iteration":  # the rows read once, then a noisy step per row and pass
            return Work(per_row=Units(row_ops=columns, noisy_steps=node.passes))
        # full-batch steps: the plan is evaluated again for every step
        return Work(evaluations=node.steps + 1, per_row=Units(row_ops=node.steps * columns))

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (
            PrivateLinearRegression,
            PrivateLogisticRegression,
        )

    def renyi_only(self, node: Regression) -> bool:
        """Amplification by iteration is analysed only in Rényi DP."""
        return node.analysis == "iteration"

    def rows_needed(self, node: Regression) -> str | None:
        """Full-batch steps are sums over rows (any backend); per-row SGD needs the rows."""
        if node.analysis == "iteration":
            return (
                "analysis='iteration' visits the rows one by one in a secret random order "
                "(use analysis='rdp' on partitioned data)"
            )
        return None

    def mechanism_of(self, node: Regression, allocation: NoiseAllocation) -> str:
        """Per-step Gaussian composition, or amplification by iteration."""
        if node.analysis == "rdp":
            return "noisy gradient descent (discrete Gaussian, zCDP composition)"
        return "noisy projected SGD (Gaussian, amplification by iteration)"

    def privacy_map(self, node: Regression, allocation: NoiseAllocation) -> Any:
        """Gaussian only; 1/10 of ρ to the count, the rest to the model."""
        kind = "linear" if node.loss == "squared" else "logistic"
        rows_per_unit = unit_rows(node.plan)
        if node.analysis == "iteration" and rows_per_unit > 1:
            raise SchemaError(
                "Amplification by iteration is analysed for one row per person; use "
                "analysis='rdp' with a privacy unit."
            )
        _gaussian_only(allocation, f"{kind}_regression()")
        spec = loss_spec(node.loss, node.radius)
        if node.analysis == "rdp" and allocation.currency == "gdp":
            count, rho_model = _split_steps_gdp(allocation, node.steps)
        else:
            count, rho_model = _split_rdp(allocation, f"{kind}_regression()")
        noise_for(rows_per_unit, 1.0, count)
        dims = len(node.features) + 1
        if node.analysis == "rdp":
            from dpframe.mechanisms.calibration.gaussian_vector import vector_noise

            vector_noise(spec.lipschitz * rows_per_unit, dims, rho_model / node.steps)
        else:
            sigma, grid = iteration_sigma(spec, dims, rho_model, node.passes)
            if sigma / grid > 2**52:
                raise InvalidBudgetError("epsilon is too small for this regression.")
        return spec, count, rho_model

    def release(self, run: Released[Regression]) -> tuple[Any, str]:
        """Read the complete rows, normalise, fit with noise, denormalise."""
        node = run.node
        rng = run.rng
        spec, count, rho_model = run.noise
        rows_per_unit = unit_rows(node.plan)
        kind = "linear" if node.loss == "squared" else "logistic"
        progress = ProgressBar(f"{kind} regression", node.progress)
        names = list(node.features)
        exprs = [Col(n) for n in [*names, node.target]]
        sums = GradientSum(node.feature_bounds, node.target_bounds, node.loss)
        if node.analysis == "rdp":  # full-batch steps: sums over rows, on any backend
            n, _ = run.backend.row_reduce(node.plan, exprs, sums)
            n_hat, _ = _noisy_count(n, rows_per_unit, count, rng)

            def gradient(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
                at_w = dataclasses.replace(sums, weights=tuple(float(v) for v in w))
                total: npt.NDArray[np.float64] = run.backend.row_reduce(node.plan, exprs, at_w)[1]
                return total

            w, sigma = fit_by_gradients(
                gradient,
                len(names) + 1,
                spec,
                rho_model,
                n_hat,
                node.steps,
                rows_per_unit,
                rng,
                progress,
            )
        else:
            columns = run.backend.numeric_rows(node.plan, exprs)
            complete = np.all([~np.isnan(c) for c in columns], axis=0)
            xs = [c[complete] for c in columns[:-1]]
            y = normalize_target(columns[-1][complete], node.target_bounds, node.loss)
            z = normalize_features(xs, list(node.feature_bounds))
            n_hat, _ = _noisy_count(len(y), rows_per_unit, count, rng)
            z, y = _arrange_rows(z, y, max(round(n_hat), 0), rng)
            # Default step 1/(β·sqrt(ñ)): a function of the released count only.
            eta = (
                node.step_size
                if node.step_size is not None
                else 1 / (spec.smoothness * math.sqrt(max(n_hat, 1.0)))
            )
            w, sigma = fit_iteration(z, y, spec, rho_model, node.passes, eta, rng, progress)
        w = np.round(w * 2**30) / 2**30  # a public grid for the released weights
        coef, intercept = denormalize(w, list(node.feature_bounds), node.target_bounds, node.loss)
        model_type = (
            PrivateLinearRegression if node.loss == "squared" else PrivateLogisticRegression
        )
        model = model_type(
            coef,
            float(intercept),
            tuple(names),
            node.target,
            node.analysis,
            run.cost,
            n_hat,
            sigma,
            spec.radius,
            node.label,
        )
        return model, f"coef={np.array2string(coef, precision=4)}"


def _arrange_rows(
    z: npt.NDArray[np.float64], y: npt.NDArray[np.float64], n_hat: int, rng: SecureRandom
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """A secure random order of the rows, truncated or padded (y = NaN) to ``n_hat`` rows."""
    n = len(y)
    order = np.lexsort((rng.uniform_below(2**62, n),)) if n else np.zeros(0, dtype=np.int64)
    if n_hat <= n:
        keep = order[:n_hat]
        return z[keep], y[keep]
    pad = n_hat - n
    z_all = np.vstack([z[order], np.zeros((pad, z.shape[1]))])
    y_all = np.concatenate([y[order], np.full(pad, np.nan)])
    mixed = np.lexsort((rng.uniform_below(2**62, n_hat),))
    return z_all[mixed], y_all[mixed]
