"""Worker for ``benchmarks.run_field``: one DP library's part of the workload, as JSON.

This file runs *inside another library's virtual environment*
(``.bench-venvs/<lib>/``), started by ``run_field`` as a subprocess::

    .bench-venvs/opendp/bin/python benchmarks/field_worker.py opendp \
        --spec spec.json --data data-100000.parquet --repeats 3 --accuracy-data acc.parquet

It must not import dpframe (nor anything else from this repository): only
the standard library, numpy, pandas and the library measured.  The data
(written by ``run_field`` from ``benchmarks.data.census_frame``) and the
query parameters (bounds, public keys, ε) come from the files given, so
every library sees the same table and the same queries.

Output (stdout, one JSON object): the library's version, the setup time
(``load_s``, e.g. building a Polars LazyFrame and an OpenDP context), and
per workload query either ``{"cold", "median", "runs", "api"}`` or
``{"na": reason}``; with ``--accuracy-data``, ``reps`` released values of
count, sum and mean at ε (``run_field`` computes the errors).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

#: Workload query names, as in ``benchmarks.workload.build_queries`` (with
#: ``small_key="state"`` and ``large_key="county"``).
QUERIES = ("count (rows)", "sum (clamped)", "mean (clamped)", "groupby {small} count")
QUERIES_ALL = (*QUERIES, "groupby {large} sum")

#: A release: a zero-argument callable returning the released value(s).
Release = Callable[[], Any]


class Spec:
    """Query parameters written by ``run_field`` (so nothing is duplicated here)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.value: str = raw["value"]
        self.low, self.high = (float(b) for b in raw["bounds"])
        self.small_key: str = raw["small_key"]
        self.large_key: str = raw["large_key"]
        self.keys: dict[str, list[str]] = raw["keys"]
        self.epsilon: float = float(raw["epsilon"])

    def names(self) -> list[str]:
        return [q.format(small=self.small_key, large=self.large_key) for q in QUERIES_ALL]


# --------------------------------------------------------------------------- OpenDP


