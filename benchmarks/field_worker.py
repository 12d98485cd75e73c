"""Worker for ``benchmarks.run_field``: one DP library's part of the workload, as JSON.

This file runs *inside another library's virtual environment*
(``.bench-venvs/<lib>/``), started by ``run_field`` as a subprocess::

    .bench-venvs/opendp/bin/python benchmarks/field_worker.py opendp \
        --spec spec.json --data data-100000.parquet --repeats 3 --accuracy-data acc.parquet

It must not import dpframe: only the standard library, numpy, pandas, the
library measured and its sibling modules ``benchmarks.field_costs``,
``benchmarks.field_spec`` and the per-library adapters
``benchmarks.field_<lib>`` (run as a script, it puts the repository root on
``sys.path`` for them; ``tests/test_benchmark_field_costs.py`` checks that
none of them imports dpframe).  The data (written by ``run_field`` from
``benchmarks.data.census_frame``) and the query parameters (bounds, public
keys, ε) come from the files given, so every library sees the same table
and the same queries.

Every release is configured to cost the spec's ε in total in the library's
own accounting (see ``benchmarks.field_costs``).  Output (stdout, one JSON
object): the library's version, ``costs`` (per query role, the cost the
library reports, measured once on the first 2,000 rows of the first data
file with the same adapter), the setup time (``load_s``, e.g. building a
Polars LazyFrame and an OpenDP context), and per query label either
``{"cold", "median", "runs", "epsilon_spent", "delta_spent"}`` or
``{"na": reason}``, the frame's size and the peak RSS increase over setup
and all queries (``/proc/self/status`` VmHWM after resetting it, Linux);
with ``--accuracy-data``, ``reps`` released values of count, sum and mean at
ε with their ``epsilon_spent`` (``run_field`` computes the errors).
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
from pathlib import Path
from typing import Any

if not __package__:  # run as a script in another library's venv: find the sibling modules
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd

from benchmarks.field_costs import Cost, annotate, measure_costs
from benchmarks.field_diffprivlib import diffprivlib_releases
from benchmarks.field_opendp import opendp_releases
from benchmarks.field_pipelinedp import pipelinedp_releases
from benchmarks.field_smartnoise import smartnoise_releases
from benchmarks.field_spec import Built, Release, Releases, Spec

__all__ = ["LIBRARIES", "main", "peak_since", "reset_peak"]

Builder = Callable[[pd.DataFrame, Spec], Built]

#: name -> (distribution name, modules imported before ``load_s`` is timed, builder).
LIBRARIES: dict[str, tuple[str, tuple[str, ...], Builder]] = {
    "opendp": ("opendp", ("opendp.prelude", "polars"), opendp_releases),
    "diffprivlib": ("diffprivlib", ("diffprivlib",), diffprivlib_releases),
    "pipeline-dp": ("pipeline-dp", ("pipeline_dp",), pipelinedp_releases),
    "smartnoise-sql": ("smartnoise-sql", ("snsql",), smartnoise_releases),
}
#: A query whose cold call takes longer than this many seconds gets one warm run.
SLOW_S = 10.0
#: Rows of the frame on which each query's privacy cost is measured.
COST_ROWS = 2_000


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


def costs_on(path: str, build: Builder, spec: Spec) -> dict[str, Cost]:
    """Each query's privacy cost in the library's accounting, on the first rows of ``path``.

    The adapter is the one timed, so the configuration is the same; the
    libraries' costs do not depend on the number of rows, and a small frame
    keeps the probes that must run a release (diffprivlib, PipelineDP) cheap.
    """
    df = pd.read_parquet(path).head(COST_ROWS)
    return measure_costs(build(df, spec).costs)


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
        "epsilon": spec.epsilon,
        "runs": [],
    }
    first = next(iter([*args.data, args.accuracy_data]), None)
    costs = costs_on(first, build, spec) if first else {}
    result["costs"] = costs
    for path in args.data:
        df = pd.read_parquet(path)
        df_bytes = int(df.memory_usage(deep=True).sum())
        rss_before = reset_peak()
        start = time.perf_counter()
        releases, api, _ = build(df, spec)
        load_s = time.perf_counter() - start
        result["api"] = api
        timings = time_all(releases, spec, args.repeats)
        annotate(timings, spec.names, costs)
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
        releases, api, _ = build(df, spec)
        result.setdefault("api", api)
        result["accuracy"] = {
            "rows": len(df),
            "reps": args.accuracy_reps,
            "values": accuracy_values(releases, args.accuracy_reps, args.accuracy_seconds),
            "costs": {stat: costs[stat] for stat in ("count", "sum", "mean") if stat in costs},
        }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()  # peers only: dpframe is never imported here
