"""Scale demonstration of the Dask backend: a Parquet data set larger than the workers' memory.

Run from the repository root (needs ``dpframe[dask]``)::

    python -m benchmarks.run_dask_scale                          # 200M rows, 2 workers x 1 GiB
    python -m benchmarks.run_dask_scale --rows 2e7 --crossover 2e6,1e7   # a smaller run

1. Writes the census-shaped table of ``benchmarks/data.py`` (key columns as
   pandas Categoricals, i.e. dictionary-encoded Parquet) in chunks of
   ``--chunk-rows``, one file per chunk, never holding more than one chunk
   (skipped when the directory already holds the same data).
2. Starts a ``LocalCluster`` on loopback with ``--workers`` one-thread worker
   processes, each limited to ``--memory-limit``, opens the directory with
   ``session.read_parquet(path, backend="dask")`` and runs the core workload
   (count, clamped sum, clamped mean, count by state, income sum by county)
   once each, with a progress bar, timing each query and reading the peak RSS
   of the client process and of every worker.
3. Crossover: for each size in ``--crossover`` (a prefix of the files), the
   same workload end to end with the pandas backend (``read_parquet`` into
   memory, then the queries) and with the Dask backend (open, then the
   queries), on the same cluster.

Writes ``benchmarks/RESULTS_dask.md`` (with the raw numbers as JSON at the end).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import dpframe as dp
from benchmarks.data import BOUNDS, DEFAULT_SEED, categories, census_frame
from benchmarks.releases import new_releases

RESULTS = Path(__file__).resolve().parent / "RESULTS_dask.md"
EPSILON = 1.0
SESSION_EPSILON = 1e9
#: Everything from this line on in RESULTS_dask.md is kept when the file is rewritten.
OTHER_RUNS = "<!-- other Dask runs: kept by run_dask_scale.py -->"


def _rss_peak_mib() -> float:
    """Peak resident set size of this process (``VmHWM``: per address space, reset by exec).

    ``getrusage``'s ``ru_maxrss`` is not used: it survives fork and exec, so a
    worker process would report its parent's peak.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return float("nan")


def _worker_peak_mib() -> float:  # runs on each worker
    return _rss_peak_mib()


def write_dataset(directory: Path, rows: int, chunk_rows: int) -> dict[str, Any]:
    """Write ``rows`` rows as Parquet files of ``chunk_rows`` rows each (one chunk in memory)."""
    marker = directory / "_dpframe_rows.json"
    wanted = {"rows": rows, "chunk_rows": chunk_rows, "seed": DEFAULT_SEED}
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        print(f"Reusing {directory} ({rows:,} rows)")
        return {"seconds": 0.0, "reused": True, **_disk(directory)}
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    start = time.perf_counter()
    written = 0
    index = 0
    while written < rows:
        n = min(chunk_rows, rows - written)
        chunk = census_frame(n, seed=DEFAULT_SEED + index, key_dtype="category")
        chunk.to_parquet(directory / f"part-{index:05d}.parquet", index=False)
        written += n
        index += 1
        print(f"\rwriting: {written:,} / {rows:,} rows", end="", flush=True)
    print()
    marker.write_text(json.dumps(wanted))
    return {"seconds": time.perf_counter() - start, "reused": False, **_disk(directory)}


def _disk(directory: Path) -> dict[str, Any]:
    files = sorted(directory.glob("part-*.parquet"))
    return {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}


