"""No row ceiling on Dask: a count and a clamped sum over billions of rows generated on the workers.

Run from the repository root (needs ``dpframe[dask]``)::

    python -m benchmarks.run_dask_rows --rows 3e8      # measure the rate first
    python -m benchmarks.run_dask_rows --rows 3e9      # past 2**31 rows, sums past 2**53

The table is never written anywhere: each partition (``--partition-rows``
rows, one float64 column ``x``) is computed by a task on a worker
(``dask.dataframe.from_map``), evaluated there and dropped.  Row ``i`` holds
``x = 2**22 - (i mod 1000)``: with the public bounds ``(0, 2**22)`` the sum's
quantum is 1, every term is the value itself and the exact total is known in
closed form, so the backend's exact totals are checked against it (a total
past 2**53 is not a float64; the check is on Python integers).

Three passes, each timed: the DP count (ε = 1), the DP clamped sum (ε = 1),
and one exact pass of the backend (count and sum together) whose totals are
compared with the closed form.  Peak RSS of the client and of every worker
is read from ``/proc`` (VmHWM).  Writes ``benchmarks/results/dask-rows-<rows>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.releases import new_releases
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import Col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, Source

OUT = Path(__file__).resolve().parent / "results"
TOP = 2**22
PERIOD = 1000


def _rss_peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _generate(bounds: tuple[int, int]) -> pd.DataFrame:
    """Rows ``[start, stop)`` of the table (runs on a worker)."""
    start, stop = bounds
    x = np.arange(start, stop, dtype=np.int64)
    np.remainder(x, PERIOD, out=x)
    values = TOP - x.astype(np.float64)
    frame: pd.DataFrame = pd.DataFrame({"x": values})
    return frame


def expected_sum(rows: int) -> int:
    """Σ (2**22 − (i mod 1000)) over i < rows, in Python integers."""
    full, rest = divmod(rows, PERIOD)
    return rows * TOP - full * (PERIOD * (PERIOD - 1) // 2) - rest * (rest - 1) // 2


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def run(rows: int, partition_rows: int, client: Any) -> dict[str, Any]:
    """The three passes over ``rows`` generated rows."""
    import dask.dataframe as dd

    from dpframe.backends.dask_backend import DaskBackend

    ranges = [(s, min(s + partition_rows, rows)) for s in range(0, rows, partition_rows)]
    from_map: Callable[..., Any] = dd.from_map
    frame = from_map(_generate, ranges, meta=pd.DataFrame({"x": pd.Series(dtype=float)}))
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"x": (0, TOP)})
    out: dict[str, Any] = {"partitions": len(ranges)}
    count_s, count = _timed(lambda: pf.count(epsilon=1.0))
    print(f"DP count: {count_s:.1f} s -> {float(count):.6g}", flush=True)
    sum_s, total = _timed(lambda: pf["x"].sum(epsilon=1.0))
    print(f"DP clamped sum: {sum_s:.1f} s -> {float(total):.6g}", flush=True)
    agg = Aggregate(Source("data"), "sum", Col("x"), (0, TOP), (), "exact check")
    (summed,), _ = measures_for(agg)
    assert summed.quantum == 1.0
    backend = DaskBackend(frame)
    exact_s, exact = _timed(lambda: backend.compute(agg.plan, (Measure("rows"), summed), ()))
    got_rows, got_sum = int(exact[0][0]), int(exact[1][0])
    want = expected_sum(rows)
    print(
        f"exact pass: {exact_s:.1f} s -> rows {got_rows:,} (want {rows:,}), sum {got_sum:,} "
        f"(want {want:,}; {exact[1].dtype})",
        flush=True,
    )
    out.update(
        {
            "dp_count_s": count_s,
            "dp_count": float(count),
            "dp_sum_s": sum_s,
            "dp_sum": float(total),
            "exact_s": exact_s,
            "exact_rows": got_rows,
            "exact_sum": str(got_sum),
            "expected_sum": str(want),
            "sum_dtype": str(exact[1].dtype),
            "exact_ok": got_rows == rows and got_sum == want,
            "past_2_53": want > 2**53,
            "rows_per_s": rows / exact_s,
            "client_peak_rss_mib": _rss_peak_mib(),
            "worker_peak_rss_mib": sorted(client.run(_rss_peak_mib).values()),
        }
    )
    return out


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=3e9)
    parser.add_argument("--partition-rows", type=float, default=2**24)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GiB")
    args = parser.parse_args(argv)
    rows, partition_rows = int(args.rows), int(args.partition_rows)
    from distributed import Client, LocalCluster

    started = time.perf_counter()
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
        result = run(rows, partition_rows, client)
    finally:
        client.close()
        cluster.close()
    result.update(
        {
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="minutes"),
            "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores "
            f"(shared), Python {platform.python_version()}",
            "argv": sys.argv[1:] if argv is None else argv,
            "rows": rows,
            "partition_rows": partition_rows,
            "workers": args.workers,
            "memory_limit": args.memory_limit,
            "wall_s": time.perf_counter() - started,
        }
    )
    print(json.dumps(result, indent=1))
    OUT.mkdir(exist_ok=True)
    (OUT / f"dask-rows-{rows:.0e}.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
