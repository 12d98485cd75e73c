"""Latency that curator mode adds over embedded mode, on loopback.

Runs a curator (`python -m dpframe serve`) in its own process on the bundled
CPS data, then times the same releases embedded and through `dp.connect`.
Prints median and 99th-percentile latency per query and the difference.

    python -m benchmarks.run_curator [--repeats 300]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dpframe as dp
from benchmarks.report import save_results
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from tests.curator.support import ALICE, start_server, write_catalog

QUERIES: dict[str, Callable[[Any], Any]] = {
    "count": lambda pf: pf.count(epsilon=1e-4),
    "mean(wage)": lambda pf: pf["wage"].mean(epsilon=1e-4),
    "filtered mean": lambda pf: pf[pf["education"] >= 12]["wage"].mean(epsilon=1e-4),
    "groupby(region) mean": lambda pf: pf.groupby("region")["wage"].mean(epsilon=1e-4),
    "quantile(0.5)": lambda pf: pf["wage"].quantile(0.5, epsilon=1e-4),
}


def _times(query: Callable[[Any], Any], pf: Any, repeats: int) -> np.ndarray:
    query(pf)  # warm
    out = np.empty(repeats)
    for i in range(repeats):
        start = time.perf_counter()
        query(pf)
        out[i] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="dpframe-curator-bench-"))
    catalog = write_catalog(folder, alice_epsilon=1000.0, server="releases_per_minute = 1000000")
    server = start_server(catalog)
    try:
        remote = dp.connect(server.url, token=ALICE).open("cps")
        session = dp.Session(epsilon=1000.0, delta=1e-6, ledger=folder / "embedded.sqlite")
        embedded = session.private_frame(
            load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
        )
        rows = []
        for name, query in QUERIES.items():
            local = _times(query, embedded, args.repeats) * 1000
            far = _times(query, remote, args.repeats) * 1000
            rows.append(
                {
                    "query": name,
                    "embedded_median_ms": float(np.median(local)),
                    "embedded_p99_ms": float(np.percentile(local, 99)),
                    "curator_median_ms": float(np.median(far)),
                    "curator_p99_ms": float(np.percentile(far, 99)),
                    "added_median_ms": float(np.median(far) - np.median(local)),
                }
            )
    finally:
        server.stop()
    lines = [
        f"# Curator latency on loopback ({args.repeats} releases per query, CPS 28,155 rows)",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
        f"Python {platform.python_version()}; both ledgers are SQLite files.",
        "",
        "| query | embedded median ms | embedded p99 ms | curator median ms | curator p99 ms "
        "| added median ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['query']} | {row['embedded_median_ms']:.2f} | {row['embedded_p99_ms']:.2f} "
            f"| {row['curator_median_ms']:.2f} | {row['curator_p99_ms']:.2f} "
            f"| {row['added_median_ms']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    results = {"rows": rows, "repeats": args.repeats, "wall_s": time.perf_counter() - started}
    save_results(results, text, Path(__file__).parent / "results", "curator")


if __name__ == "__main__":
    main()
