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
3. every kept row is perturbed on its own (:mod:`dpframe.mechanisms.copies.local`).

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
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import InvalidArgumentError, InvalidBudgetError, SchemaError
from dpframe.mechanisms.calibration.additive import noise_for, release_integer_sums
from dpframe.mechanisms.copies.local import (
    LaplaceCopySpec,
    RandomizedResponseSpec,
    laplace_copy_spec,
    laplace_perturb,
    randomized_response,
    rr_estimate,
    rr_spec,
)
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.core.explanations import Explanation
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.floors import AccuracyFloor, floor_bounded, floor_discrete
from dpframe.mechanisms.core.work import Units, Work
from dpframe.noise import SecureRandom
from dpframe.plan.nodes import unit_rows
from dpframe.plan.privacy import Budget, to_fraction
from dpframe.plan.releases import SanitizedCopy

__all__ = ["CopyInfo", "SanitizedCopyFamily", "check_length_share", "estimate_frequencies"]

_PURE_ZCDP = Fraction(1, 2)  # every ε-DP mechanism is ε²/2-zCDP (Bun & Steinke 2016)
#: The longest copy (a public cap: clipping the noisy length at it is post-processing).
MAX_COPY_ROWS = 2**27
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


def check_length_share(value: object) -> Fraction:
    """The share of a copy's request that hides the row count: a number in (0, 1)."""
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


@dataclass(frozen=True)
class _CopyNoise:
    """A copy's privacy map: the length's allocation and each report's ε."""

    length: NoiseAllocation
    eps_rows: float


