"""Private linear and logistic regression by noisy projected gradient descent.

Features and target are clamped to their declared bounds and rescaled so
that every row's design vector z = [x̃/sqrt(d), 1]/sqrt(2) has ‖z‖ ≤ 1
(x̃ ∈ [−1, 1]^d) and the target lies in [−1, 1] (linear) or [0, 1]
(logistic).  The parameters stay in the ball ‖w‖ ≤ R (projection), where
the per-row loss is convex, L-Lipschitz and β-smooth:

* squared loss ½(w·z − y)²: L = R + 1, β = 1;
* logistic loss (soft labels y ∈ [0, 1]): L = 1, β = 1/4.

Two ways to spend ρ (both documented in :func:`fit_composition` and
:func:`fit_iteration`):

* ``"rdp"``: T full-batch steps, each releasing the gradient sum with the
  discrete Gaussian vector mechanism (sensitivity L per row); per-step
  ρ/T-zCDP, composed (Bun & Steinke 2016; Abadi et al. 2016 for the idea).
  Rigorous: every step's release is exact discrete Gaussian on a grid, the
  iterates are post-processing.
* ``"iteration"``: one pass (or a few) of projected noisy SGD over the rows
  in a random order, releasing only the final weights; privacy amplification
  by iteration (Feldman, Mironov, Talwar, Thakurta 2018, Thm 22): with
  η ≤ 2/β, the t-th row enjoys (α, α·ε₀/(n + 1 − t))-RDP with ε₀ = 2L²/σ²;
  dpframe charges the worst row (t = n), i.e. ε₀ per pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidArgumentError
from dpframe.mechanisms.calibration.gaussian_vector import gaussian_vector
from dpframe.mechanisms.runtime.stopping import STOP_EVERY, check_stop
from dpframe.noise import SecureRandom, coarsen_up, discrete_gaussian_array

__all__ = [
    "GradientSum",
    "Loss",
    "LossSpec",
    "check_steps",
    "denormalize",
    "fit_composition",
    "fit_iteration",
    "iteration_sigma",
    "loss_spec",
    "normalize_features",
    "normalize_target",
    "smoothed_gaussian",
]

Loss = Literal["squared", "logistic"]
Progress = Callable[[int, int], None]
_UNIFORM_BITS = 32


@dataclass(frozen=True)
class LossSpec:
    """The loss and the constants its privacy analysis uses.

    Attributes:
        loss: ``squared`` or ``logistic``.
        radius: R, the radius of the parameter ball.
        lipschitz: L, the bound on each row's gradient norm over the ball.
        smoothness: β, the bound on each row's Hessian norm.
    """

    loss: Loss
    radius: float
    lipschitz: float
    smoothness: float


def loss_spec(loss: Loss, radius: float) -> LossSpec:
    """L and β for ``loss`` over the ball of radius R (design vectors of norm ≤ 1)."""
    r = float(radius)
    if not r > 0 or not math.isfinite(r):
        raise InvalidArgumentError(f"radius must be a positive number, got {radius!r}.")
    if loss == "squared":
        return LossSpec(loss, r, r + 1.0, 1.0)
    return LossSpec(loss, r, 1.0, 0.25)


def normalize_features(
    columns: Sequence[npt.NDArray[np.float64]], bounds: Sequence[tuple[float, float]]
) -> npt.NDArray[np.float64]:
    """Design vectors z = [x̃/sqrt(d), 1]/sqrt(2), x̃ = (clamped x − mid)/half, so ‖z‖ ≤ 1."""
    d = len(columns)
    scaled = []
    for values, (low, high) in zip(columns, bounds, strict=True):
        mid, half = (low + high) / 2, (high - low) / 2
        scaled.append((np.clip(values, low, high) - mid) / half / math.sqrt(d))
    scaled.append(np.ones(len(columns[0]) if columns else 0))
    return np.column_stack(scaled) / math.sqrt(2)


def normalize_target(
    values: npt.NDArray[np.float64], bounds: tuple[float, float], loss: Loss
) -> npt.NDArray[np.float64]:
    """The target in [−1, 1] (squared loss) or [0, 1] (logistic)."""
    low, high = bounds
    clamped = np.clip(values, low, high)
    if loss == "logistic":
        return np.asarray(clamped, dtype=np.float64)
    return np.asarray((clamped - (low + high) / 2) / ((high - low) / 2), dtype=np.float64)


def denormalize(
    weights: npt.NDArray[np.float64],
    bounds: Sequence[tuple[float, float]],
    target: tuple[float, float],
    loss: Loss,
) -> tuple[npt.NDArray[np.float64], float]:
    """``coef_`` and ``intercept_`` in the original units from normalized weights."""
    d = len(bounds)
    scale = math.sqrt(2 * d)
    mids = np.array([(lo + hi) / 2 for lo, hi in bounds])
    halves = np.array([(hi - lo) / 2 for lo, hi in bounds])
    slopes = weights[:d] / (scale * halves)
    intercept = weights[d] / math.sqrt(2) - float(np.dot(slopes, mids))
    if loss == "squared":
        t_mid, t_half = (target[0] + target[1]) / 2, (target[1] - target[0]) / 2
        return slopes * t_half, t_mid + t_half * intercept
    return slopes, intercept


def gradient_sum(
    w: npt.NDArray[np.float64],
    z: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    loss: Loss,
) -> npt.NDArray[np.float64]:
    """Σ_i ∇ℓ(w; z_i, y_i) over the rows (exact, non-private)."""
    margin = z @ w
    residual = margin - y if loss == "squared" else 1.0 / (1.0 + np.exp(-margin)) - y
    return np.asarray(z.T @ residual, dtype=np.float64)


def _project(w: npt.NDArray[np.float64], radius: float) -> npt.NDArray[np.float64]:
    norm = float(np.linalg.norm(w))
    return w if norm <= radius else w * (radius / norm)


def fit_composition(
    z: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    spec: LossSpec,
    rho: Fraction,
    n_hat: float,
    steps: int,
    rows_per_unit: int,
    rng: SecureRandom,
    progress: Progress | None = None,
) -> tuple[npt.NDArray[np.float64], float]:
    """Accelerated projected gradient descent on released noisy gradient sums.

    Privacy:
        ρ-zCDP: each of the T steps releases Σ_i ∇ℓ(w; z_i, y_i), whose ℓ2
        sensitivity is L per row (k·L for a unit of k rows), with the discrete
        Gaussian vector mechanism at ρ/T; T such releases compose to ρ
        (Bun & Steinke 2016, Lemma 2.3), also when each step's point depends
        on earlier releases.  The iterates (Nesterov momentum, projection,
        division by the public-after-release ñ) are post-processing.

    Accuracy:
        Each step's averaged gradient has noise of standard deviation about
        k·L·sqrt(T/(2ρ))/ñ per coordinate.

    Returns:
        The final weights (normalized units) and the per-step noise σ of the gradient sum.
    """

    def gradient(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return gradient_sum(w, z, y, spec.loss)

    return fit_by_gradients(
        gradient, z.shape[1], spec, rho, n_hat, steps, rows_per_unit, rng, progress
    )


def fit_by_gradients(
    gradient: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
    dim: int,
    spec: LossSpec,
    rho: Fraction,
    n_hat: float,
    steps: int,
    rows_per_unit: int,
    rng: SecureRandom,
    progress: Progress | None = None,
) -> tuple[npt.NDArray[np.float64], float]:
    """:func:`fit_composition` with the exact gradient sums from ``gradient(w)``.

    ``gradient`` may run anywhere the rows are (e.g. on each Dask partition,
    adding partial sums); its result is the exact Σ_i ∇ℓ(w; z_i, y_i), so the
    privacy and accuracy are those of :func:`fit_composition`.
    """
    per_step = rho / steps
    eta = 1.0 / spec.smoothness
    w = np.zeros(dim)
    previous = w
    sigma = 0.0
    denominator = max(float(n_hat), 1.0)
    for t in range(1, steps + 1):
        look = _project(w + (t - 1) / (t + 2) * (w - previous), spec.radius)
        exact = gradient(look)
        noisy, noise = gaussian_vector(exact, spec.lipschitz * rows_per_unit, per_step, rng)
        sigma = noise.sigma
        previous, w = w, _project(look - eta * noisy / denominator, spec.radius)
        if progress is not None:
            progress(t, steps)
    return w, sigma


def iteration_sigma(spec: LossSpec, dim: int, rho: Fraction, passes: int) -> tuple[float, float]:
    """(σ, grid) of the per-step noise of :func:`fit_iteration` for ρ over ``passes`` passes.

    Each pass costs ε₀ = (2L + g·sqrt(dim)·(1 + 2⁻³²))²/(2σ²) per order α (RDP
    α·ε₀); g·sqrt(dim) ≤ 2L·2⁻¹¹ accounts for the noise's grid and the 2⁻³²
    for rounding the gradients onto it (see :func:`fit_iteration`).
    """
    grid = 2.0 ** math.floor(math.log2(spec.lipschitz / (math.sqrt(dim) * 2**10)))
    shift = 2 * spec.lipschitz + grid * math.sqrt(dim) * (1 + 2.0**-_UNIFORM_BITS)
    sigma = math.sqrt(passes * shift * shift / (2 * float(rho)))
    return sigma, grid


def smoothed_gaussian(
    sigma: float, grid: float, size: int, rng: SecureRandom
) -> npt.NDArray[np.float64]:
    """``size`` draws of γ·(K + U): K discrete Gaussian with σ² ≥ (σ/γ)², U uniform on [−½, ½).

    U has 32 random bits (its midpoints), so the draws are on a grid of γ·2⁻³²;
    the distribution is within a shift of γ of a continuous N(0, σ²).
    """
    sigma2_units = coarsen_up(Fraction(sigma / grid) ** 2)
    ints = discrete_gaussian_array(sigma2_units, size, rng)
    frac = rng.uniform_below(1 << _UNIFORM_BITS, size).astype(np.float64)
    return np.asarray((ints + (frac + 0.5) / 2**_UNIFORM_BITS - 0.5) * grid, dtype=np.float64)


def fit_iteration(
    z: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    spec: LossSpec,
    rho: Fraction,
    passes: int,
    step_size: float,
    rng: SecureRandom,
    progress: Progress | None = None,
) -> tuple[npt.NDArray[np.float64], float]:
    """Projected noisy SGD, one row per step, in the given order; only the last iterate is returned.

    Rows are used in the order of ``z`` (the caller shuffles them with the
    secure source and pads or truncates them to a noisy length; a padding row
    has ``y = NaN`` and contributes a zero gradient, the gradient of the
    constant loss 0, which is convex, 0-Lipschitz and 0-smooth).

    Privacy:
        Feldman, Mironov, Talwar, Thakurta 2018 ("Privacy amplification by
        iteration", Thm 22): for convex, L-Lipschitz, β-smooth losses, a
        projection onto a convex set and η ≤ 2/β, the t-th of n rows enjoys
        (α, α·ε₀/(n + 1 − t))-RDP, ε₀ = 2L²/σ², when only the final iterate is
        released.  dpframe charges the worst row, t = n: ε₀ per pass, and
        passes compose.  The noise is γ·(K + U) with K discrete Gaussian
        (σ/γ)² and U uniform on [−½, ½) (32 bits), from the secure source;
        its values lie on the lattice γ·2⁻³³·(odd integers).  Each gradient is
        rounded to a multiple of γ·2⁻³² before the noise is added, so every
        step's output stays on that lattice whatever the data (an unrounded,
        real gradient would move the noise off its support: infinite
        divergence); rounding moves a gradient by at most γ·2⁻³³·sqrt(d).  The
        noise's Rényi divergence at a lattice shift a is at most that of a
        continuous Gaussian at shift ‖a‖ + γ·sqrt(d) (pinned exactly in
        tests/privacy_maps), hence ε₀ = (2L + γ·sqrt(d)·(1 + 2⁻³²))²/(2σ²).
        Caveat: the theorem is proved in exact arithmetic; the iterates are
        float64 (the ``"rdp"`` accounting has no such caveat).

    Accuracy:
        Each step moves w by η·(gradient + noise of σ per coordinate); with
        n rows and a small η the final iterate's noise has standard
        deviation about sqrt(η·σ²/(2λ)) along a direction of curvature λ.

    Returns:
        The final weights and σ.
    """
    n, dim = z.shape
    if not 0 < step_size <= 2 / spec.smoothness:
        raise InvalidArgumentError(
            f"step_size must be in (0, {2 / spec.smoothness:g}] (2/β) for amplification "
            "by iteration."
        )
    sigma, grid = iteration_sigma(spec, dim, rho, passes)
    unit = grid * 2.0**-_UNIFORM_BITS  # gradients on γ·2⁻³²: outputs stay on the noise's lattice
    w = np.zeros(dim)
    for p in range(passes):
        noise = smoothed_gaussian(sigma, grid, n * dim, rng).reshape(n, dim)
        for i in range(n):
            if not i % STOP_EVERY:
                check_stop()  # a curator past its wall-clock limit stops here
            row = z[i]
            target = y[i]
            if math.isnan(target):
                gradient = noise[i]
            else:
                margin = float(row @ w)
                if spec.loss == "squared":
                    residual = margin - target
                else:
                    residual = 1.0 / (1.0 + math.exp(-margin)) - target
                gradient = np.rint(residual * row / unit) * unit + noise[i]
            w = w - step_size * gradient
            norm = math.sqrt(float(w @ w))
            if norm > spec.radius:
                w = w * (spec.radius / norm)
        if progress is not None:
            progress(p + 1, passes)
    return w, sigma


def check_steps(value: object, name: str, upper: int) -> int:
    """A positive integer argument (steps, passes) up to ``upper``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not 1 <= value <= upper
    ):
        raise InvalidArgumentError(f"{name} must be an integer in [1, {upper}].")
    return int(value)


