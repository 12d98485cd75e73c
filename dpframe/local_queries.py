"""Sanitized copies of a column: randomized response and the Laplace copy.

A copy is an ordinary pandas Series: once released it is public and free to
query.  One row of the private data becomes (at most) one perturbed report,
but the *number* of reports must not reveal the number of rows (dpframe's
neighbouring datasets differ by adding or removing a row), so a copy has a
noisy length:

1. ñ = n + noise (discrete Laplace of scale k/ε_n, or discrete Gaussian), a
   share ``length_share`` of the request, rounded and clipped at 0;
2. the rows are put in a uniformly random order (secure source); if ñ ≤ n
   the first ñ are kept, otherwise ñ − n filler rows are added (a filler has
   no value: it reports a uniform category, or the midpoint of the bounds
   plus noise);
3. every kept row is perturbed on its own (:mod:`dpframe.mechanisms.local`).

Privacy of the whole copy (add/remove one row, condition on ñ): if ñ > n the
two datasets' report multisets differ in one report (a filler's versus the
row's), whose distributions are (ε_v, δ)-close; if ñ ≤ n, keeping a random
ñ-subset of D + x is a mixture of a random ñ-subset of D and of x with a
random (ñ − 1)-subset of D, and x's report is (ε_v, δ)-close to any other
row's.  With the length's ε_n, the copy is (ε_n + ε_v, δ)-DP (group privacy
with k rows per unit: the per-row ε is divided by k).  The result is
shuffled and carries a fresh RangeIndex, so no row identity is released.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.accounting.accountants import Charge, NoiseAllocation, pure_epsilon
from dpframe.accounting.budget import Budget, Number, PrivacyRequest, to_fraction
from dpframe.backends.base import Backend
from dpframe.errors import InvalidArgumentError, InvalidBudgetError, SchemaError
from dpframe.explain import explain_cost
from dpframe.frame import describe_plan
from dpframe.mechanisms.additive import noise_for, release_integer_sums
from dpframe.mechanisms.floors import AccuracyFloor, floor_bounded, floor_discrete
from dpframe.mechanisms.local import (
    LaplaceCopySpec,
    RandomizedResponseSpec,
    laplace_copy_spec,
    laplace_perturb,
    randomized_response,
    rr_estimate,
    rr_spec,
)
from dpframe.noise import SecureRandom
from dpframe.plan.nodes import lineage, unit_rows
from dpframe.row_access import category_codes, numeric_rows, require_rows

if TYPE_CHECKING:
    from dpframe.series import PrivateSeries

__all__ = ["CopyInfo", "estimate_frequencies", "sanitized_copy"]

_PURE_ZCDP = Fraction(1, 2)  # every ε-DP mechanism is ε²/2-zCDP (Bun & Steinke 2016)
_MAX_SCALE_UNITS = 2**52


@dataclass(frozen=True)
class CopyInfo:
    """What a sanitized copy is (stored in ``copy.attrs["dpframe_copy"]``).

    Attributes:
        kind: ``randomized response`` or ``Laplace copy``.
        column: the column (or expression) copied.
        epsilon: the ε each report enjoys (after the length's share and the
            privacy unit's group factor).
        delta: the δ of each report.
        length_noise: the noise of the copy's length (mechanism and scale).
        cost: the budget charged for the whole copy.
        categories: the declared categories (randomized response).
        keep: P(report the true category) (randomized response).
        other: P(report one given other category) (randomized response).
        bounds: the clamping bounds (Laplace copy).
        scale: the Laplace scale b of each value (Laplace copy).
        query: the ledger label.
    """

    kind: Literal["randomized response", "Laplace copy"]
    column: str
    epsilon: float
    delta: float
    length_noise: str
    cost: Budget
    categories: tuple[Any, ...] | None = None
    keep: float | None = None
    other: float | None = None
    bounds: tuple[float, float] | None = None
    scale: float | None = None
    query: str = ""


def _share(value: object) -> Fraction:
    try:
        share = to_fraction(value, "length_share")
    except InvalidBudgetError:
        raise InvalidArgumentError("length_share must be a number in (0, 1).") from None
    if not 0 < share < 1:
        raise InvalidArgumentError(
            "length_share must be in (0, 1): the share of the request that hides the row count."
        )
    return share


def _arrange(n_rows: int, n_hat: int, rng: SecureRandom) -> tuple[npt.NDArray[np.int64], int]:
    """Row positions to report (a secure random order) and how many fillers to add."""
    order = np.lexsort((rng.uniform_below(2**62, n_rows),)) if n_rows else np.zeros(0, np.int64)
    if n_hat <= n_rows:
        return order[:n_hat].astype(np.int64), 0
    return order.astype(np.int64), n_hat - n_rows


def _shuffle(values: npt.NDArray[Any], rng: SecureRandom) -> npt.NDArray[Any]:
    if len(values) < 2:
        return values
    return values[np.lexsort((rng.uniform_below(2**62, len(values)),))]


def sanitized_copy(
    series: PrivateSeries,
    kind: Literal["rr", "laplace"],
    epsilon: Number | None,
    delta: Number | None,
    rho: Number | None,
    length_share: float,
) -> pd.Series:
    """Release a randomized-response or Laplace copy of ``series`` (see the module docstring)."""
    from dpframe.series import require_bounds

    info = series._info
    frame = series._frame
    session = frame._session
    share = _share(length_share)
    delta_q = to_fraction(0 if delta is None else delta, "delta")
    if not 0 <= delta_q < 1:
        raise InvalidBudgetError("delta must be in [0, 1).")
    PrivacyRequest(epsilon=epsilon, delta=delta_q, rho=rho)  # validates before anything else
    rows_per_unit = unit_rows(frame._plan)
    if delta_q > 0 and rows_per_unit > 1:
        raise SchemaError(
            "A copy with delta > 0 is not available with a privacy unit of several rows "
            "(group privacy would multiply delta); use delta=0."
        )
    categories: tuple[Any, ...] = ()
    bounds = (0.0, 0.0)
    if kind == "rr":
        if info.categories is None or len(info.categories) < 2:
            raise SchemaError(
                f"randomized_response() needs at least two declared categories for "
                f"{info.name!r}: declare categories={{{info.name!r}: [...]}}."
            )
        categories = tuple(info.categories)
        name = "randomized response"
    else:
        bounds = require_bounds(info, "laplace_copy")
        if not bounds[1] > bounds[0]:
            raise SchemaError(f"laplace_copy() needs bounds with low < high for {info.name!r}.")
        name = "Laplace copy"
    source = lineage(frame._plan)[0]
    require_rows(session, source)
    label = f"{'randomized_response' if kind == 'rr' else 'laplace_copy'}({series._expr})"
    label += describe_plan(frame._plan)

    def parts(allocation: NoiseAllocation) -> tuple[NoiseAllocation, float]:
        length = NoiseAllocation(allocation.kind, allocation.parameter * share)
        values = NoiseAllocation(allocation.kind, allocation.parameter * (1 - share))
        eps_rows = float(pure_epsilon(values, _PURE_ZCDP)) / rows_per_unit
        return length, eps_rows

    def precheck(allocation: NoiseAllocation) -> None:
        length, eps_rows = parts(allocation)
        noise_for(rows_per_unit, 1.0, length)
        if kind == "laplace":
            spec = laplace_copy_spec(bounds[0], bounds[1], eps_rows, float(delta_q))
            if spec.scale_units > _MAX_SCALE_UNITS:
                raise InvalidBudgetError(
                    "epsilon is so small that the copy's noise would exceed the sampler's "
                    "range; ask for a larger epsilon."
                )
        elif math.exp(-eps_rows) == 1.0:
            raise InvalidBudgetError("epsilon is too small for randomized response.")

    def work(
        backend: Backend, allocation: NoiseAllocation, cost: Budget, _rho: Fraction | None
    ) -> tuple[pd.Series, str]:
        rng = session._rng
        length, eps_rows = parts(allocation)
        noisy, length_spec = release_integer_sums(
            np.zeros(1), rows_per_unit, 1.0, length, rng
        )  # the noise alone; n is added below (integer, exact)
        common = {"column": str(series._expr), "delta": float(delta_q), "cost": cost}
        length_text = f"{length_spec.name}, scale {length_spec.scale:.4g} rows"
        if kind == "rr":
            codes = category_codes(backend, frame._plan, series._expr, categories)
            n_hat = max(0, len(codes) + int(noisy[0]))
            picked, fillers = _arrange(len(codes), n_hat, rng)
            inputs = np.concatenate([codes[picked], np.full(fillers, -1, dtype=np.int64)])
            spec: RandomizedResponseSpec = rr_spec(eps_rows, float(delta_q), len(categories))
            reports = randomized_response(_shuffle(inputs, rng), spec, rng)
            values = pd.Categorical.from_codes(reports.tolist(), categories=pd.Index(categories))
            result = pd.Series(values, name=info.name)
            meta = CopyInfo(
                "randomized response",
                epsilon=eps_rows,
                length_noise=length_text,
                categories=categories,
                keep=spec.keep,
                other=spec.other,
                query=label,
                **common,  # type: ignore[arg-type]
            )
        else:
            (raw,) = numeric_rows(backend, frame._plan, [series._expr])
            n_hat = max(0, len(raw) + int(noisy[0]))
            picked, fillers = _arrange(len(raw), n_hat, rng)
            inputs_f = np.concatenate([raw[picked], np.full(fillers, np.nan)])
            lspec: LaplaceCopySpec = laplace_copy_spec(
                bounds[0], bounds[1], eps_rows, float(delta_q)
            )
            out = laplace_perturb(_shuffle(inputs_f, rng), bounds[0], bounds[1], lspec, rng)
            result = pd.Series(out, name=info.name)
            meta = CopyInfo(
                "Laplace copy",
                epsilon=eps_rows,
                length_noise=length_text,
                bounds=bounds,
                scale=lspec.scale,
                query=label,
                **common,  # type: ignore[arg-type]
            )
        result.attrs["dpframe_copy"] = meta
        return result, f"{len(result)} reports"

    def explain(request: PrivacyRequest, charge: Charge, allocation: NoiseAllocation) -> Any:
        _, eps_rows = parts(allocation)
        if kind == "rr":
            spec = rr_spec(eps_rows, float(delta_q), len(categories))
            m = len(categories) - 1
            floor = AccuracyFloor(
                m * spec.other,
                floor_discrete(m, 1.0, eps_rows, float(delta_q)),
                f"per report: P(wrong category), {m + 1} categories; randomized response "
                "attains the floor",
            )
        else:
            lspec = laplace_copy_spec(bounds[0], bounds[1], eps_rows, float(delta_q))
            a = math.exp(-1 / float(lspec.scale_units))
            floor = AccuracyFloor(
                2 * a / (1 - a * a) * lspec.grid,
                floor_bounded(bounds[1] - bounds[0], eps_rows, float(delta_q)),
                f"per value, bounds {bounds}",
            )
        plain = explain_cost(label, request, charge, session._accountant, session._charges())
        return dataclasses.replace(plain, accuracy=floor)

    mechanism = name if delta_q == 0 else f"{name} (with delta)"
    return session._run(
        label,
        source,
        (epsilon, delta_q if delta_q > 0 else delta, rho),
        mechanism,
        work,
        explain,
        mechanism_delta=delta_q > 0,
        precheck=precheck,
    )


def estimate_frequencies(copy: pd.Series, level: float = 0.95) -> pd.DataFrame:
    """Unbiased counts per category from a randomized-response copy (free post-processing).

    Args:
        copy: a Series returned by ``randomized_response``.
        level: the coverage of the normal-approximation interval.

    Returns:
        One row per declared category: ``estimate`` (unbiased count), ``std``,
        ``low`` and ``high`` (estimate ± z·std), and ``share`` (estimate / reports).
    """
    meta = copy.attrs.get("dpframe_copy") if isinstance(copy, pd.Series) else None
    if not isinstance(meta, CopyInfo) or meta.kind != "randomized response":
        raise InvalidArgumentError(
            "estimate_frequencies() takes a copy returned by randomized_response()."
        )
    if not 0 < float(level) < 1:
        raise InvalidArgumentError("level must be in (0, 1).")
    assert meta.categories is not None
    assert meta.keep is not None
    assert meta.other is not None
    cats = list(meta.categories)
    codes = pd.Categorical(copy, categories=cats).codes.astype(np.int64)
    if (codes < 0).any():
        raise InvalidArgumentError("The copy holds values that are not its declared categories.")
    estimate, std = rr_estimate(codes, len(cats), meta.keep, meta.other)
    z = NormalDist().inv_cdf(0.5 + float(level) / 2)
    total = max(len(copy), 1)
    table: pd.DataFrame = pd.DataFrame(
        {
            "estimate": estimate,
            "std": std,
            "low": estimate - z * std,
            "high": estimate + z * std,
            "share": estimate / total,
        },
        index=pd.Index(cats, name=meta.column),
    )
    return table
