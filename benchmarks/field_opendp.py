"""OpenDP (Polars API) adapter of the field worker; runs in ``.bench-venvs/opendp``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from benchmarks.field_costs import Cost
from benchmarks.field_spec import NO_SVT, Built, CostProbes, Releases, Spec

__all__ = ["opendp_releases"]


def opendp_releases(df: pd.DataFrame, spec: Spec) -> Built:
    """OpenDP's Polars API: one compositor context, one ``context.query(epsilon=ε)`` per release.

    The context has a large total budget; each release asks for ε = ``spec.epsilon``
    and OpenDP calibrates the noise of all the query's expressions so that
    the whole query costs that ε (a select of several expressions splits it).
    The cost reported is ``query.resolve().map(context.d_in)``, the
    privacy map of the query's measurement at the context's unit (one row
    added or removed: ``unit_of(contributions=1)``, symmetric distance).
    ``Margin(max_length=n)`` is the public bound on the number of rows that
    OpenDP needs for float sums (it accounts for rounding in the sum).
    Group-bys join the released table with the public key set (``with_keys``).
    Closest equivalents: variance from one query releasing the count, the sum
    and the sum of squares; ``describe()`` as one query releasing the count
    and, per column, the sum, the sum of squares and three quartiles.
    Quantile candidates are dpframe's grid (``spec.candidates`` equally
    spaced values over the bounds).
    """
    import opendp.prelude as dp  # type: ignore[import-not-found, unused-ignore]
    import polars as pl  # type: ignore[import-not-found, unused-ignore]

    dp.enable_features("contrib")
    lf = pl.from_pandas(df).lazy()
    context = dp.Context.compositor(
        data=lf,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1e12),
        margins=[dp.polars.Margin(max_length=len(df))],
    )
    eps, bounds, value = spec.epsilon, (spec.low, spec.high), spec.value
    small_keys = pl.LazyFrame({spec.small_key: spec.keys[spec.small_key]})
    large_keys = pl.LazyFrame({spec.large_key: spec.keys[spec.large_key]})

    def filled(name: str) -> Any:
        return pl.col(name).cast(pl.Float64).fill_null(0.0)

    def square_bounds(low: float, high: float) -> tuple[float, float]:
        top = max(low * low, high * high)
        return (0.0 if low <= 0.0 <= high else min(low * low, high * high), top)

    col = filled(value)

    def query() -> Any:
        return context.query(epsilon=eps)

    def describe_exprs() -> list[Any]:
        exprs = [dp.len()]
        for name, (low, high) in spec.describe.items():
            c = filled(name)
            exprs += [
                c.dp.sum((low, high)).alias(f"{name} sum"),
                (c * c).dp.sum(square_bounds(low, high)).alias(f"{name} ss"),
            ]
            exprs += [
                c.dp.quantile(q, spec.grid(low, high)).alias(f"{name} {q}")
                for q in (0.25, 0.5, 0.75)
            ]
        return exprs

    #: role -> the unreleased query (a fresh one per call).
    plans: dict[str, Callable[[], Any]] = {
        "count": lambda: query().select(dp.len()),
        "sum": lambda: query().select(col.dp.sum(bounds)),
        "mean": lambda: query().select(col.dp.mean(bounds)),
        "gb_count": lambda: query().group_by(spec.small_key).agg(dp.len()).with_keys(small_keys),
        "gb_sum": lambda: (
            query().group_by(spec.large_key).agg(col.dp.sum(bounds)).with_keys(large_keys)
        ),
        "var": lambda: query().select(
            dp.len(),
            col.dp.sum(bounds).alias("s"),
            (col * col).dp.sum(square_bounds(*bounds)).alias("ss"),
        ),
        "median": lambda: query().select(col.dp.median(spec.grid(*bounds))),
        "describe": lambda: query().select(*describe_exprs()),
    }

    def item(role: str) -> Callable[[], Any]:
        return lambda: plans[role]().release().collect().item()

    def frame(role: str) -> Callable[[], Any]:
        return lambda: plans[role]().release().collect()

    def var() -> Any:
        n, s, ss = plans["var"]().release().collect().row(0)
        n = max(float(n), 1.0)
        return max(ss / n - (s / n) ** 2, 0.0)

    releases: Releases = {
        "count": item("count"),
        "sum": item("sum"),
        "mean": item("mean"),
        "gb_count": frame("gb_count"),
        "gb_sum": frame("gb_sum"),
        "var": var,
        "median": item("median"),
        "svt": NO_SVT + " in OpenDP 0.16 (make_noise_threshold thresholds released counts)",
        "describe": frame("describe"),
    }
    api = {
        "count": "context.query(epsilon=1).select(dp.len())",
        "sum": f'select(pl.col("{value}").fill_null(0).dp.sum(bounds))',
        "mean": f'select(pl.col("{value}").fill_null(0).dp.mean(bounds))',
        "gb_count": "group_by(key).agg(dp.len()).with_keys(public keys)",
        "gb_sum": "group_by(key).agg(pl.col(v).fill_null(0).dp.sum(bounds)).with_keys(...)",
        "var": "select(dp.len(), col.dp.sum(b), (col*col).dp.sum(b²)) (no variance expression)",
        "median": f"col.dp.median({spec.candidates} candidates)",
        "svt": "n/a",
        "describe": "one select: dp.len() + per column sum, sum of squares, 3 dp.quantile",
    }
    if spec.cross_key is not None:
        large, cross = spec.cross_keys()
        cross_keys = pl.LazyFrame({spec.large_key: large, spec.cross_key: cross})
        by = [spec.large_key, spec.cross_key]
        plans["gb_cross"] = lambda: (
            query().group_by(by).agg(col.dp.sum(bounds)).with_keys(cross_keys)
        )
        releases["gb_cross"] = frame("gb_cross")
        api["gb_cross"] = f"group_by({by}).agg(...dp.sum(bounds)).with_keys(100,000 pairs)"

    def cost(role: str) -> Callable[[], Cost]:
        def probe() -> Cost:
            spent = plans[role]().resolve().map(context.d_in)
            return {
                "epsilon": float(spent),
                "delta": 0.0,
                "source": "query.resolve().map(context.d_in) (MaxDivergence)",
            }

        return probe

    costs: CostProbes = {role: cost(role) for role in plans}
    return Built(releases, api, costs)
