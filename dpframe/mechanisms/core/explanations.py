"""Explanations: what a release would cost and how accurate it would be, computed without data.

Everything here depends only on the query and public facts (bounds, keys,
the budget), so explaining is free and never reads a row.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from dpframe.errors import DPError
from dpframe.mechanisms.calibration.additive import noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.core.floors import AccuracyFloor, floor_bounded, floor_zcdp
from dpframe.mechanisms.moments.aggregates import (
    aggregate_noise,
    measures_for,
    noise_plan,
    spreads_of,
)
from dpframe.plan.labels import user_label
from dpframe.plan.nodes import Aggregate
from dpframe.plan.privacy import Budget, PrivacyRequest

__all__ = [
    "CostView",
    "Explanation",
    "MeasureExplanation",
    "aggregate_floor",
    "explain_aggregate",
    "explain_cost",
    "plain_number",
    "with_thin",
]


def plain_number(value: float) -> str:
    """``value`` to two significant digits, as a person writes it: 600, 12, 0.031, 170,000.

    Outside [1e-4, 1e9) it falls back to scientific notation (``1.7e+12``).
    """
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    if not 1e-4 <= abs(value) < 1e9:
        return f"{value:.2g}"
    rounded = float(f"{value:.2g}")
    decimals = max(0, 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


@dataclass(frozen=True)
class CostView:
    """What the accountant says of a request before any charge (computed by the engine).

    Attributes:
        request: the privacy request.
        allocation: the noise it buys.
        cost: the (ε, δ) the charge would be.
        rho: the ρ charged in zCDP sessions (else None).
        remaining_before: the budget left now.
        remaining_after: the budget left after the charge; None when it would be refused.
    """

    request: PrivacyRequest
    allocation: NoiseAllocation
    cost: Budget
    rho: float | None
    remaining_before: Budget
    remaining_after: Budget | None


@dataclass(frozen=True)
class MeasureExplanation:
    """One noisy measure of a release: its sensitivity, noise scale and 95% half-width."""

    name: str
    sensitivity: float
    mechanism: str
    scale: float
    half_width_95: float


@dataclass(frozen=True)
class Explanation:
    """What a query would cost and release; nothing was spent and no data was read."""

    query: str
    cost: Budget
    rho: float | None
    measures: tuple[MeasureExplanation, ...]
    cells: int
    remaining_before: Budget
    remaining_after: Budget | None
    accuracy: AccuracyFloor | None = None
    #: The answer's accuracy in plain words (e.g. "within ±600 of the true value at 95%").
    headline: str = ""
    #: A composite's outputs (describe, agg, ...): each part's label and its own
    #: accuracy line, at the part's share of the request.
    outputs: tuple[tuple[str, str], ...] = ()
    #: Shown with every noisy measure and the accuracy floor (``explain(..., detail=True)``).
    detailed: bool = False
    #: Many outputs: the row counts below which a cell is too thin to read, whatever
    #: the data (from the bounds and each cell's share; see :func:`with_thin`).
    thin: str = ""

    @property
    def allowed(self) -> bool:
        """False when the budget would refuse the query."""
        return self.remaining_after is not None

    def plain(self) -> str:
        """One plain line: the answer's accuracy, its cost and what would be left."""
        query = user_label(self.query)
        parts = [f"{query}" + (f" = {self.headline}" if self.headline else "")]
        parts.append(f"cost {self.cost}")
        if self.remaining_after is None:
            parts.append(f"would be REFUSED: only {self.remaining_before} left")
        else:
            parts.append(f"{self.remaining_after} left")
        return "; ".join(parts)

    def __str__(self) -> str:
        lines = [self.plain()]
        if self.thin:
            lines.append(f"  {self.thin}")
        lines.append(f"  cost {self.cost}" + (f" (ρ={self.rho:.4g})" if self.rho else ""))
        if self.cells > 1:
            lines.append(f"  {self.cells} groups, one charge (disjoint groups)")
        if self.outputs:
            lines.append(f"  {len(self.outputs)} outputs, one charge split between them:")
            lines.extend(f"    {user_label(label)}: {line}" for label, line in self.outputs)
        if self.detailed or (not self.headline and not self.outputs):
            # The mechanism's detail: asked for, or all there is to say of its accuracy.
            for m in self.measures:
                lines.append(
                    f"  {m.name}: sensitivity {m.sensitivity:.4g}, {m.mechanism} scale "
                    f"{m.scale:.4g}, 95% of errors within ±{m.half_width_95:.4g}"
                )
            if self.accuracy is not None:
                lines.append(f"  {self.accuracy}")
        elif self.measures or self.accuracy is not None:
            lines.append("  (explain(..., detail=True): every noisy measure behind it)")
        if self.remaining_after is None:
            lines.append(f"  would be REFUSED: remaining {self.remaining_before}")
        else:
            lines.append(f"  remaining {self.remaining_before} -> {self.remaining_after}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        first, _, rest = str(self).partition("\n")
        return (
            f"<pre class='dpframe-explain'><b>{html.escape(first)}</b>\n{html.escape(rest)}</pre>"
        )


def explain_aggregate(agg: Aggregate, cost: CostView) -> Explanation:
    """Describe the release of ``agg`` at ``cost`` from public facts only."""
    allocation = cost.allocation
    explained = []
    planned = noise_plan(agg, allocation)
    for (name, sens, quantum, part), spread in zip(
        planned, spreads_of(agg, len(planned)), strict=True
    ):
        _, _, spec = noise_for(sens, quantum, part, spread)
        explained.append(
            MeasureExplanation(
                name,
                sens * quantum,
                spec.name,
                spec.scale,
                spec.abs_quantile(0.95) + spec.rounding,
            )
        )
    extra = aggregate_noise(agg, allocation).undeclared if agg.undeclared else None
    if extra is not None:
        spec = extra.spec
        explained.append(
            MeasureExplanation(
                "rows with undeclared keys (one more cell, free)",
                extra.sensitivity / extra.weight,
                spec.name,
                spec.scale,
                spec.abs_quantile(0.95) + spec.rounding,
            )
        )
    floor = aggregate_floor(agg, allocation, cost.request)
    return Explanation(
        agg.label,
        cost.cost,
        cost.rho,
        tuple(explained),
        agg.n_groups,
        cost.remaining_before,
        cost.remaining_after,
        floor,
        _headline(agg.statistic, explained, agg.n_groups),
    )


def _headline(statistic: str, measures: list[MeasureExplanation], cells: int) -> str:
    """The answer's 95% accuracy in plain words, from public facts only.

    A count or sum is one noisy measure per cell: its 95% half-width is the
    answer's.  A mean's error is the final sum's noise divided by the rows
    counted (private, so shown as a function of n, with two examples).  For
    other statistics the measures below say more than one number could.
    """
    each = " in each group" if cells > 1 else ""
    # a group-by's extra cell (rows with undeclared keys) is not part of the answer's accuracy
    measures = [m for m in measures if "undeclared" not in m.name]
    if statistic in ("count", "sum") and len(measures) == 1:
        return f"within ±{plain_number(measures[0].half_width_95)} of the true value at 95%{each}"
    final = [m.half_width_95 for m in measures if "worst case" in m.name]
    if statistic == "mean" and final:
        width = max(final)
        return (
            f"within about ±{plain_number(width)}/n of the true value at 95%{each}, n the rows "
            f"counted (±{plain_number(width / 1e3)} at n = 1,000; "
            f"±{plain_number(width / 1e5)} at n = 100,000)"
        )
    squares = [m.half_width_95 for m in measures if "squares" in m.name]
    if statistic in ("var", "std") and squares:
        # The sum of squares' noise over n leads (the count's and the sum's are second order).
        width = max(squares)
        line = (
            f"the variance within about ±{plain_number(width)}/n at 95%{each}, n the rows "
            f"counted (±{plain_number(width / 1e3)} at n = 1,000; "
            f"±{plain_number(width / 1e5)} at n = 100,000)"
        )
        return line if statistic == "var" else line + "; the std's error is that over 2·std"
    return ""


def aggregate_floor(
    agg: Aggregate, allocation: NoiseAllocation, request: PrivacyRequest
) -> AccuracyFloor | None:
    """The accuracy floor of a count or sum (one measure per cell); None for other statistics."""
    measures, sensitivities = measures_for(agg)
    if agg.statistic not in ("count", "sum") or len(measures) != 1:
        return None
    _, _, spec = noise_for(sensitivities[0], measures[0].quantum, allocation, spreads_of(agg, 1)[0])
    diameter = sensitivities[0] * measures[0].quantum
    if spec.kind == "laplace":
        a = math.exp(-1 / float(spec.parameter))
        expected = 2 * a / (1 - a * a) * spec.grid
        floor = floor_bounded(diameter, float(allocation.parameter))
        note = f"ε-DP, answers of neighbours up to {diameter:.4g} apart"
    else:
        expected = spec.std * math.sqrt(2 / math.pi)
        floor = floor_zcdp(diameter, float(allocation.parameter))
        kind = "μ-GDP, as (μ²/2)-zCDP" if allocation.currency == "gdp" else "ρ-zCDP"
        note = f"{kind}, answers of neighbours up to {diameter:.4g} apart"
    return AccuracyFloor(expected, floor, note)


def explain_cost(label: str, cost: CostView) -> Explanation:
    """Describe the cost of a selection query (its accuracy is in the method's docstring)."""
    return Explanation(
        label, cost.cost, cost.rho, (), 1, cost.remaining_before, cost.remaining_after
    )


def _width(statistic: str, measures: tuple[MeasureExplanation, ...]) -> float | None:
    """The noise behind one cell's 95% half-width: absolute (count, sum) or over n."""
    kept = [m for m in measures if "undeclared" not in m.name]
    if statistic in ("count", "sum") and len(kept) == 1:
        return kept[0].half_width_95
    words = {"mean": "worst case", "var": "squares", "std": "squares"}.get(statistic)
    found = [m.half_width_95 for m in kept if words is not None and words in m.name]
    return max(found) if found else None


def _aggregate_needs(part: Aggregate, found: Explanation) -> str | None:
    """When a cell of ``part`` reads too thin: rows whatever the data, and values at n rows."""
    width = _width(part.statistic, found.measures)
    if width is None:
        return None
    if part.statistic == "count":  # a count is too thin below its own ±
        return f"{user_label(part.label)}: a cell counting under {plain_number(width)}"
    low, high = part.bounds if part.bounds is not None else (math.nan, math.nan)
    largest, half = max(abs(low), abs(high)), (high - low) / 2
    divisor = {"sum": largest, "mean": largest, "var": half * half, "std": 2 * half * half}
    below = width / divisor[part.statistic] if divisor[part.statistic] > 0 else math.inf
    line = (
        f"{user_label(part.label)}: under {plain_number(math.ceil(below))} rows whatever the data"
    )
    if part.statistic == "sum":
        return line + f"; a sum under {plain_number(width)} at any row count"

    def bar(n: float) -> str:  # the smallest value readable at n rows (its ± is width/n)
        value = math.sqrt(width / (2 * n)) if part.statistic == "std" else width / n
        return plain_number(value)

    what = {"mean": "a mean", "var": "a variance", "std": "a std"}[part.statistic]
    line += f"; {what} under {bar(1e3)} at 1,000 rows, {bar(1e5)} at 100,000"
    if part.statistic == "var" and part.moment_weights[:1] == (0,):  # describe shows the std
        std = [plain_number(math.sqrt(width / (2 * n))) for n in (1e3, 1e5)]
        line += f" (its std under {std[0]} and {std[1]})"
    return line


def _moment_needs(node: Any, found: list[Explanation | None]) -> list[str]:
    """Each off-diagonal entry of a corr/cov matrix: the rows below which it is too thin."""
    halves = [h for _, h in node.centred()]
    names = [name for name, _, _ in node.columns]
    k = len(names)
    needs = []
    for (i, j), each in zip(node.pairs(), found[1 + k :], strict=True):
        if i == j or each is None or not each.measures:
            continue
        width = each.measures[0].half_width_95
        # corr: over half of [−1, 1] when width/n > ½·sd_i·sd_j, and sd ≤ h: n < 2w/(h_i·h_j)
        scale = 2.0 if node.statistic == "corr" else 1.0
        below = math.ceil(scale * width / (halves[i] * halves[j]))
        needs.append(
            f"{node.statistic}({names[i]}, {names[j]}): under {plain_number(below)} rows whatever "
            "the data (more when the columns spread less than their bounds allow)"
        )
    return needs


def _explained(explain: Callable[[Any], Explanation], part: Aggregate) -> Explanation | None:
    """``part`` explained on its own; None when it cannot be (its bar is then left out)."""
    try:
        return explain(part)
    except DPError:
        return None


def with_thin(found: Explanation, node: Any, explain: Callable[[Any], Explanation]) -> Explanation:
    """``found`` with the row counts below which its cells are too thin to read, whatever the data.

    A cell is too thin when its 95% half-width is larger than its value (a
    correlation: when its interval spans over half of [−1, 1]), the bar of
    the warning a release gives (:mod:`dpframe.api.thin`).  Before anything is
    released, the value is known only to lie within the declared bounds, so
    each cell's bar is stated as the row count below which even the largest
    value the bounds allow would be too thin (a count: the count below its ±).
    Public facts only: bounds, each part's share of ε, and its noise.
    ``explain`` explains one part (nothing spent).
    """
    parts = node.parts() if hasattr(node, "parts") else ()
    if not parts and not (isinstance(node, Aggregate) and node.n_groups > 1):
        return found
    templates = node.templates() if hasattr(node, "templates") else ()
    explained = [
        _explained(explain, p) if isinstance(p, Aggregate) and i not in templates else None
        for i, p in enumerate(parts)
    ]
    if hasattr(node, "pairs"):
        needs = _moment_needs(node, explained)
    else:
        pairs = list(zip(parts, explained, strict=True)) if parts else [(node, found)]
        needs = [
            need
            for part, each in pairs
            if isinstance(part, Aggregate) and each is not None
            for need in [_aggregate_needs(part, each)]
            if need is not None
        ]
    if not needs:
        return found
    rows = "".join(f"\n    {need}" for need in needs)
    return replace(
        found,
        thin=(
            "too thin to read (95% ± wider than the value) at this ε, when (a larger ε or fewer "
            f"outputs lower these bars):{rows}"
        ),
    )
