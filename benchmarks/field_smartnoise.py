"""SmartNoise SQL adapter of the field worker; runs in ``.bench-venvs/smartnoise-sql``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.field_costs import Cost, per_measurement_epsilon
from benchmarks.field_spec import NO_SVT, Built, CostProbes, Release, Releases, Spec

__all__ = ["smartnoise_releases"]


def smartnoise_releases(df: pd.DataFrame, spec: Spec) -> Built:
    """SmartNoise SQL over the pandas frame (``snsql.from_df``), one ``execute`` per release.

    SmartNoise charges the reader's ``Privacy(epsilon)`` to *every* noisy
    column a query measures: ``AVG`` is a noisy ``SUM`` over a noisy
    ``COUNT`` and costs 2ε, ``VAR`` 3ε.  So that every release costs
    ``spec.epsilon`` in total, each query gets its own ``Privacy``: its
    cost at ε per measurement (``reader.get_privacy_cost``, which runs
    nothing) sets the ε per measurement (``per_measurement_epsilon``), and
    the release sets ``reader.privacy`` to it before ``execute`` (the reader
    rebuilds its mechanisms from ``reader.privacy`` on every query; one
    reader, because building one over a large frame takes seconds to a
    minute).  A query whose cost cannot be computed (the reader refuses its
    noise scale) is not run.  The cost recorded is ``get_privacy_cost`` at
    the configured privacy (its δ ≈ 1e-15 is the odometer's tolerance term;
    the Laplace mechanisms have δ = 0).

    Metadata: row privacy, the bounded columns with their public bounds, and
    ``censor_dims: False`` (no thresholding of group-by keys).  SQL has no
    public key set: groups absent from the data are not released, groups
    present are released without thresholding.  ``max_ids: 1``.  Variance is
    ``VAR``; there is no median (the grammar parses ``PERCENTILE_CONT`` but
    the private reader does not implement it) and no sparse vector;
    ``describe()``'s closest equivalent is one SELECT of ``COUNT(*)`` and, per
    column, ``AVG`` and ``STDDEV``.
    """
    import snsql  # type: ignore[import-not-found, unused-ignore]

    bounded = {spec.value: (spec.low, spec.high), **spec.describe}
    table: dict[str, Any] = {
        "row_privacy": True,
        "rows": len(df),
        "censor_dims": False,
        "max_ids": 1,
    }
    for name, (low, high) in bounded.items():
        table[name] = {"type": "float", "lower": low, "upper": high, "nullable": False}
    keys = [spec.small_key, spec.large_key]
    if spec.cross_key is not None:
        keys.append(spec.cross_key)
    for name in keys:
        if name not in bounded:
            table[name] = {"type": "string"}
    frame = df[list(dict.fromkeys([*bounded, *keys]))].copy()
    for name in bounded:
        frame[name] = frame[name].astype(np.float64).fillna(0.0)
    meta = {"Data": {"Schema": {"T": table}}}
    unit = spec.epsilon

    def privacy(epsilon: float) -> Any:
        return snsql.Privacy(epsilon=epsilon, delta=0.0)

    reader = snsql.from_df(frame, privacy=privacy(unit), metadata=meta)
    v = spec.value
    moments = ", ".join(f"AVG({c}), STDDEV({c})" for c in spec.describe)
    queries = {
        "count": "SELECT COUNT(*) FROM Schema.T",
        "sum": f"SELECT SUM({v}) FROM Schema.T",
        "mean": f"SELECT AVG({v}) FROM Schema.T",
        "gb_count": f"SELECT {spec.small_key}, COUNT(*) FROM Schema.T GROUP BY {spec.small_key}",
        "gb_sum": f"SELECT {spec.large_key}, SUM({v}) FROM Schema.T GROUP BY {spec.large_key}",
        "var": f"SELECT VAR({v}) FROM Schema.T",
        "describe": f"SELECT COUNT(*), {moments} FROM Schema.T",
    }
    if spec.cross_key is not None:
        pair = f"{spec.large_key}, {spec.cross_key}"
        queries["gb_cross"] = f"SELECT {pair}, SUM({v}) FROM Schema.T GROUP BY {pair}"

    def cost_at(epsilon: float, text: str) -> tuple[float, float]:
        reader.privacy = privacy(epsilon)
        eps, delta = reader.get_privacy_cost(text)
        return float(eps), float(delta)

    releases: Releases = {}
    api: dict[str, str] = {}
    costs: CostProbes = {}
    for role, text in queries.items():
        try:
            unit_total, _ = cost_at(unit, text)
            each = per_measurement_epsilon(spec.epsilon, unit_total, unit)
        except Exception as exc:  # the reader refuses the query (noise scale too large)
            reason = f"{type(exc).__name__}: {exc}"[:300]
            releases[role] = f"error: {reason}"
            api[role] = f'reader.execute("{text}")'
            costs[role] = _refused(reason)
            continue
        measures = round(unit_total / unit)
        api[role] = f'reader.execute("{text}") at Privacy(epsilon={each:.4g}) × {measures}'
        releases[role] = _release(
            reader, privacy(each), text, scalar=role in ("count", "sum", "mean", "var")
        )
        costs[role] = _cost(cost_at, each, text)
    releases["median"] = "no median or percentile in SmartNoise SQL's private reader"
    releases["svt"] = NO_SVT + " in SmartNoise SQL"
    return Built(releases, api, costs)


def _release(reader: Any, privacy: Any, text: str, *, scalar: bool) -> Release:
    def release() -> Any:
        reader.privacy = privacy
        out = reader.execute(text)
        return float(out[1][0]) if scalar else out

    return release


def _cost(
    cost_at: Callable[[float, str], tuple[float, float]], each: float, text: str
) -> Callable[[], Cost]:
    def probe() -> Cost:
        eps, delta = cost_at(each, text)
        return {
            "epsilon": eps,
            "delta": delta,
            "source": "reader.get_privacy_cost(query) at the configured Privacy",
        }

    return probe


def _refused(reason: str) -> Callable[[], Cost]:
    return lambda: {"error": reason, "source": "reader.get_privacy_cost(query) raised"}
