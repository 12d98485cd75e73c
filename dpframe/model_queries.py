"""Model releases on private frames: the kernel density estimate and the regressions.

Each function validates its arguments first (nothing is charged for bad
input), then hands one unit of work to the session's release path.  Both
mechanisms add Gaussian noise, so they need a session with δ > 0 (approx or
zCDP accounting); in a pure-DP session they are refused before any charge.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.accounting.accountants import NoiseAllocation
from dpframe.accounting.budget import Budget, Number
from dpframe.backends.base import Backend
from dpframe.errors import DPError, InvalidArgumentError, InvalidBudgetError, SchemaError
from dpframe.frame import describe_plan
from dpframe.mechanisms.additive import noise_for, release_integer_sums
from dpframe.mechanisms.kde import (
    MAX_GRID,
    check_bandwidth,
    kde_noise,
    kernel_sums,
    release_kernel_sums,
)
from dpframe.mechanisms.regression import (
    Loss,
    check_steps,
    denormalize,
    fit_composition,
    fit_iteration,
    iteration_sigma,
    loss_spec,
    normalize_features,
    normalize_target,
)
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import lineage, unit_rows
from dpframe.row_access import numeric_rows, require_rows

if TYPE_CHECKING:
    from dpframe.frame import PrivateFrame
    from dpframe.series import PrivateSeries

__all__ = [
    "KDEInfo",
    "PrivateLinearRegression",
    "PrivateLogisticRegression",
    "ProgressBar",
    "kde",
    "plot_kde",
    "regression",
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
    count = NoiseAllocation("gaussian", allocation.parameter * _COUNT_SHARE)
    return count, allocation.parameter * (1 - _COUNT_SHARE)


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


def _grid(grid: object, bounds: tuple[float, float]) -> npt.NDArray[np.float64]:
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


def kde(
    series: PrivateSeries,
    bandwidth: float,
    grid: int | Sequence[float],
    epsilon: Number | None,
    delta: Number | None,
    rho: Number | None,
) -> pd.Series:
    """Release a Gaussian kernel density estimate on a grid (see :mod:`dpframe.mechanisms.kde`)."""
    from dpframe.series import require_bounds

    h = check_bandwidth(bandwidth)
    bounds = require_bounds(series._info, "kde")
    points = _grid(grid, bounds)
    frame = series._frame
    session = frame._session
    source = lineage(frame._plan)[0]
    require_rows(session, source)
    rows_per_unit = unit_rows(frame._plan)
    label = f"kde({series._expr}, h={h:g}, {len(points)} points){describe_plan(frame._plan)}"
    calibration = (
        "zCDP: c = Δ/sqrt(2ρ), Δ = (2πh²)^(-1/2) per row added or removed "
        "(Hall, Rinaldo, Wasserman 2013; Bun & Steinke 2016); valid for every ε"
    )

    def precheck(allocation: NoiseAllocation) -> None:
        _gaussian_only(allocation, "kde()")
        count, rho_sums = _split(allocation)
        noise_for(rows_per_unit, 1.0, count)
        kde_noise(h, rows_per_unit, len(points), rho_sums)

    def work(
        backend: Backend, allocation: NoiseAllocation, cost: Budget, _rho: Fraction | None
    ) -> tuple[pd.Series, str]:
        rng = session._rng
        count, rho_sums = _split(allocation)
        (values,) = numeric_rows(backend, frame._plan, [series._expr])
        present = values[~np.isnan(values)]
        clamped = np.clip(present, bounds[0], bounds[1])
        n_hat, count_scale = _noisy_count(len(clamped), rows_per_unit, count, rng)
        sums = kernel_sums(clamped, points, h)
        noisy, noise = release_kernel_sums(sums, points, h, rows_per_unit, rho_sums, rng)
        denominator = max(n_hat, 1.0)
        density = noisy / denominator
        std = noise.sigma * math.sqrt(1 + 1e-6) / denominator
        classical = None
        if session.accounting == "approx" and float(cost.delta) > 0:
            classical = (
                math.sqrt(2 * math.log(2 / float(cost.delta)))
                * noise.sensitivity
                / float(cost.epsilon)
            )
        info = KDEInfo(
            str(series._expr),
            h,
            tuple([std] * len(points)),
            n_hat,
            count_scale,
            noise.sigma,
            classical,
            calibration,
            cost,
            label,
        )
        result = pd.Series(density, index=pd.Index(points, name=str(series._expr)), name="density")
        result.attrs["dpframe_kde"] = info
        return result, f"{len(points)} points"

    return session._run(
        label,
        source,
        (epsilon, delta, rho),
        "Gaussian process (kernel covariance)",
        work,
        precheck=precheck,
    )


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


# -- progress ------------------------------------------------------------------


class ProgressBar:
    """A minimal progress bar: an ipywidgets bar in a notebook, a text line on stderr otherwise.

    Args:
        label: the text in front of the bar.
        enabled: False draws nothing.
    """

    def __init__(self, label: str, enabled: bool = True) -> None:
        self._label = label
        self._enabled = enabled
        self._widget: Any = None
        self._last = -1
        if enabled and _in_notebook():
            import ipywidgets as widgets
            from IPython.display import display

            self._widget = widgets.IntProgress(min=0, max=1, description=label[:20])
            display(self._widget)  # type: ignore[no-untyped-call]

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` (redraws at most 20 times)."""
        if not self._enabled:
            return
        step = max(total // 20, 1)
        if done != total and done // step == self._last:
            return
        self._last = done // step
        if self._widget is not None:
            self._widget.max = total
            self._widget.value = done
            return
        filled = round(20 * done / max(total, 1))
        end = "\n" if done >= total else ""
        sys.stderr.write(
            f"\r{self._label} [{'#' * filled}{'.' * (20 - filled)}] {done}/{total}{end}"
        )
        sys.stderr.flush()


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


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


def _check_features(
    frame: PrivateFrame, features: object, target: object, loss: Loss
) -> tuple[list[str], list[tuple[float, float]], str, tuple[float, float]]:
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
        info = frame._schema.get(name)
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
    tinfo = frame._schema.get(target)
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


def regression(
    frame: PrivateFrame,
    loss: Loss,
    features: object,
    target: object,
    budget: tuple[Number | None, Number | None, Number | None],
    options: dict[str, Any],
) -> PrivateLinearRegression | PrivateLogisticRegression:
    """Fit a linear or logistic model by noisy projected gradient descent (one charge).

    ``options``: ``accounting`` (``"rdp"`` or ``"iteration"``), ``radius``,
    ``steps`` (rdp), ``passes`` and ``step_size`` (iteration), ``progress``.
    """
    names, bounds, target_name, target_bounds = _check_features(frame, features, target, loss)
    accounting = options.get("accounting", "rdp")
    if accounting not in ("rdp", "iteration"):
        raise InvalidArgumentError("accounting= must be 'rdp' or 'iteration'.")
    spec = loss_spec(loss, options.get("radius", 2.0))
    steps = check_steps(options.get("steps", 50), "steps", 10_000)
    passes = check_steps(options.get("passes", 1), "passes", 100)
    chosen_step = options.get("step_size")
    step_size = 1.0 if chosen_step is None else float(chosen_step)
    if accounting == "iteration" and not 0 < step_size <= 2 / spec.smoothness:
        raise InvalidArgumentError(f"step_size must be in (0, {2 / spec.smoothness:g}] (2/β).")
    source = lineage(frame._plan)[0]
    session = frame._session
    require_rows(session, source)
    rows_per_unit = unit_rows(frame._plan)
    if accounting == "iteration" and rows_per_unit > 1:
        raise SchemaError(
            "Amplification by iteration is analysed for one row per person; use "
            "accounting='rdp' with a privacy unit."
        )
    kind = "linear" if loss == "squared" else "logistic"
    label = (
        f"{kind}_regression({target_name} ~ {' + '.join(names)}, {accounting})"
        f"{describe_plan(frame._plan)}"
    )
    mechanism = (
        "noisy gradient descent (discrete Gaussian, zCDP composition)"
        if accounting == "rdp"
        else "noisy projected SGD (Gaussian, amplification by iteration)"
    )
    progress = ProgressBar(f"{kind} regression", bool(options.get("progress", True)))

    def precheck(allocation: NoiseAllocation) -> None:
        _gaussian_only(allocation, f"{kind}_regression()")
        count, rho_model = _split(allocation)
        noise_for(rows_per_unit, 1.0, count)
        if accounting == "rdp":
            from dpframe.mechanisms.gaussian_vector import vector_noise

            vector_noise(spec.lipschitz * rows_per_unit, len(names) + 1, rho_model / steps)
        else:
            sigma, grid = iteration_sigma(spec, len(names) + 1, rho_model, passes)
            if sigma / grid > 2**52:
                raise InvalidBudgetError("epsilon is too small for this regression.")

    def work(
        backend: Backend, allocation: NoiseAllocation, cost: Budget, _rho: Fraction | None
    ) -> tuple[PrivateLinearRegression | PrivateLogisticRegression, str]:
        rng = session._rng
        count, rho_model = _split(allocation)
        columns = numeric_rows(backend, frame._plan, [Col(n) for n in [*names, target_name]])
        complete = np.all([~np.isnan(c) for c in columns], axis=0)
        xs = [c[complete] for c in columns[:-1]]
        y = normalize_target(columns[-1][complete], target_bounds, loss)
        z = normalize_features(xs, bounds)
        n_hat, _ = _noisy_count(len(y), rows_per_unit, count, rng)
        if accounting == "rdp":
            w, sigma = fit_composition(
                z, y, spec, rho_model, n_hat, steps, rows_per_unit, rng, progress
            )
        else:
            z, y = _arrange_rows(z, y, max(round(n_hat), 0), rng)
            # Default step 1/(β·sqrt(ñ)): a function of the released count only.
            eta = (
                step_size
                if chosen_step is not None
                else 1 / (spec.smoothness * math.sqrt(max(n_hat, 1.0)))
            )
            w, sigma = fit_iteration(z, y, spec, rho_model, passes, eta, rng, progress)
        w = np.round(w * 2**30) / 2**30  # a public grid for the released weights
        coef, intercept = denormalize(w, bounds, target_bounds, loss)
        model_type = PrivateLinearRegression if loss == "squared" else PrivateLogisticRegression
        model = model_type(
            coef,
            float(intercept),
            tuple(names),
            target_name,
            accounting,
            cost,
            n_hat,
            sigma,
            spec.radius,
            label,
        )
        return model, f"coef={np.array2string(coef, precision=4)}"

    return session._run(label, source, budget, mechanism, work, precheck=precheck)


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