class SanitizedCopyFamily(Family[SanitizedCopy]):
    """Randomized-response and Laplace copies with a noisy length (see the module docstring)."""

    node_type = SanitizedCopy

    def work(self, node: SanitizedCopy) -> Work:
        """One noisy value per row."""
        return Work(per_row=Units(noisy_values=1))

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (CopyInfo,)

    def rows_needed(self, node: SanitizedCopy) -> str:
        """Copies shuffle, cut and pad the rows to a noisy length: all rows in one place."""
        return (
            "a sanitized copy shuffles the rows and cuts or pads them to a noisy length "
            "(which hides the row count)"
        )

    def delta_of_its_own(self, node: SanitizedCopy) -> bool:
        """A copy with δ > 0 spends it on the reports (charged as requested)."""
        return node.privacy.delta > 0

    def mechanism_of(self, node: SanitizedCopy, allocation: NoiseAllocation) -> str:
        """``randomized response`` or ``Laplace copy`` (with delta)."""
        name = "randomized response" if node.kind == "rr" else "Laplace copy"
        return name if node.privacy.delta == 0 else f"{name} (with delta)"

    def privacy_map(self, node: SanitizedCopy, allocation: NoiseAllocation) -> _CopyNoise:
        """The length's share and the reports' ε (group privacy: divided by k rows)."""
        rows_per_unit = unit_rows(node.plan)
        if node.privacy.delta > 0 and rows_per_unit > 1:
            raise SchemaError(
                "A copy with delta > 0 is not available with a privacy unit of several rows "
                "(group privacy would multiply delta); use delta=0."
            )
        share = node.length_share
        length = allocation.scaled(Fraction(share))
        values = allocation.scaled(1 - Fraction(share))
        eps_rows = float(pure_epsilon(values, _PURE_ZCDP)) / rows_per_unit
        _, _, length_spec = noise_for(rows_per_unit, 1.0, length)
        if 40 * length_spec.std > MAX_COPY_ROWS // 2:
            raise InvalidBudgetError(
                "epsilon is so small that the copy's noisy length could reach millions of "
                "filler rows; ask for a larger epsilon (or a larger length_share)."
            )
        delta = float(node.privacy.delta)
        if node.kind == "laplace":
            spec = laplace_copy_spec(node.bounds[0], node.bounds[1], eps_rows, delta)
            if spec.scale_units > _MAX_SCALE_UNITS:
                raise InvalidBudgetError(
                    "epsilon is so small that the copy's noise would exceed the sampler's "
                    "range; ask for a larger epsilon."
                )
        elif math.exp(-eps_rows) == 1.0:
            raise InvalidBudgetError("epsilon is too small for randomized response.")
        return _CopyNoise(length, eps_rows)

    def release(self, run: Released[SanitizedCopy]) -> tuple[Any, str]:
        """A noisy length, a secure random order, one perturbed report per kept row."""
        node = run.node
        rng = run.rng
        noise: _CopyNoise = run.noise
        rows_per_unit = unit_rows(node.plan)
        delta_q = float(node.privacy.delta)
        label = node.label
        noisy, length_spec = release_integer_sums(
            np.zeros(1), rows_per_unit, 1.0, noise.length, rng
        )  # the noise alone; n is added below (integer, exact)
        common = {"column": str(node.expr), "delta": delta_q, "cost": run.cost}
        length_text = f"{length_spec.name}, scale {length_spec.scale:.4g} rows"
        if node.kind == "rr":
            categories = node.categories
            codes = run.backend.category_codes(node.plan, node.expr, categories)
            n_hat = min(max(0, len(codes) + int(noisy[0])), MAX_COPY_ROWS)
            picked, fillers = _arrange(len(codes), n_hat, rng)
            inputs = np.concatenate([codes[picked], np.full(fillers, -1, dtype=np.int64)])
            spec: RandomizedResponseSpec = rr_spec(noise.eps_rows, delta_q, len(categories))
            reports = randomized_response(_shuffle(inputs, rng), spec, rng)
            values = pd.Categorical.from_codes(reports.tolist(), categories=pd.Index(categories))
            result = pd.Series(values, name=node.name)
            meta = CopyInfo(
                "randomized response",
                epsilon=noise.eps_rows,
                length_noise=length_text,
                categories=categories,
                keep=spec.keep,
                other=spec.other,
                query=label,
                **common,  # type: ignore[arg-type]
            )
        else:
            low, high = node.bounds
            (raw,) = run.backend.numeric_rows(node.plan, [node.expr])
            n_hat = min(max(0, len(raw) + int(noisy[0])), MAX_COPY_ROWS)
            picked, fillers = _arrange(len(raw), n_hat, rng)
            inputs_f = np.concatenate([raw[picked], np.full(fillers, np.nan)])
            lspec: LaplaceCopySpec = laplace_copy_spec(low, high, noise.eps_rows, delta_q)
            out = laplace_perturb(_shuffle(inputs_f, rng), low, high, lspec, rng)
            result = pd.Series(out, name=node.name)
            meta = CopyInfo(
                "Laplace copy",
                epsilon=noise.eps_rows,
                length_noise=length_text,
                bounds=node.bounds,
                scale=lspec.scale,
                query=label,
                **common,  # type: ignore[arg-type]
            )
        result.attrs["dpframe_copy"] = meta
        return result, f"{len(result)} reports"

    def explain(self, node: SanitizedCopy, asked: Asked) -> Explanation:
        """The cost, and each report's error next to the floor no mechanism can beat."""
        noise = self.privacy_map(node, asked.allocation)
        eps_rows, delta_q = noise.eps_rows, float(node.privacy.delta)
        if node.kind == "rr":
            spec = rr_spec(eps_rows, delta_q, len(node.categories))
            m = len(node.categories) - 1
            floor = AccuracyFloor(
                m * spec.other,
                floor_discrete(m, 1.0, eps_rows, delta_q),
                f"per report: P(wrong category), {m + 1} categories; randomized response "
                "attains the floor",
            )
        else:
            low, high = node.bounds
            lspec = laplace_copy_spec(low, high, eps_rows, delta_q)
            a = math.exp(-1 / float(lspec.scale_units))
            floor = AccuracyFloor(
                2 * a / (1 - a * a) * lspec.grid,
                floor_bounded(high - low, eps_rows, delta_q),
                f"per value, bounds {node.bounds}",
            )
        return dataclasses.replace(asked.cost_only(node.label), accuracy=floor)


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
