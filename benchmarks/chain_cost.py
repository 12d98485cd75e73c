"""The hash chain's cost per release (issue 31): time releases on a file ledger.

Run one tree at a time (the interleaving is the caller's: run this script
from main's tree and from the branch's tree in turn)::

    PYTHONPATH=. python -m benchmarks.chain_cost --rows 100000 --releases 60

Prints one JSON line: per-release wall times (ms) of count, sum, mean and a
grouped mean on ``rows`` rows with a file ledger (WAL, the default kind of
ledger), each release fresh (charged), and the ledger calls alone
(charge + complete, µs wall and CPU, on a file and in memory).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import dpframe as dp
from benchmarks.data import BOUNDS, categories, census_frame
from dpframe.accounting.accountants import Charge
from dpframe.accounting.ledger import Ledger


def _releases(rows: int, count: int, folder: Path) -> dict[str, float]:
    data = census_frame(rows)
    session = dp.Session(epsilon=1e9, ledger=folder / "ledger.sqlite", name="bench")
    pf = session.private_frame(
        data, bounds={"age": BOUNDS["age"], "income": BOUNDS["income"]}, categories=categories()
    )
    kinds: dict[str, Callable[[float], object]] = {
        "count": lambda e: pf.count(epsilon=e, fresh=True),
        "sum": lambda e: pf["income"].sum(epsilon=e, fresh=True),
        "mean": lambda e: pf["income"].mean(epsilon=e, fresh=True),
        "grouped mean": lambda e: pf.groupby("state")["income"].mean(epsilon=e, fresh=True),
    }
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for i in range(count):
        for name, release in kinds.items():
            start = time.perf_counter()
            release(0.1 + i * 1e-6)
            times[name].append((time.perf_counter() - start) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def _ledger_calls(count: int, path: str) -> tuple[float, float]:
    """Wall and CPU µs per charge + complete (``path``: a file, or ``:memory:``)."""
    ledger = Ledger(path)
    ledger.register("s", "pure", dp.Budget(10**9))
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        rid = ledger.charge("s", "d", Charge(epsilon=Fraction(1, 10)), lambda s: None, "q", "m")
        ledger.complete(rid, "1")
    wall = (time.perf_counter() - start) / count * 1e6
    return wall, (time.process_time() - cpu) / count * 1e6


def main() -> None:
    """Print the timings as one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--releases", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        medians = _releases(args.rows, args.releases, Path(folder))
        calls = _ledger_calls(500, str(Path(folder) / "calls.sqlite"))
        memory = _ledger_calls(5000, ":memory:")
    print(
        json.dumps(
            {
                "release_ms": medians,
                "file_ledger_us_wall_cpu": calls,
                "memory_ledger_us_wall_cpu": memory,
                "dpframe": dp.__file__,
            }
        )
    )


if __name__ == "__main__":
    main()