def workload(pf: dp.PrivateFrame) -> list[tuple[str, Callable[[], Any]]]:
    """The five queries of the core workload (benchmarks/workload.py)."""
    return [
        ("count (rows)", lambda: pf.count(epsilon=EPSILON)),
        ("sum (clamped)", lambda: pf["income"].sum(epsilon=EPSILON)),
        ("mean (clamped)", lambda: pf["income"].mean(epsilon=EPSILON)),
        ("groupby state count", lambda: pf.groupby("state").count(epsilon=EPSILON)),
        ("groupby county sum", lambda: pf.groupby("county")["income"].sum(epsilon=EPSILON)),
    ]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def scale_run(directory: Path, client: Any) -> dict[str, Any]:
    """The core workload on the whole directory with the Dask backend."""
    import dask

    session = dp.Session(epsilon=SESSION_EPSILON, ledger=":memory:")
    rss_before = _rss_peak_mib()
    open_s, pf = _timed(
        lambda: session.read_parquet(
            directory, bounds=BOUNDS, categories=categories(), backend="dask"
        )
    )
    queries = []
    with dask.config.set({"dpframe.progress": True}):
        for name, query in workload(pf):
            print(f"{name}:")
            seconds, value = _timed(query)
            shown = (
                f"{float(value):.6g}"
                if not isinstance(value, pd.Series)
                else f"{len(value)} groups"
            )
            print(f"  {seconds:.1f} s -> {shown}")
            queries.append({"query": name, "seconds": seconds, "released": shown})
    workers = client.run(_worker_peak_mib)
    return {
        "open_s": open_s,
        "queries": queries,
        "client_peak_rss_mib_before": rss_before,
        "client_peak_rss_mib": _rss_peak_mib(),
        "worker_peak_rss_mib": sorted(workers.values()),
    }


