"""A private join against pandas' merge + groupby: time and peak memory (issue 32).

A visits table (``--visits`` rows: person_id, cost) joined to a people table
(``--people`` rows: person_id, region, age), then the mean cost per region.

* pandas: ``visits.merge(people, on="person_id").groupby("region")["cost"].mean()``;
* dpframe (embedded pandas backend): both tables loaded with a privacy unit of
  one ID space (visits at most 40 rows per person, people 1: with about 10
  visits per person nothing is cut), ``visits.merge(people, on="person_id")``,
  then ``groupby("region")["cost"].mean(epsilon=1)``.  Timed apart: loading
  (``private_frame``, which makes the per-person bounded copies), the first
  release (the join is computed, truncated per ID, kept, then aggregated),
  and a second release (the kept join is only aggregated).

Each measurement runs in a fresh process (dpframe is imported and one tiny
release made first, so module imports are not timed; the data is generated
from a fixed seed, then the peak-RSS mark is reset), pandas and dpframe
alternate, and each is repeated.  ``--dask`` adds dpframe on a local Dask
cluster (two one-thread worker processes, started and loaded with the data
before the clock; the client's peak memory says nothing of the workers', so
none is shown).  Usage::

    python -m benchmarks.run_joins --visits 10000000 --people 1000000 --repeat 3 [--dask]
        [--ledger file|memory]

``--ledger file`` (the default) opens each dpframe session as a user would,
with the default ledger file (``$DPFRAME_LEDGER`` pointed at a temporary
folder); ``--ledger memory`` uses ``ledger=":memory:"``.  Peak RSS increases
are over the RSS before loading: the load's own peak, the first release's
(the join), and the largest of the two.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.releases import new_releases

__all__ = ["main"]


def _tables(visits: int, people: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(20261129)
    folks = pd.DataFrame(
        {
            "person_id": np.arange(people, dtype=np.int64),
            "region": pd.Categorical(rng.choice(["northeast", "midwest", "south", "west"], people)),
            "age": rng.integers(18, 90, people),
        }
    )
    trips = pd.DataFrame(
        {
            "person_id": rng.integers(0, people, visits, dtype=np.int64),
            "cost": rng.uniform(0, 500, visits),
        }
    )
    return trips, folks


def load_both(dp: Any, session: Any, trips: Any, folks: Any) -> tuple[Any, Any]:
    """The two tables as private frames of one ID space (pandas or Dask frames)."""
    v = session.private_frame(
        trips,
        bounds={"cost": (0, 500)},
        privacy_unit=dp.PrivacyUnit("person_id", max_rows=40, id_space="persons"),
    )
    p = session.private_frame(
        folks,
        categories={"region": ["northeast", "midwest", "south", "west"]},
        privacy_unit=dp.PrivacyUnit("person_id", max_rows=1, id_space="persons"),
    )
    return v, p


def session_for(dp: Any, ledger: str, folder: str) -> Any:
    """A session as a user opens one: the default ledger file (``ledger="file"``) or in memory."""
    if ledger == "file":
        os.environ["DPFRAME_LEDGER"] = os.path.join(folder, "ledger.sqlite")
        return dp.Session(epsilon=10)  # the default configuration: a ledger file
    return dp.Session(epsilon=10, ledger=":memory:")


def _child(side: str, visits: int, people: int, ledger: str = "memory") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        return _measured(side, visits, people, ledger, folder)


def _measured(side: str, visits: int, people: int, ledger: str, folder: str) -> dict[str, Any]:
    import dpframe as dp  # imported (and its first-use modules warmed) before the clock
    from benchmarks.field_worker import peak_since, reset_peak

    tiny = pd.DataFrame({"g": ["a"], "x": [1.0]})
    warm = dp.Session(epsilon=10, ledger=":memory:").private_frame(
        tiny, bounds={"x": (0, 1)}, categories={"g": ["a"]}
    )
    warm.groupby("g")["x"].mean(epsilon=1)
    trips, folks = _tables(visits, people)
    key_bytes = int(trips["person_id"].memory_usage(index=False))
    out: dict[str, Any] = {"side": side, "key_bytes": key_bytes}
    before = reset_peak()
    start, cpu = time.perf_counter(), time.process_time()
    if side == "pandas":
        answer = trips.merge(folks, on="person_id").groupby("region", observed=True)["cost"].mean()
        out["release_s"] = time.perf_counter() - start
        out["release_cpu_s"] = time.process_time() - cpu
        out["answer"] = {str(k): float(v) for k, v in answer.items()}
    elif side == "dask":
        out.update(_dask_side(dp, trips, folks, session_for(dp, ledger, folder)))
    else:
        session = session_for(dp, ledger, folder)
        v, p = load_both(dp, session, trips, folks)
        out["load_s"] = time.perf_counter() - start
        out["load_cpu_s"] = time.process_time() - cpu
        out["load_peak_bytes"] = peak_since(before)
        joined = v.merge(p, on="person_id")
        mark = reset_peak()  # the release's own peak, over the RSS before loading
        start, cpu = time.perf_counter(), time.process_time()
        answer = joined.groupby("region")["cost"].mean(epsilon=1)
        out["release_s"] = time.perf_counter() - start
        out["release_cpu_s"] = time.process_time() - cpu
        release_peak = peak_since(mark)
        if release_peak is not None and mark is not None and before is not None:
            out["release_peak_bytes"] = release_peak + mark - before
        start = time.perf_counter()
        joined.groupby("region")["cost"].mean(epsilon=1)
        out["again_s"] = time.perf_counter() - start
        out["answer"] = {str(k): float(v) for k, v in answer.items()}
    out["peak_bytes"] = max(
        peak_since(before) or 0, out.get("load_peak_bytes") or 0, out.get("release_peak_bytes") or 0
    )
    return out


def _dask_side(dp: Any, trips: pd.DataFrame, folks: pd.DataFrame, session: Any) -> dict[str, Any]:
    """dpframe on Dask: a local cluster of two one-thread workers (started before the clock).

    Before the clock, as on the pandas side, dpframe is warmed on the
    workers too (a 10,000-row frame loaded and counted: the workers import
    dpframe's modules on their first task), and plain Dask's merge + groupby
    runs once.
    """
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    cluster: Any = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=1, dashboard_address=":0"
    )
    client: Any = Client(cluster)  # type: ignore[no-untyped-call]
    parts = max(2, len(trips) // 1_000_000)
    from_pandas: Any = dd.from_pandas
    dask_trips = from_pandas(trips, npartitions=parts).persist()
    dask_folks = from_pandas(folks, npartitions=max(1, parts // 10)).persist()
    warm = dp.Session(epsilon=10, ledger=":memory:")  # dpframe's modules on the workers too
    small = from_pandas(trips.head(10_000), npartitions=2)
    warm_v = warm.private_frame(
        small, bounds={"cost": (0, 500)}, privacy_unit=dp.PrivacyUnit("person_id", max_rows=40)
    )
    warm_v.count(epsilon=1)
    out: dict[str, Any] = {}
    for _ in range(2):  # plain Dask on the same cluster, once to warm it: the Dask baseline
        start = time.perf_counter()
        dask_trips.merge(dask_folks, on="person_id").groupby("region", observed=True)[
            "cost"
        ].mean().compute()
        out["plain_s"] = time.perf_counter() - start
    start = time.perf_counter()
    v, p = load_both(dp, session, dask_trips, dask_folks)
    out["load_s"] = time.perf_counter() - start
    joined = v.merge(p, on="person_id")
    start = time.perf_counter()
    answer = joined.groupby("region")["cost"].mean(epsilon=1)
    out["release_s"] = time.perf_counter() - start
    start = time.perf_counter()
    joined.groupby("region")["cost"].mean(epsilon=1)
    out["again_s"] = time.perf_counter() - start
    out["answer"] = {str(k): float(v) for k, v in answer.items()}
    client.close()
    cluster.close()
    return out


def _run(side: str, visits: int, people: int, ledger: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run_joins",
            "--child",
            side,
            "--visits",
            str(visits),
            "--people",
            str(people),
            "--ledger",
            ledger,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) for r in rows)


def main(argv: list[str] | None = None) -> None:
    """Run the comparison and print a table (and the raw runs as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--visits", type=int, default=10_000_000)
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=["pandas", "dpframe", "dask"])
    parser.add_argument("--dask", action="store_true", help="also dpframe on a local Dask cluster")
    parser.add_argument(
        "--ledger",
        choices=["file", "memory"],
        default="file",
        help="dpframe's ledger: a file (the default configuration) or ':memory:'",
    )
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.visits, args.people, args.ledger)))
        return
    sides = ("pandas", "dpframe", "dask") if args.dask else ("pandas", "dpframe")
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for _ in range(args.repeat):  # interleaved
        for side in sides:
            runs[side].append(_run(side, args.visits, args.people, args.ledger))
    pandas_s = _median(runs["pandas"], "release_s")
    pandas_mb = _median(runs["pandas"], "peak_bytes") / 2**20
    dp_rows = runs["dpframe"]
    key_mb = _median(dp_rows, "key_bytes") / 2**20
    load = os.getloadavg()
    print(
        f"{args.visits:,} visits x {args.people:,} people, medians of {args.repeat} runs, "
        f"ledger {args.ledger}, load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    print("| side | step | time (s) | x pandas | peak RSS increase (MiB) |")
    print("|---|---|---|---|---|")
    print(f"| pandas | merge + groupby mean | {pandas_s:.2f} | 1.00 | {pandas_mb:.0f} |")
    for step, key, peak in (
        ("load both (bounded copies)", "load_s", "load_peak_bytes"),
        ("first release (join, truncate, mean)", "release_s", "release_peak_bytes"),
        ("second release (kept join)", "again_s", ""),
    ):
        t = _median(dp_rows, key)
        mb = f"{_median(dp_rows, peak) / 2**20:.0f}" if peak else ""
        print(f"| dpframe | {step} | {t:.2f} | {t / pandas_s:.2f} | {mb} |")
    dp_mb = _median(dp_rows, "peak_bytes") / 2**20
    total = _median(dp_rows, "load_s") + _median(dp_rows, "release_s")
    ratio = total / pandas_s
    print(f"| dpframe | load + first release | {total:.2f} | {ratio:.2f} | {dp_mb:.0f} |")
    extra = (dp_mb - pandas_mb) / key_mb
    print(f"dpframe's peak over pandas': {dp_mb - pandas_mb:.0f} MiB = {extra:.2f} key copies")
    for step, key in (
        ("load both", "load_s"),
        ("first release", "release_s"),
        ("second release", "again_s"),
    ):
        if args.dask:
            t = _median(runs["dask"], key)
            print(f"| dpframe on Dask (2 workers) | {step} | {t:.2f} | {t / pandas_s:.2f} | |")
    if args.dask:
        dask_rows = runs["dask"]
        total = _median(dask_rows, "load_s") + _median(dask_rows, "release_s")
        plain = _median(dask_rows, "plain_s")
        print(
            f"| dpframe on Dask (2 workers) | load + first release | {total:.2f} | "
            f"{total / pandas_s:.2f} | |"
        )
        print(
            f"| plain Dask (same cluster) | merge + groupby mean | {plain:.2f} | "
            f"{plain / pandas_s:.2f} | |"
        )
        print(f"dpframe on Dask, load + first release / plain Dask: {total / plain:.2f}x")
    pandas_cpu = _median(runs["pandas"], "release_cpu_s")
    dp_cpu = _median(dp_rows, "load_cpu_s") + _median(dp_rows, "release_cpu_s")
    print(
        f"CPU time (this process; less sensitive to a shared machine's load): pandas "
        f"{pandas_cpu:.2f} s, dpframe load {_median(dp_rows, 'load_cpu_s'):.2f} s + first "
        f"release {_median(dp_rows, 'release_cpu_s'):.2f} s = {dp_cpu / pandas_cpu:.2f}x"
    )
    print(f"join keys (visits.person_id): {key_mb:.0f} MiB")
    print(json.dumps(runs))


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
