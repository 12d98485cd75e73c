"""Privacy-cost bookkeeping of the field benchmark: what each release spends, per library.

Imported by ``benchmarks/field_worker.py`` inside the other libraries'
virtual environments, so this module uses the standard library only (no
dpframe, no numpy); ``benchmarks.field_report`` uses it too.

Every release of the field benchmark is configured to cost ε in total (the
spec's ``epsilon``), not ε per internal measurement: a library whose query
releases several noisy measurements (SmartNoise SQL's ``AVG`` is a noisy
``SUM`` over a noisy ``COUNT``, each charged the reader's ε) gets a smaller
per-measurement ε (:func:`per_measurement_epsilon`).  The cost each library
reports for each query (:class:`Cost`) goes into the worker's JSON output, so
the report can show it next to the timings and errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict

__all__ = [
    "MEAN_NEIGHBOURS",
    "Cost",
    "annotate",
    "cost_cell",
    "is_exact",
    "mean_comparable",
    "measure_costs",
    "neighbours_short",
    "per_measurement_epsilon",
    "spent_during",
    "summed",
]

#: Relative tolerance for "the library spent exactly ε".
REL_TOL = 1e-6


class Cost(TypedDict, total=False):
    """A query's privacy cost as the library reports it (or why there is none)."""

    epsilon: float
    delta: float
    #: the library call that reported the cost, e.g. ``reader.get_privacy_cost(q)``.
    source: str
    #: set instead of ``epsilon`` when the cost could not be established.
    error: str


def per_measurement_epsilon(target: float, unit_total: float, unit: float) -> float:
    """The ε per measurement that makes a query's total cost ``target``.

    ``unit_total`` is the query's total cost when each of its measurements is
    given ``unit``; basic composition makes the total linear in the
    per-measurement ε, so the answer is ``unit * target / unit_total``.
    For SmartNoise SQL's ``AVG`` at ε = 1: total 2 at unit 1, so 0.5 each.
    """
    for name, x in (("target", target), ("unit_total", unit_total), ("unit", unit)):
        if not math.isfinite(x) or x <= 0.0:
            raise ValueError(f"{name} must be a positive finite ε, got {x!r}")
    return unit * target / unit_total


def summed(parts: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Basic composition of (ε, δ) pairs: the sums."""
    eps = delta = 0.0
    for e, d in parts:
        eps += float(e)
        delta += float(d)
    return eps, delta


def spent_during(
    call: Callable[[], Any], ledger: Callable[[], Sequence[tuple[float, float]]], source: str
) -> Cost:
    """The cost of one ``call``: basic composition of the entries it adds to ``ledger()``.

    ``ledger`` returns the library's list of spent (ε, δ) pairs, e.g.
    diffprivlib's ``BudgetAccountant.spent_budget``; entries already there
    before the call are not counted.
    """
    before = len(ledger())
    call()
    eps, delta = summed(ledger()[before:])
    return {"epsilon": eps, "delta": delta, "source": source}


def measure_costs(probes: Mapping[str, Callable[[], Cost]]) -> dict[str, Cost]:
    """Run every cost probe; a probe that raises becomes a :class:`Cost` with ``error``."""
    out: dict[str, Cost] = {}
    for role, probe in probes.items():
        try:
            out[role] = probe()
        except Exception as exc:  # report, do not abort the other queries
            out[role] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out


def is_exact(cost: Cost | None, target: float, rel_tol: float = REL_TOL) -> bool:
    """Whether the cost is ``target`` ε (within ``rel_tol``)."""
    if cost is None or "epsilon" not in cost:
        return False
    return math.isclose(cost["epsilon"], target, rel_tol=rel_tol)


def annotate(
    cells: dict[str, dict[str, Any]], names: Mapping[str, str], costs: Mapping[str, Cost]
) -> None:
    """Add ``epsilon_spent`` (and ``delta_spent``) to per-label result cells, in place.

    ``cells`` is keyed by query label, ``names`` maps query role to label and
    ``costs`` is keyed by role.  Cells of queries without a known cost are
    left alone.
    """
    for role, label in names.items():
        cost, cell = costs.get(role), cells.get(label)
        if cell is None or cost is None or "epsilon" not in cost:
            continue
        cell["epsilon_spent"] = cost["epsilon"]
        cell["delta_spent"] = cost.get("delta", 0.0)


def cost_cell(cost: Cost | None, target: float) -> str:
    """A report cell: the ε spent, flagged when it is not ``target``."""
    if cost is None:
        return "n/a"
    if "epsilon" not in cost:
        return "unknown" + (" (refused)" if "error" in cost else "")
    eps = cost["epsilon"]
    text = f"{eps:.4g}"
    return text if is_exact(cost, target) else f"**{text}** (≠ {target:g})"


#: How each library's mean treats neighbouring data sets (for the accuracy table).
#: lib -> (neighbouring relation, how n is treated, what the mean releases).
MEAN_NEIGHBOURS: dict[str, tuple[str, str, str]] = {
    "dpframe": (
        "add/remove one row",
        "n private",
        "centre + noisy centred sum / noisy count (the centre: the midpoint, or a"
        " private rough mean from part of ε)",
    ),
    "opendp": (
        "add/remove one row (`unit_of(contributions=1)`, symmetric distance)",
        "n private",
        "`dp.mean`: noisy sum / noisy length, ε/2 each",
    ),
    "diffprivlib": (
        "substitute one row (sensitivity (U − L)/n)",
        "n public",
        "`tools.mean`: exact mean + Laplace noise, no count noise; its ε is not"
        " comparable to an add/remove ε",
    ),
    "smartnoise-sql": (
        "add/remove one row (`row_privacy`, OpenDP symmetric distance)",
        "n private",
        "`AVG`: noisy SUM / noisy COUNT, each charged the reader's ε per measurement",
    ),
    "pipeline-dp": (
        "add/remove one privacy unit (row index as id, one contribution)",
        "n private",
        "`MEAN`: noisy count and noisy normalised sum, ε/2 each",
    ),
}


def neighbours_short(lib: str) -> str:
    """E.g. "add/remove one row, n private" (n/a for a library not in :data:`MEAN_NEIGHBOURS`)."""
    if lib not in MEAN_NEIGHBOURS:
        return "n/a"
    relation, n, _ = MEAN_NEIGHBOURS[lib]
    return f"{relation.split(' (')[0]}, {n}"


def mean_comparable(lib: str, epsilon_spent: float | None, target: float) -> str | None:
    """Why a library's mean error cannot be compared with dpframe's at ``target`` ε, or None.

    Comparable: dpframe's neighbouring relation (add/remove one row or unit,
    n private) and a recorded cost of exactly ``target``.
    """
    if lib not in MEAN_NEIGHBOURS:
        return "neighbouring relation not known"
    relation, n, _ = MEAN_NEIGHBOURS[lib]
    if not relation.startswith("add/remove") or n != "n private":
        return neighbours_short(lib)
    if epsilon_spent is None:
        return "ε spent not recorded"
    if not math.isclose(epsilon_spent, target, rel_tol=REL_TOL):
        return f"ε spent {epsilon_spent:.4g}"
    return None