def crossover(directory: Path, sizes: list[int], chunk_rows: int) -> list[dict[str, Any]]:
    """End-to-end workload time, pandas backend vs Dask backend, on prefixes of the files."""
    files = sorted(directory.glob("part-*.parquet"))
    out = []
    for size in sizes:
        count = max(1, size // chunk_rows)
        subset = directory.parent / f"{directory.name}-prefix-{count}"
        if not subset.exists():
            subset.mkdir()
            for f in files[:count]:
                (subset / f.name).symlink_to(f)
        rows = count * chunk_rows
        row: dict[str, Any] = {"rows": rows}
        for backend in ("pandas", "dask"):
            session = dp.Session(epsilon=SESSION_EPSILON, ledger=":memory:")
            start = time.perf_counter()
            pf = session.read_parquet(
                subset, bounds=BOUNDS, categories=categories(), backend=backend
            )
            load_s = time.perf_counter() - start
            times = [_timed(q)[0] for _, q in workload(pf)]
            warm = [_timed(q)[0] for _, q in workload(pf)]
            row[backend] = {"load_s": load_s, "queries_s": sum(times), "warm_queries_s": sum(warm)}
            print(
                f"{rows:>12,} rows  {backend:6s}: load {load_s:6.2f} s, workload "
                f"{sum(times):6.2f} s (warm {sum(warm):6.2f} s)",
                flush=True,
            )
            del pf, session
        out.append(row)
    return out


def render(results: dict[str, Any]) -> str:
    """The markdown report."""
    scale = results["scale"]
    data = results["data"]
    lines = [
        "# Dask backend: scale run",
        "",
        f"Run {results['date']} on {results['machine']} ({os.cpu_count()} cores, "
        f"shared with other jobs); `python -m benchmarks.run_dask_scale "
        f"{' '.join(results['argv'])}`.",
        "",
        f"- Data: {results['rows']:,} rows (census-shaped, `benchmarks/data.py`, key columns "
        f"Categorical) in {data['files']} Parquet files, {data['bytes'] / 2**30:.2f} GiB on disk "
        f"(about {results['in_memory_gib']:.1f} GiB as a pandas DataFrame).",
        f"- Cluster: `LocalCluster` on loopback, {results['workers']} worker processes x 1 "
        f"thread, memory limit {results['memory_limit']} each.",
        f'- Opening the directory (`read_parquet(..., backend="dask")`, metadata and '
        f"fingerprint only): {scale['open_s']:.2f} s.",
        "",
        "| query (ε = 1) | seconds |",
        "|---|---:|",
    ]
    for q in scale["queries"]:
        lines.append(f"| {q['query']} | {q['seconds']:.1f} |")
    total = sum(q["seconds"] for q in scale["queries"])
    lines += [
        f"| **workload** | **{total:.1f}** |",
        "",
        f"Peak RSS of the client process: {scale['client_peak_rss_mib']:.0f} MiB "
        f"(after imports and cluster start: {scale['client_peak_rss_mib_before']:.0f} MiB). "
        "Peak RSS of the workers: "
        + ", ".join(f"{m:.0f} MiB" for m in scale["worker_peak_rss_mib"])
        + ".",
        "",
        "## Crossover: pandas backend vs Dask backend, end to end from Parquet",
        "",
        "Load = `read_parquet` (pandas: read into memory and fingerprint every row; Dask: open "
        "lazily). Workload = the five queries once; warm = the five queries again.",
        "",
        "| rows | pandas load | pandas workload | pandas warm | Dask open | Dask workload "
        "| Dask warm | pandas total / Dask total |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["crossover"]:
        p, d = row["pandas"], row["dask"]
        ratio = (p["load_s"] + p["queries_s"]) / (d["load_s"] + d["queries_s"])
        lines.append(
            f"| {row['rows']:,} | {p['load_s']:.2f} | {p['queries_s']:.2f} | "
            f"{p['warm_queries_s']:.2f} | {d['load_s']:.2f} | {d['queries_s']:.2f} | "
            f"{d['warm_queries_s']:.2f} | {ratio:.2f} |"
        )
    wins = [
        row["rows"]
        for row in results["crossover"]
        if row["pandas"]["load_s"] + row["pandas"]["queries_s"]
        > row["dask"]["load_s"] + row["dask"]["queries_s"]
    ]
    warm_wins = [
        row["rows"]
        for row in results["crossover"]
        if row["pandas"]["warm_queries_s"] > row["dask"]["warm_queries_s"]
    ]
    lines += [
        "",
        "End to end (load, then the workload once), the Dask backend is faster from "
        + (f"{min(wins):,} rows on" if wins else "none of the sizes measured")
        + "; for queries repeated on data already in memory, the pandas backend is faster "
        + (
            f"up to {min(warm_wins):,} rows."
            if warm_wins
            else "at every size measured (Dask reads the Parquet files again for every query), "
            "as long as the data fits in memory."
        ),
    ]
    lines += ["", "## Raw numbers", "", "```json", json.dumps(results, indent=1), "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=2e8)
    parser.add_argument("--chunk-rows", type=float, default=2e6)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/dpframe-dask-scale"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GiB")
    parser.add_argument("--crossover", default="2e6,1e7,4e7")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    rows, chunk_rows = int(args.rows), int(args.chunk_rows)
    started = time.perf_counter()
    # In a child process, so that this (client) process's peak memory is the queries' alone.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        data = pool.apply(write_dataset, (args.data_dir, rows, chunk_rows))

    from distributed import Client, LocalCluster

    cluster: Any = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=":0",
        memory_limit=args.memory_limit,
    )
    client: Any = Client(cluster)  # type: ignore[no-untyped-call]
    try:
        scale = scale_run(args.data_dir, client)
        sizes = [int(float(s)) for s in args.crossover.split(",") if s.strip()]
        cross = crossover(args.data_dir, sizes, chunk_rows)
    finally:
        client.close()
        cluster.close()
    sample = census_frame(100_000, key_dtype="category")
    results = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        "argv": sys.argv[1:] if argv is None else argv,
        "rows": rows,
        "chunk_rows": chunk_rows,
        "in_memory_gib": sample.memory_usage(deep=True).sum() / 100_000 * rows / 2**30,
        "workers": args.workers,
        "memory_limit": args.memory_limit,
        "data": data,
        "scale": scale,
        "crossover": cross,
        "wall_s": time.perf_counter() - started,
    }
    text = render(results)
    print(text)
    if not args.no_save:
        kept = RESULTS.read_text() if RESULTS.exists() else ""
        if OTHER_RUNS in kept:  # the other Dask benchmarks' sections (written by hand) stay
            text = text.rstrip() + "\n\n" + kept[kept.index(OTHER_RUNS) :]
        RESULTS.write_text(text)
        print(f"Saved {RESULTS}")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