def opendp_releases(
    df: pd.DataFrame, spec: Spec
) -> tuple[dict[str, Release | str], dict[str, str]]:
    """OpenDP's Polars API: one compositor context, one ``context.query(epsilon=ε)`` per release.

    The context has a large total budget; each release asks for ε = ``spec.epsilon``.
    ``Margin(max_length=n)`` is the public bound on the number of rows that
    OpenDP needs for float sums (it accounts for rounding in the sum).
    Group-bys join the released table with the public key set (``with_keys``).
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
    col = pl.col(value).fill_null(0.0)

    def count() -> Any:
        return context.query(epsilon=eps).select(dp.len()).release().collect().item()

    def total() -> Any:
        q = context.query(epsilon=eps).select(col.dp.sum(bounds))
        return q.release().collect().item()

    def mean() -> Any:
        q = context.query(epsilon=eps).select(col.dp.mean(bounds))
        return q.release().collect().item()

    def gb_count() -> Any:
        q = context.query(epsilon=eps).group_by(spec.small_key).agg(dp.len())
        return q.with_keys(small_keys).release().collect()

    def gb_sum() -> Any:
        q = context.query(epsilon=eps).group_by(spec.large_key).agg(col.dp.sum(bounds))
        return q.with_keys(large_keys).release().collect()

    names = spec.names()
    api = {
        names[0]: "context.query(epsilon=1).select(dp.len())",
        names[1]: f'select(pl.col("{value}").fill_null(0).dp.sum(bounds))',
        names[2]: f'select(pl.col("{value}").fill_null(0).dp.mean(bounds))',
        names[3]: "group_by(key).agg(dp.len()).with_keys(public keys)",
        names[4]: "group_by(key).agg(pl.col(v).fill_null(0).dp.sum(bounds)).with_keys(...)",
    }
    return dict(zip(names, [count, total, mean, gb_count, gb_sum], strict=True)), api


# --------------------------------------------------------------------------- diffprivlib


def diffprivlib_releases(
    df: pd.DataFrame, spec: Spec
) -> tuple[dict[str, Release | str], dict[str, str]]:
    """diffprivlib's ``tools`` (numpy-like functions) with a fresh unlimited accountant.

    Row count: the Geometric mechanism on ``len(df)`` (``tools`` has no row
    count).  Group-by count: ``tools.histogram`` over the category codes of
    the key against its public keys (one bin per key).  There is no grouped
    sum.  ``tools.mean`` treats the row count as public (noise scale
    (U - L)/(n ε)).
    """
    from diffprivlib import tools  # type: ignore[import-not-found, unused-ignore]
    from diffprivlib.accountant import BudgetAccountant  # type: ignore[import-not-found, unused-ignore]
    from diffprivlib.mechanisms import Geometric  # type: ignore[import-not-found, unused-ignore]

    accountant = BudgetAccountant()
    eps, bounds = spec.epsilon, (spec.low, spec.high)
    values = df[spec.value].to_numpy(dtype=np.float64)
    small_keys = spec.keys[spec.small_key]
    n_keys = len(small_keys)

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

    names = spec.names()
    api = {
        names[0]: "mechanisms.Geometric(epsilon=1, sensitivity=1).randomise(len(df))",
        names[1]: "tools.sum(x, epsilon=1, bounds=bounds)",
        names[2]: "tools.mean(x, epsilon=1, bounds=bounds)",
        names[3]: "tools.histogram(codes against public keys, bins=50, range=(0, 50))",
        names[4]: "n/a",
    }
    releases: dict[str, Release | str] = dict(
        zip(names[:4], [count, total, mean, gb_count], strict=True)
    )
    releases[names[4]] = "no grouped sum in diffprivlib"
    return releases, api


# --------------------------------------------------------------------------- PipelineDP


def pipelinedp_releases(
    df: pd.DataFrame, spec: Spec
) -> tuple[dict[str, Release | str], dict[str, str]]:
    """PipelineDP's ``DPEngine`` on the ``LocalBackend`` (plain Python iterables).

    Each release builds an engine with its own ``NaiveBudgetAccountant(ε, δ=0)``,
    Laplace noise, one contribution per row (row index as privacy id), public
    partitions.  Ungrouped statistics use a single public partition.  The
    rows become a list of tuples once, in ``load_s``.
    """
    import pipeline_dp  # type: ignore[import-not-found, unused-ignore]

    rows = list(
        zip(
            range(len(df)),
            df[spec.small_key].tolist(),
            df[spec.large_key].tolist(),
            df[spec.value].fillna(0.0).tolist(),
            strict=True,
        )
    )
    backend = pipeline_dp.LocalBackend()
    metrics = pipeline_dp.Metrics

    def run(metric: Any, partition: int | None, public: list[Any]) -> list[Any]:
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=spec.epsilon, total_delta=0)
        engine = pipeline_dp.DPEngine(accountant, backend)
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=[metric],
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            min_value=spec.low,
            max_value=spec.high,
        )
        extractors = pipeline_dp.DataExtractors(
            privacy_id_extractor=lambda r: r[0],
            partition_extractor=(lambda r: 0) if partition is None else (lambda r: r[partition]),
            value_extractor=lambda r: r[3],
        )
        result = engine.aggregate(rows, params, extractors, public_partitions=public)
        accountant.compute_budgets()
        return list(result)

    def scalar(metric: Any) -> Release:
        def release() -> Any:
            (_, stats), *_ = run(metric, None, [0])
            return float(stats[0])

        return release

    small, large = spec.keys[spec.small_key], spec.keys[spec.large_key]
    names = spec.names()
    api = {
        names[0]: "DPEngine.aggregate(metrics=[COUNT], public_partitions=[0])",
        names[1]: "... metrics=[SUM], min_value, max_value",
        names[2]: "... metrics=[MEAN], min_value, max_value",
        names[3]: "... metrics=[COUNT], public_partitions=keys",
        names[4]: "... metrics=[SUM], public_partitions=keys",
    }
    releases: list[Release] = [
        scalar(metrics.COUNT),
        scalar(metrics.SUM),
        scalar(metrics.MEAN),
        lambda: run(metrics.COUNT, 1, small),
        lambda: run(metrics.SUM, 2, large),
    ]
    return dict(zip(names, releases, strict=True)), api


# --------------------------------------------------------------------------- SmartNoise SQL


def smartnoise_releases(
    df: pd.DataFrame, spec: Spec
) -> tuple[dict[str, Release | str], dict[str, str]]:
    """SmartNoise SQL over the pandas frame (``snsql.from_df``), one ``execute`` per release.

    Metadata: row privacy, ``income`` bounded to the public bounds, and
    ``censor_dims: False`` (no thresholding of group-by keys).  SQL has no
    public key set: groups absent from the data are not released, groups
    present are released without thresholding.  ``max_ids: 1``.
    """
    import snsql  # type: ignore[import-not-found, unused-ignore]

    meta = {
        "Data": {
            "Schema": {
                "T": {
                    "row_privacy": True,
                    "rows": len(df),
                    "censor_dims": False,
                    "max_ids": 1,
                    spec.value: {
                        "type": "float",
                        "lower": spec.low,
                        "upper": spec.high,
                        "nullable": False,
                    },
                    spec.small_key: {"type": "string"},
                    spec.large_key: {"type": "string"},
                }
            }
        }
    }
    frame = df[[spec.value, spec.small_key, spec.large_key]].copy()
    frame[spec.value] = frame[spec.value].fillna(0.0)
    reader = snsql.from_df(
        frame, privacy=snsql.Privacy(epsilon=spec.epsilon, delta=0.0), metadata=meta
    )
    v = spec.value

    def sql(text: str) -> Release:
        def release() -> Any:
            return reader.execute(text)

        return release

    def first(text: str) -> Release:
        def release() -> Any:
            return float(reader.execute(text)[1][0])

        return release

    names = spec.names()
    queries = [
        "SELECT COUNT(*) FROM Schema.T",
        f"SELECT SUM({v}) FROM Schema.T",
        f"SELECT AVG({v}) FROM Schema.T",
        f"SELECT {spec.small_key}, COUNT(*) FROM Schema.T GROUP BY {spec.small_key}",
        f"SELECT {spec.large_key}, SUM({v}) FROM Schema.T GROUP BY {spec.large_key}",
    ]
    api = dict(zip(names, [f'reader.execute("{q}")' for q in queries], strict=True))
    releases = [first(q) for q in queries[:3]] + [sql(q) for q in queries[3:]]
    return dict(zip(names, releases, strict=True)), api


Builder = Callable[[pd.DataFrame, Spec], tuple[dict[str, Release | str], dict[str, str]]]

#: name -> (distribution name, modules imported before ``load_s`` is timed, builder).
LIBRARIES: dict[str, tuple[str, tuple[str, ...], Builder]] = {
    "opendp": ("opendp", ("opendp.prelude", "polars"), opendp_releases),
    "diffprivlib": ("diffprivlib", ("diffprivlib",), diffprivlib_releases),
    "pipeline-dp": ("pipeline-dp", ("pipeline_dp",), pipelinedp_releases),
    "smartnoise-sql": ("smartnoise-sql", ("snsql",), smartnoise_releases),
}


# --------------------------------------------------------------------------- timing


def _timed(fn: Release) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def time_all(releases: dict[str, Release | str], repeats: int) -> dict[str, dict[str, Any]]:
    """Cold call, then ``repeats`` warm calls per query; the median of the warm calls."""
    out: dict[str, dict[str, Any]] = {}
    for name, fn in releases.items():
        if isinstance(fn, str):
            out[name] = {"na": fn}
            continue
        try:
            cold = _timed(fn)
            runs = [_timed(fn) for _ in range(repeats)]
        except Exception as exc:  # report, do not abort the other queries
            out[name] = {"na": f"error: {type(exc).__name__}: {exc}"[:500]}
            continue
        out[name] = {"cold": cold, "median": statistics.median(runs), "runs": runs}
    return out


def _scalar(x: Any) -> float:
    return float(np.asarray(x, dtype=np.float64).reshape(-1)[0])


def accuracy_values(
    releases: dict[str, Release | str], spec: Spec, reps: int
) -> dict[str, list[float] | str]:
    names = spec.names()
    out: dict[str, list[float] | str] = {}
    for stat, name in zip(("count", "sum", "mean"), names[:3], strict=True):
        fn = releases[name]
        if isinstance(fn, str):
            out[stat] = fn
            continue
        try:
            out[stat] = [_scalar(fn()) for _ in range(reps)]
        except Exception as exc:
            out[stat] = f"error: {type(exc).__name__}: {exc}"[:500]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lib", choices=sorted(LIBRARIES))
    parser.add_argument("--spec", required=True)
    parser.add_argument("--data", action="append", default=[], help="parquet file (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--accuracy-data", default=None)
    parser.add_argument("--accuracy-reps", type=int, default=100)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    with open(args.spec) as fh:
        spec = Spec(json.load(fh))
    dist, modules, build = LIBRARIES[args.lib]
    for module in modules:  # imports are timed separately (run_field), not in load_s
        importlib.import_module(module)
    result: dict[str, Any] = {
        "lib": args.lib,
        "version": importlib.metadata.version(dist),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "runs": [],
    }
    for path in args.data:
        df = pd.read_parquet(path)
        start = time.perf_counter()
        releases, api = build(df, spec)
        load_s = time.perf_counter() - start
        result["api"] = api
        timings = time_all(releases, args.repeats)
        result["runs"].append({"rows": len(df), "load_s": load_s, "timings": timings})
        print(f"{args.lib}: {len(df):,} rows done", file=sys.stderr, flush=True)
        del releases, df
    if args.accuracy_data:
        df = pd.read_parquet(args.accuracy_data)
        releases, _ = build(df, spec)
        result["accuracy"] = {
            "rows": len(df),
            "reps": args.accuracy_reps,
            "values": accuracy_values(releases, spec, args.accuracy_reps),
        }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
