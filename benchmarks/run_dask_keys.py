"""Warm keys on Dask: a repeated group-by over string keys, against the pandas backend's warm one.

Run from the repository root (needs ``dpframe[dask]``)::

    python -m benchmarks.run_dask_keys --rows 3e7

The census-shaped table of ``benchmarks/data.py`` (``state``: 50 keys,
``county``: 1,000 keys, both text, ``str`` dtype) is built in this process.
The pandas backend gets it as is; the Dask backend gets it split into
``--partitions`` partitions and persisted on a ``LocalCluster`` of
``--workers`` one-thread worker processes (the rows live on the workers, as
after loading on a real cluster).  Each query runs once cold (the first
release of the session: the pandas backend and the Dask backend both build
their key codes then) and ``--repeats`` times warm; the median warm time is
reported, with the ratio Dask / pandas, and the CPU time per warm query of
every process involved (this one, which also runs the ``LocalCluster``'s
scheduler, and the workers).  Writes
``benchmarks/results/dask-keys-<rows>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dpframe as dp
from benchmarks.data import BOUNDS, categories, census_frame
from benchmarks.releases import new_releases

OUT = Path(__file__).resolve().parent / "results"
EPSILON = 1.0


def queries(pf: dp.PrivateFrame) -> list[tuple[str, Callable[[], Any]]]:
    """Repeated group-bys over the string keys."""
    return [
        ("count by state", lambda: pf.groupby("state").count(epsilon=EPSILON)),
        ("count by county", lambda: pf.groupby("county").count(epsilon=EPSILON)),
        ("income sum by county", lambda: pf.groupby("county")["income"].sum(epsilon=EPSILON)),
    ]


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process (run on each worker too)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(
    pf: dp.PrivateFrame, repeats: int, cpu: Callable[[], float] = _cpu_seconds
) -> dict[str, dict[str, float]]:
    """Cold (first) and median warm seconds of each query, and warm CPU seconds per query.

    ``cpu`` gives the CPU seconds used so far by every process that works on
    a query (this one, and the workers on Dask): on a machine shared with
    other jobs, wall times of short queries vary with the load, CPU time much less.
    """
    out = {}
    for name, query in queries(pf):
        cold = _timed(query)
        before = cpu()
        warm = [_timed(query) for _ in range(repeats)]
        used = (cpu() - before) / repeats
        out[name] = {"cold_s": cold, "warm_s": statistics.median(warm), "warm_cpu_s": used}
        print(
            f"  {name}: cold {cold:.3f} s, warm {out[name]['warm_s']:.3f} s "
            f"(min {min(warm):.3f} s), warm CPU {used:.3f} s",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=3e7)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = int(args.rows)
    import dask.dataframe as dd
    from distributed import Client, LocalCluster, wait

    frame = census_frame(rows, key_dtype="str")
    cats = {k: v for k, v in categories().items() if k in ("state", "county")}
    print("pandas backend:", flush=True)
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pandas_times = measure(
        session.private_frame(frame, bounds=BOUNDS, categories=cats), args.repeats
    )
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
        from_pandas: Callable[..., Any] = dd.from_pandas
        persisted = client.persist(from_pandas(frame, npartitions=args.partitions, sort=False))
        wait(persisted)  # type: ignore[no-untyped-call]
        del frame
        print("Dask backend (rows persisted on the workers):", flush=True)
        session = dp.Session(epsilon=1e9, ledger=":memory:")
        pf = session.private_frame(persisted, bounds=BOUNDS, categories=cats)

        def cluster_cpu() -> float:
            workers: dict[str, float] = client.run(_cpu_seconds)
            return _cpu_seconds() + sum(workers.values())  # the scheduler runs in this process

        dask_times = measure(pf, args.repeats, cluster_cpu)
    finally:
        client.close()
        cluster.close()
    ratios = {q: dask_times[q]["warm_s"] / pandas_times[q]["warm_s"] for q in pandas_times}
    cpu_ratios = {
        q: dask_times[q]["warm_cpu_s"] / pandas_times[q]["warm_cpu_s"] for q in pandas_times
    }
    for q, r in ratios.items():
        print(f"{q}: warm Dask / warm pandas = {r:.2f} (CPU time {cpu_ratios[q]:.2f})")
    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="minutes"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores "
        f"(shared), Python {platform.python_version()}",
        "argv": sys.argv[1:] if argv is None else argv,
        "rows": rows,
        "partitions": args.partitions,
        "workers": args.workers,
        "pandas": pandas_times,
        "dask": dask_times,
        "warm_ratio": ratios,
        "warm_cpu_ratio": cpu_ratios,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / f"dask-keys-{rows:.0e}.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
