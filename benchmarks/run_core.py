"""Core benchmark: dpframe against the same non-private pandas aggregations.

Run from the repository root::

    python -m benchmarks.run_core                       # 1e5, 1e6, 1e7 rows, all key dtypes
    python -m benchmarks.run_core --rows 1e5,1e6 --repeats 5
    python -m benchmarks.run_core --quick               # a smoke run in well under a minute

Prints markdown tables and writes them, with the raw numbers as JSON, to
``benchmarks/results/core-<date>.md`` and ``.json``.  See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks import probes
from benchmarks.accuracy import accuracy_ratios
from benchmarks.data import BOUNDS, as_key_dtype, categories, census_frame, key_dtypes
from benchmarks.releases import new_releases
from benchmarks.report import render_markdown, save_results, timing_rows, workload_rows
from benchmarks.workload import Query, Timing, build_queries, time_query, workload_ratio
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988

__all__ = [
    "build_cps_queries",
    "build_synthetic_queries",
    "frame_schema",
    "main",
    "run_cps",
    "run_synthetic",
]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: The session budget: large enough that no benchmark run is ever refused.
SESSION_EPSILON = 1e9


def _parse_rows(text: str) -> list[int]:
    rows = [int(float(part)) for part in text.split(",") if part.strip()]
    if not rows or min(rows) < 1:
        raise argparse.ArgumentTypeError("--rows needs positive sizes, e.g. 1e5,1e6")
    return rows


def _parse_dtypes(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    bad = [d for d in chosen if d not in key_dtypes()]
    if bad or not chosen:
        raise argparse.ArgumentTypeError(f"--keys takes a subset of {','.join(key_dtypes())}")
    return chosen


def _environment() -> dict[str, str]:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=probes.REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "dpframe"],
            cwd=probes.REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        rev += " + uncommitted changes in dpframe/" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        rev = "unknown"
    try:
        arrow = importlib.metadata.version("pyarrow")
    except importlib.metadata.PackageNotFoundError:
        arrow = "not installed"
    return {
        "dpframe": f"{dp.__version__} @ {rev}",
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "pyarrow": arrow,
        "cpus": str(os.cpu_count()),
        "machine": f"{platform.system()} {platform.machine()}",
        "load average at start": _load_average(),
    }


def _load_average() -> str:
    """The 1-minute load average: other processes on the machine skew the timings."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def _workload_entry(
    timings: list[Timing], rows: int, variant: str, load_s: float
) -> dict[str, Any]:
    pandas_total, dpframe_total, ratio = workload_ratio(timings)
    cold_pandas, cold_dpframe, cold_ratio = workload_ratio(timings, cold=True)
    ext_pandas, ext_dpframe, ext_ratio = workload_ratio(timings, extended=True)
    return {
        "extended_pandas_total": ext_pandas,
        "extended_dpframe_total": ext_dpframe,
        "extended_ratio": ext_ratio,
        "rows": rows,
        "variant": variant,
        "load_s": load_s,
        "pandas_total": pandas_total,
        "dpframe_total": dpframe_total,
        "ratio": ratio,
        "cold_pandas_total": cold_pandas,
        "cold_dpframe_total": cold_dpframe,
        "cold_ratio": cold_ratio,
    }


def frame_schema(kind: str) -> tuple[dict[str, tuple[float, float]], dict[str, list[Any]]]:
    """Public bounds and categories of the synthetic table or of the CPS extract."""
    if kind == "cps":
        return dict(CPS1988_BOUNDS), {k: list(v) for k, v in CPS1988_CATEGORIES.items()}
    return dict(BOUNDS), categories()


def build_synthetic_queries(df: pd.DataFrame, pf: dp.PrivateFrame) -> list[Query]:
    """The workload on the synthetic table (100,000 keys: county × age)."""
    return build_queries(
        df,
        pf,
        value="income",
        bounds=BOUNDS["income"],
        small_key="state",
        large_key="county",
        cross_key="age",
        svt_column="age",
    )


def build_cps_queries(df: pd.DataFrame, pf: dp.PrivateFrame) -> list[Query]:
    """The workload on CPS 1988: group-bys over region (4 keys), no 100,000-key query."""
    queries = build_queries(
        df,
        pf,
        value="wage",
        bounds=CPS1988_BOUNDS["wage"],
        small_key="region",
        large_key="region",
        svt_column="education",
    )
    return [q for q in queries if "clipped" not in q.name]


