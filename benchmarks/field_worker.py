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
per query label either ``{"cold", "median", "runs"}`` or ``{"na": reason}``,
the frame's size and the peak RSS increase over setup and all queries
(``/proc/self/status`` VmHWM after resetting it, Linux); with
``--accuracy-data``, ``reps`` released values of count, sum and mean at ε
(``run_field`` computes the errors).
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

#: A release: a zero-argument callable returning the released value(s).
Release = Callable[[], Any]
#: Per query role ("count", "sum", ..., see ``benchmarks.workload.query_names``):
#: a release, or the reason the library has none.
Releases = dict[str, "Release | str"]


class Spec:
    """Query parameters written by ``run_field`` (so nothing is duplicated here)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.value: str = raw["value"]
        self.low, self.high = (float(b) for b in raw["bounds"])
        self.small_key: str = raw["small_key"]
        self.large_key: str = raw["large_key"]
        self.cross_key: str | None = raw.get("cross_key")
        self.keys: dict[str, list[Any]] = raw["keys"]
        self.epsilon: float = float(raw["epsilon"])
        #: role -> label, e.g. "gb_count" -> "groupby state count".
        self.names: dict[str, str] = raw["names"]
        #: bounded numeric columns summarised by describe(): name -> (low, high).
        self.describe: dict[str, tuple[float, float]] = {
            k: (float(v[0]), float(v[1])) for k, v in raw["describe"].items()
        }
        #: the public candidates of a quantile over [low, high] (dpframe's grid).
        self.candidates: int = int(raw["quantile_candidates"])

    def grid(self, low: float, high: float) -> list[float]:
        return [float(x) for x in np.linspace(low, high, self.candidates)]

    def cross_keys(self) -> tuple[list[Any], list[Any]]:
        """The declared (large key, cross key) pairs, large key outer."""
        assert self.cross_key is not None
        large, cross = self.keys[self.large_key], self.keys[self.cross_key]
        return [a for a in large for _ in cross], [b for _ in large for b in cross]


NO_SVT = "no sparse vector / AboveThreshold"
#: A query whose cold call takes longer than this many seconds gets one warm run.
SLOW_S = 10.0


# --------------------------------------------------------------------------- OpenDP


def opendp_releases(df: pd.DataFrame, spec: Spec) -> tuple[Releases, dict[str, str]]:
    """OpenDP's Polars API: one compositor context, one ``context.query(epsilon=ε)`` per release.

    The context has a large total budget; each release asks for ε = ``spec.epsilon``.
    ``Margin(max_length=n)`` is the public bound on the number of rows that
    OpenDP needs for float sums (it accounts for rounding in the sum).
    Group-bys join the released table with the public key set (``with_keys``).
    A select of several expressions splits the query's ε over them.
    Closest equivalents: variance from one query releasing the count, the sum
    and the sum of squares (as dpframe's ``var``: thirds of ε);
    ``describe()`` as one query releasing the count and, per column, the sum,
    the sum of squares and three quartiles.  Quantile candidates are dpframe's
    grid (``spec.candidates`` equally spaced values over the bounds).
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

    def var() -> Any:
        q = context.query(epsilon=eps).select(
            dp.len(),
            col.dp.sum(bounds).alias("s"),
            (col * col).dp.sum(square_bounds(*bounds)).alias("ss"),
        )
        n, s, ss = q.release().collect().row(0)
        n = max(float(n), 1.0)
        return max(ss / n - (s / n) ** 2, 0.0)

    def median() -> Any:
        q = context.query(epsilon=eps).select(col.dp.median(spec.grid(*bounds)))
        return q.release().collect().item()

    def describe() -> Any:
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
        return context.query(epsilon=eps).select(*exprs).release().collect()

    releases: Releases = {
        "count": count,
        "sum": total,
        "mean": mean,
        "gb_count": gb_count,
        "gb_sum": gb_sum,
        "var": var,
        "median": median,
        "svt": NO_SVT + " in OpenDP 0.16 (make_noise_threshold thresholds released counts)",
        "describe": describe,
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

        def gb_cross() -> Any:
            q = context.query(epsilon=eps).group_by(by).agg(col.dp.sum(bounds))
            return q.with_keys(cross_keys).release().collect()

        releases["gb_cross"] = gb_cross
        api["gb_cross"] = f"group_by({by}).agg(...dp.sum(bounds)).with_keys(100,000 pairs)"
    return releases, api


# --------------------------------------------------------------------------- diffprivlib


def diffprivlib_releases(df: pd.DataFrame, spec: Spec) -> tuple[Releases, dict[str, str]]:
    """diffprivlib's ``tools`` (numpy-like functions) with a fresh unlimited accountant.

    Row count: the Geometric mechanism on ``len(df)`` (``tools`` has no row
    count).  Group-by count: ``tools.histogram`` over the category codes of
    the key against its public keys (one bin per key).  There is no grouped
    sum and no sparse vector.  ``tools.mean``, ``tools.var`` and
    ``tools.median`` treat the row count as public.  ``describe()``'s closest
    equivalent: a Geometric count plus, per column, ``tools.mean``,
    ``tools.std`` and ``tools.quantile`` of the three quartiles, ε split
    evenly over these releases.
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

    def var() -> Any:
        return tools.var(values, epsilon=eps, bounds=bounds, accountant=accountant)

    def median() -> Any:
        return tools.median(values, epsilon=eps, bounds=bounds, accountant=accountant)

    def describe() -> Any:
        part = eps / (1 + 3 * len(spec.describe))
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
    return releases, api


# --------------------------------------------------------------------------- PipelineDP


def pipelinedp_releases(df: pd.DataFrame, spec: Spec) -> tuple[Releases, dict[str, str]]:
    """PipelineDP's ``DPEngine`` on the ``LocalBackend`` (plain Python iterables).

    Each release builds an engine with its own ``NaiveBudgetAccountant(ε, δ=0)``,
    Laplace noise, one contribution per row (row index as privacy id), public
    partitions.  Ungrouped statistics use a single public partition.  The
    rows become a list of tuples once, in ``load_s``.  Variance and median are
    the ``VARIANCE`` and ``PERCENTILE(50)`` metrics; ``describe()``'s closest
    equivalent is one aggregation per column with the metrics COUNT, MEAN,
    VARIANCE and PERCENTILE(25/50/75), ε split evenly over the columns.
    There is no sparse vector.
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
    releases: Releases = {
        "count": scalar(metrics.COUNT),
        "sum": scalar(metrics.SUM),
        "mean": scalar(metrics.MEAN),
        "gb_count": lambda: run([metrics.COUNT], by(spec.small_key), small),
        "gb_sum": lambda: run([metrics.SUM], by(spec.large_key), large),
        "var": scalar(metrics.VARIANCE),
        "median": scalar(metrics.PERCENTILE(50)),
        "svt": NO_SVT + " in PipelineDP",
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
        releases["gb_cross"] = lambda: run([metrics.SUM], partition, pairs)
        api["gb_cross"] = "... metrics=[SUM], public_partitions=100,000 (county, age) pairs"
    return releases, api


# --------------------------------------------------------------------------- SmartNoise SQL


def smartnoise_releases(df: pd.DataFrame, spec: Spec) -> tuple[Releases, dict[str, str]]:
    """SmartNoise SQL over the pandas frame (``snsql.from_df``), one ``execute`` per release.

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
    api = {role: f'reader.execute("{q}")' for role, q in queries.items()}
    releases: Releases = {
        role: first(q) if role in ("count", "sum", "mean", "var") else sql(q)
        for role, q in queries.items()
    }
    releases["median"] = "no median or percentile in SmartNoise SQL's private reader"
    releases["svt"] = NO_SVT + " in SmartNoise SQL"
    return releases, api


Builder = Callable[[pd.DataFrame, Spec], tuple[Releases, dict[str, str]]]

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


def time_all(releases: Releases, spec: Spec, repeats: int) -> dict[str, dict[str, Any]]:
    """Cold call, then ``repeats`` warm calls per query; the median of the warm calls.

    Keyed by the query's label; queries of the spec the library lacks are n/a.
    A query whose cold call takes more than :data:`SLOW_S` gets one warm run
    (``runs`` shows how many were made).
    """
    out: dict[str, dict[str, Any]] = {}
    for role, label in spec.names.items():
        fn = releases.get(role, "not measured")
        if isinstance(fn, str):
            out[label] = {"na": fn}
            continue
        try:
            cold = _timed(fn)
            runs = [_timed(fn) for _ in range(1 if cold > SLOW_S else max(repeats, 1))]
        except Exception as exc:  # report, do not abort the other queries
            out[label] = {"na": f"error: {type(exc).__name__}: {exc}"[:300]}
            continue
        out[label] = {"cold": cold, "median": statistics.median(runs), "runs": runs}
    return out


def _scalar(x: Any) -> float:
    return float(np.asarray(x, dtype=np.float64).reshape(-1)[0])


def accuracy_values(releases: Releases, reps: int, seconds: float) -> dict[str, list[float] | str]:
    """Up to ``reps`` released values of count, sum and mean (or why there are none).

    A statistic stops early (after at least 20 releases) once ``seconds`` have
    passed: some libraries take about a second per release.
    """
    out: dict[str, list[float] | str] = {}
    for stat in ("count", "sum", "mean"):
        fn = releases[stat]
        if isinstance(fn, str):
            out[stat] = fn
            continue
        try:
            values: list[float] = []
            start = time.perf_counter()
            while len(values) < reps and (
                len(values) < 20 or time.perf_counter() - start < seconds
            ):
                values.append(_scalar(fn()))
            out[stat] = values
        except Exception as exc:
            out[stat] = f"error: {type(exc).__name__}: {exc}"[:300]
    return out


# --------------------------------------------------------------------------- memory


def _status_bytes(field: str) -> int | None:
    """A ``/proc/self/status`` field (VmRSS, VmHWM) in bytes; None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def reset_peak() -> int | None:
    """Collect garbage, reset the kernel's peak-RSS mark, return the current RSS."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return None
    return _status_bytes("VmRSS")


def peak_since(rss_before: int | None) -> int | None:
    """Peak RSS since :func:`reset_peak` minus the RSS then (bytes)."""
    peak = _status_bytes("VmHWM")
    return None if peak is None or rss_before is None else peak - rss_before


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lib", choices=sorted(LIBRARIES))
    parser.add_argument("--spec", required=True)
    parser.add_argument("--data", action="append", default=[], help="parquet file (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--accuracy-data", default=None)
    parser.add_argument("--accuracy-reps", type=int, default=100)
    parser.add_argument("--accuracy-seconds", type=float, default=120.0, help="per statistic")
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
        df_bytes = int(df.memory_usage(deep=True).sum())
        rss_before = reset_peak()
        start = time.perf_counter()
        releases, api = build(df, spec)
        load_s = time.perf_counter() - start
        result["api"] = api
        timings = time_all(releases, spec, args.repeats)
        result["runs"].append(
            {
                "rows": len(df),
                "load_s": load_s,
                "timings": timings,
                "df_bytes": df_bytes,
                "peak_increase": peak_since(rss_before),
            }
        )
        print(f"{args.lib}: {len(df):,} rows done", file=sys.stderr, flush=True)
        del releases, df
    if args.accuracy_data:
        df = pd.read_parquet(args.accuracy_data)
        releases, _ = build(df, spec)
        result["accuracy"] = {
            "rows": len(df),
            "reps": args.accuracy_reps,
            "values": accuracy_values(releases, args.accuracy_reps, args.accuracy_seconds),
        }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
