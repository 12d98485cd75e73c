"""PipelineDP adapter of the field worker; runs in ``.bench-venvs/pipeline-dp``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from benchmarks.field_costs import Cost, spent_during
from benchmarks.field_spec import NO_SVT, Built, CostProbes, Release, Releases, Spec

__all__ = ["pipelinedp_releases"]


def pipelinedp_releases(df: pd.DataFrame, spec: Spec) -> Built:
    """PipelineDP's ``DPEngine`` on the ``LocalBackend`` (plain Python iterables).

    Each release builds an engine with its own ``NaiveBudgetAccountant(ε, δ=0)``,
    Laplace noise, one contribution per row (row index as privacy id), public
    partitions.  The accountant splits its ε evenly over the budget requests
    of the aggregation (``MEAN`` requests two, its count and its normalised
    sum; ``VARIANCE`` and the percentiles one each), so every release costs
    ε; the cost recorded is the sum of ``eps × count`` over the accountant's
    ``mechanism_specs`` after ``compute_budgets()``.  Ungrouped statistics
    use a single public partition.  The rows become a list of tuples once, in
    ``load_s``.  Variance and median are the ``VARIANCE`` and
    ``PERCENTILE(50)`` metrics; ``describe()``'s closest equivalent is one
    aggregation per column with the metrics COUNT, MEAN, VARIANCE and
    PERCENTILE(25/50/75), ε split evenly over the columns.  There is no
    sparse vector.
    """
    import pipeline_dp  # type: ignore[import-not-found, unused-ignore]

    names = [spec.small_key, spec.large_key, spec.value, *spec.describe]
    if spec.cross_key is not None:
        names.append(spec.cross_key)
    names = list(dict.fromkeys(names))
    at = {name: i + 1 for i, name in enumerate(names)}
    columns = [
        df[name].fillna(0.0).tolist()
        if name in spec.describe or name == spec.value
        else df[name].tolist()
        for name in names
    ]
    rows = list(zip(range(len(df)), *columns, strict=True))
    backend = pipeline_dp.LocalBackend()
    metrics = pipeline_dp.Metrics
    #: (ε, δ) of every mechanism of every aggregation run, in order.
    spent: list[tuple[float, float]] = []

    def run(
        chosen: list[Any],
        partition: Callable[[Any], Any],
        public: list[Any],
        column: str | None = None,
        epsilon: float | None = None,
    ) -> list[Any]:
        name = column or spec.value
        low, high = spec.describe.get(name, (spec.low, spec.high))
        accountant = pipeline_dp.NaiveBudgetAccountant(
            total_epsilon=epsilon or spec.epsilon, total_delta=0
        )
        engine = pipeline_dp.DPEngine(accountant, backend)
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=chosen,
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            min_value=low,
            max_value=high,
        )
        index = at[name]
        extractors = pipeline_dp.DataExtractors(
            privacy_id_extractor=lambda r: r[0],
            partition_extractor=partition,
            value_extractor=lambda r: r[index],
        )
        result = engine.aggregate(rows, params, extractors, public_partitions=public)
        accountant.compute_budgets()
        spent.extend(
            (m.eps * m.count, (m.delta or 0.0) * m.count) for m in accountant.mechanism_specs
        )
        return list(result)

    def scalar(metric: Any) -> Release:
        def release() -> Any:
            (_, stats), *_ = run([metric], lambda r: 0, [0])
            return float(stats[0])

        return release

    def by(*keys: str) -> Callable[[Any], Any]:
        if len(keys) == 1:
            i = at[keys[0]]
            return lambda r: r[i]
        i, j = at[keys[0]], at[keys[1]]
        return lambda r: (r[i], r[j])

    def describe() -> Any:
        part = spec.epsilon / len(spec.describe)
        chosen = [metrics.COUNT, metrics.MEAN, metrics.VARIANCE]
        chosen += [metrics.PERCENTILE(p) for p in (25, 50, 75)]
        return {name: run(chosen, lambda r: 0, [0], name, part) for name in spec.describe}

    small, large = spec.keys[spec.small_key], spec.keys[spec.large_key]
    callables: dict[str, Release] = {
        "count": scalar(metrics.COUNT),
        "sum": scalar(metrics.SUM),
        "mean": scalar(metrics.MEAN),
        "gb_count": lambda: run([metrics.COUNT], by(spec.small_key), small),
        "gb_sum": lambda: run([metrics.SUM], by(spec.large_key), large),
        "var": scalar(metrics.VARIANCE),
        "median": scalar(metrics.PERCENTILE(50)),
        "describe": describe,
    }
    api = {
        "count": "DPEngine.aggregate(metrics=[COUNT], public_partitions=[0])",
        "sum": "... metrics=[SUM], min_value, max_value",
        "mean": "... metrics=[MEAN], min_value, max_value",
        "gb_count": "... metrics=[COUNT], public_partitions=keys",
        "gb_sum": "... metrics=[SUM], public_partitions=keys",
        "var": "... metrics=[VARIANCE]",
        "median": "... metrics=[PERCENTILE(50)]",
        "describe": "per column: metrics=[COUNT, MEAN, VARIANCE, PERCENTILE(25/50/75)]",
    }
    if spec.cross_key is not None:
        pairs = list(zip(*spec.cross_keys(), strict=True))
        partition = by(spec.large_key, spec.cross_key)
        callables["gb_cross"] = lambda: run([metrics.SUM], partition, pairs)
        api["gb_cross"] = "... metrics=[SUM], public_partitions=100,000 (county, age) pairs"

    def cost(release: Release) -> Callable[[], Cost]:
        return lambda: spent_during(
            release, lambda: spent, "NaiveBudgetAccountant.mechanism_specs: Σ eps × count"
        )

    releases: Releases = {**callables, "svt": NO_SVT + " in PipelineDP"}
    costs: CostProbes = {role: cost(fn) for role, fn in callables.items()}
    return Built(releases, api, costs)