def run_synthetic(rows: int, key_dtype: str, repeats: int) -> tuple[list[Timing], dict[str, Any]]:
    """Time the workload on the synthetic table in a fresh session (empty code cache)."""
    df = census_frame(rows, key_dtype=as_key_dtype(key_dtype))
    session = dp.Session(epsilon=SESSION_EPSILON, ledger=":memory:")
    start = time.perf_counter()
    pf = session.private_frame(df, bounds=BOUNDS, categories=categories())
    load_s = time.perf_counter() - start
    timings = [time_query(q, rows, key_dtype, repeats) for q in build_synthetic_queries(df, pf)]
    return timings, _workload_entry(timings, rows, key_dtype, load_s)


def run_cps(repeats: int) -> dict[str, Any]:
    """The same workload on the bundled CPS 1988 extract (group-bys over region, 4 keys)."""
    df = load_cps1988()
    session = dp.Session(epsilon=SESSION_EPSILON, ledger=":memory:")
    start = time.perf_counter()
    pf = session.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    load_s = time.perf_counter() - start
    timings = [time_query(q, len(df), "str (CPS)", repeats) for q in build_cps_queries(df, pf)]
    return {
        "rows": len(df),
        "timings": [t.to_dict() for t in timings],
        "workload": _workload_entry(timings, len(df), "str (CPS)", load_s),
    }


def _print(lines: list[str]) -> None:
    print("\n".join(lines), flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run_core",
        description="dpframe core benchmark against plain pandas (see benchmarks/README.md).",
    )
    parser.add_argument("--rows", type=_parse_rows, default=None, help="default 1e5,1e6,1e7")
    parser.add_argument("--repeats", type=int, default=None, help="warm runs per query (5)")
    parser.add_argument(
        "--keys",
        type=_parse_dtypes,
        default=None,
        help="key column dtypes: str (pandas 3 read_csv default), object, category",
    )
    parser.add_argument("--quick", action="store_true", help="1e5 rows, 3 repeats, str keys")
    parser.add_argument("--accuracy-reps", type=int, default=None, help="(200)")
    parser.add_argument("--accuracy-rows", type=int, default=100_000)
    parser.add_argument("--no-memory", action="store_true", help="skip the memory probe")
    parser.add_argument("--no-import", action="store_true", help="skip the import-time probe")
    parser.add_argument("--no-cps", action="store_true", help="skip the CPS 1988 workload")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--no-save", action="store_true", help="print only")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the tables, save them; return the results."""
    args = _parser().parse_args(argv)
    quick = bool(args.quick)
    rows: list[int] = args.rows or ([100_000] if quick else [100_000, 1_000_000, 10_000_000])
    repeats: int = args.repeats or (3 if quick else 5)
    variants: list[str] = args.keys or (["str"] if quick else list(key_dtypes()))
    acc_reps: int = args.accuracy_reps or (50 if quick else 200)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(["python -m benchmarks.run_core", *(argv or sys.argv[1:])]),
        "environment": _environment(),
        "repeats": repeats,
        "timings": [],
        "workloads": [],
    }
    for variant in variants:
        for n in rows:
            print(f"\n# {n:,} rows, {variant} keys", flush=True)
            timings, workload = run_synthetic(n, variant, repeats)
            results["timings"] += [t.to_dict() for t in timings]
            results["workloads"].append(workload)
            _print(timing_rows([t.to_dict() for t in timings]))
            _print(["", *workload_rows([workload])])
    if not args.no_cps:
        results["cps"] = run_cps(repeats)
    if not args.no_import:
        print("\n# import time", flush=True)
        results["import"] = probes.import_times(5)
        results["slowest_imports"] = probes.slowest_imports()
    if not args.no_memory:
        results["memory"] = []
        for variant in variants:
            for n in rows:
                print(f"# memory probe: {n:,} rows, {variant} keys", flush=True)
                results["memory"].append(probes.memory_at_load(n, variant))
    print(f"# accuracy: {acc_reps} releases per statistic", flush=True)
    acc_df = census_frame(args.accuracy_rows)
    results["accuracy"] = {
        "rows": args.accuracy_rows,
        "stats": accuracy_ratios(
            acc_df,
            value="income",
            bounds=BOUNDS["income"],
            categories=categories(),
            reps=acc_reps,
        ),
    }
    results["wall_s"] = time.perf_counter() - started
    results["environment"]["load average at end"] = _load_average()
    text = render_markdown(results)
    print("\n" + text)
    if not args.no_save:
        save_results(results, text, args.output_dir, "core")
    return results


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