@dataclass(frozen=True)
class GradientSum:
    """The gradient sum of a regression's loss at ``weights`` over the complete rows.

    The columns are the features, then the target; a row with any missing
    value is left out.  Features and target are clamped and rescaled as in
    :func:`normalize_features` / :func:`normalize_target`.
    ``partial`` gives ``(n, Σ ∇ℓ)``; with ``weights=None`` only the count.
    """

    feature_bounds: tuple[tuple[float, float], ...]
    target_bounds: tuple[float, float]
    loss: str
    weights: tuple[float, ...] | None = None

    def partial(self, columns: Sequence[npt.NDArray[np.float64]]) -> tuple[Any, ...]:
        """``(complete rows, gradient sum)`` of one block."""
        complete = np.all([~np.isnan(c) for c in columns], axis=0)
        count = int(np.count_nonzero(complete))
        dim = len(self.feature_bounds) + 1
        if self.weights is None or count == 0:
            return count, np.zeros(dim)
        z = normalize_features([c[complete] for c in columns[:-1]], list(self.feature_bounds))
        y = normalize_target(columns[-1][complete], self.target_bounds, self.loss)  # type: ignore[arg-type]
        w = np.asarray(self.weights, dtype=np.float64)
        return count, gradient_sum(w, z, y, self.loss)  # type: ignore[arg-type]
