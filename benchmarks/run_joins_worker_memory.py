"""The Dask workers' peak memory for the joins benchmark (issue 32): dpframe against plain Dask.

``benchmarks/run_joins.py --dask`` measures the client's peak only.  Here each
side runs in a fresh local cluster (two one-thread worker processes) in its own
process: the two tables are persisted on the workers, each worker's peak RSS
(``ru_maxrss``) is read, then the side's work runs and the peaks are read again.
The increase, added over the workers, is what the work itself needed beyond the
data (the peak never falls, so each side has its own cluster).

* ``plain``: ``visits.merge(people, on="person_id").groupby("region")["cost"].mean()``;
* ``dpframe``: both tables loaded with a privacy unit (the default ledger file),
  ``visits.merge(people, on="person_id")``, then one grouped mean (the join is kept on
  the workers after it, as every later release reads it).

    python -m benchmarks.run_joins_worker_memory [--visits 10000000] [--people 1000000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["main"]


def _peak_bytes() -> int:
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _side(side: str, visits: int, people: int) -> dict[str, Any]:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster, wait

    import dpframe as dp
    from benchmarks.run_joins import _tables, load_both, session_for

    cluster: Any = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=1, dashboard_address=":0"
    )
    client: Any = Client(cluster)  # type: ignore[no-untyped-call]
    trips, folks = _tables(visits, people)
    key_bytes = int(trips["person_id"].memory_usage(index=False))
    from_pandas: Any = dd.from_pandas
    parts = max(2, len(trips) // 1_000_000)
    dask_trips = from_pandas(trips, npartitions=parts).persist()
    dask_folks = from_pandas(folks, npartitions=max(1, parts // 10)).persist()
    settle: Any = wait
    settle([dask_trips, dask_folks])  # the data is on the workers before the first reading
    before = client.run(_peak_bytes)
    with tempfile.TemporaryDirectory() as folder:
        if side == "plain":
            dask_trips.merge(dask_folks, on="person_id").groupby("region", observed=True)[
                "cost"
            ].mean().compute()
        else:
            session = session_for(dp, "file", folder)  # the default: a ledger file
            v, p = load_both(dp, session, dask_trips, dask_folks)
            v.merge(p, on="person_id").groupby("region")["cost"].mean(epsilon=1)
        after = client.run(_peak_bytes)
    client.close()
    cluster.close()
    increase = sum(after[w] - before[w] for w in before)
    return {"side": side, "key_bytes": key_bytes, "workers_peak_increase": increase}


def main(argv: list[str] | None = None) -> None:
    """Run each side in a fresh process and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--visits", type=int, default=10_000_000)
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--child", choices=["plain", "dpframe"])
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_side(args.child, args.visits, args.people)))
        return
    rows = []
    for side in ("plain", "dpframe"):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "benchmarks.run_joins_worker_memory", "--child", side),
                *("--visits", str(args.visits), "--people", str(args.people)),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    key = rows[0]["key_bytes"]
    print("| side | workers' peak RSS increase (MiB) | in copies of the join keys |")
    print("|---|---|---|")
    for row in rows:
        mib = row["workers_peak_increase"] / 2**20
        print(f"| {row['side']} | {mib:.0f} | {row['workers_peak_increase'] / key:.2f} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
