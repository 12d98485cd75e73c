"""diffprivlib adapter of the field worker; runs in ``.bench-venvs/diffprivlib``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.field_costs import Cost, spent_during
from benchmarks.field_spec import NO_SVT, Built, CostProbes, Releases, Spec

__all__ = ["diffprivlib_releases"]


def diffprivlib_releases(df: pd.DataFrame, spec: Spec) -> Built:
    """diffprivlib's ``tools`` (numpy-like functions) with one unlimited ``BudgetAccountant``.

    Row count: the Geometric mechanism on ``len(df)`` (``tools`` has no row
    count; the mechanism is not recorded by the accountant, so its cost is
    the mechanism's ``epsilon``).  Group-by count: ``tools.histogram`` over
    the category codes of the key against its public keys (one bin per
    key).  There is no grouped sum and no sparse vector.  ``tools.mean``,
    ``tools.var`` and ``tools.median`` treat the row count as public (their
    sensitivity is for substituting one row).  ``describe()``'s closest
    equivalent: a Geometric count plus, per column, ``tools.mean``,
    ``tools.std`` and ``tools.quantile`` of the three quartiles (which
    splits its ε over the three), ε split evenly over these releases.
    Costs: the entries each release adds to the accountant's
    ``spent_budget`` (plus the Geometric counts' ε).
    """
    from diffprivlib import tools  # type: ignore[import-not-found, unused-ignore]
    from diffprivlib.accountant import BudgetAccountant  # type: ignore[import-not-found, unused-ignore]
    from diffprivlib.mechanisms import Geometric  # type: ignore[import-not-found, unused-ignore]

    accountant = BudgetAccountant()
    eps, bounds = spec.epsilon, (spec.low, spec.high)
    values = df[spec.value].to_numpy(dtype=np.float64)
    small_keys = spec.keys[spec.small_key]
    n_keys = len(small_keys)
    part = eps / (1 + 3 * len(spec.describe))

    def count() -> Any:
        return Geometric(epsilon=eps, sensitivity=1).randomise(len(df))

    def total() -> Any:
        return tools.sum(values, epsilon=eps, bounds=bounds, accountant=accountant)

    def mean() -> Any:
        return tools.mean(values, epsilon=eps, bounds=bounds, accountant=accountant)

    def gb_count() -> Any:
        codes = pd.Categorical(df[spec.small_key], categories=small_keys).codes
        hist, _ = tools.histogram(
            codes, epsilon=eps, bins=n_keys, range=(0, n_keys), accountant=accountant
        )
        return hist

    def var() -> Any:
        return tools.var(values, epsilon=eps, bounds=bounds, accountant=accountant)

    def median() -> Any:
        return tools.median(values, epsilon=eps, bounds=bounds, accountant=accountant)

    def describe() -> Any:
        out: dict[str, Any] = {"count": Geometric(epsilon=part, sensitivity=1).randomise(len(df))}
        for name, b in spec.describe.items():
            x = df[name].to_numpy(dtype=np.float64)
            out[name] = (
                tools.mean(x, epsilon=part, bounds=b, accountant=accountant),
                tools.std(x, epsilon=part, bounds=b, accountant=accountant),
                tools.quantile(x, [0.25, 0.5, 0.75], epsilon=part, bounds=b, accountant=accountant),
            )
        return out

    releases: Releases = {
        "count": count,
        "sum": total,
        "mean": mean,
        "gb_count": gb_count,
        "gb_sum": "no grouped sum in diffprivlib",
        "var": var,
        "median": median,
        "svt": NO_SVT + " in diffprivlib",
        "describe": describe,
        "gb_cross": "no grouped sum in diffprivlib",
    }
    api = {
        "count": "mechanisms.Geometric(epsilon=1, sensitivity=1).randomise(len(df))",
        "sum": "tools.sum(x, epsilon=1, bounds=bounds)",
        "mean": "tools.mean(x, epsilon=1, bounds=bounds)",
        "gb_count": f"tools.histogram(codes against public keys, bins={n_keys})",
        "var": "tools.var(x, epsilon=1, bounds=bounds)",
        "median": "tools.median(x, epsilon=1, bounds=bounds)",
        "describe": "Geometric count + per column tools.mean, tools.std, tools.quantile(3 q)",
    }

    def ledger() -> list[tuple[float, float]]:
        return [(float(e), float(d)) for e, d in accountant.spent_budget]

    def accounted(release: Callable[[], Any], geometric: float = 0.0) -> Callable[[], Cost]:
        def probe() -> Cost:
            cost = spent_during(release, ledger, "BudgetAccountant.spent_budget")
            if geometric:
                cost["epsilon"] = cost.get("epsilon", 0.0) + geometric
                cost["source"] += " + Geometric(epsilon).epsilon of the count"
            return cost

        return probe

    def geometric_only() -> Cost:
        mech = Geometric(epsilon=eps, sensitivity=1)
        return {
            "epsilon": float(mech.epsilon),
            "delta": float(mech.delta),
            "source": "Geometric(epsilon, sensitivity=1).epsilon (no accountant entry)",
        }

    costs: CostProbes = {
        "count": geometric_only,
        "sum": accounted(total),
        "mean": accounted(mean),
        "gb_count": accounted(gb_count),
        "var": accounted(var),
        "median": accounted(median),
        "describe": accounted(describe, geometric=part),
    }
    return Built(releases, api, costs)
