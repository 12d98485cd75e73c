"""Grouped median: dpframe's ``groupby(k)[x].median(epsilon=1)`` against pandas' exact one.

Times, in the same run and on the same synthetic census table
(``benchmarks/data.py``: ``--rows`` rows, ``income`` bounded (0, 1e6), grouped
by ``county``, 1,000 declared keys):

* pandas: ``df.groupby("county")["income"].median()`` (the issue's reference)
  and ``df.groupby("county", sort=False)["income"].median()`` (pandas'
  fastest path; dpframe does not sort either);
* dpframe: ``pf.groupby("county")["income"].median(epsilon=1)`` (one charge,
  one histogram over 4,097 public candidates per county, one permute-and-flip
  selection per county), and ``quantile([0.25, 0.5, 0.75])``.

Each variant is warmed once (dpframe caches the key's codes on first use, as
a session does), then ``--rounds`` rounds run every variant once in turn, so
that a busy machine slows them alike; ratios are of medians from this run.
The issue's target: dpframe's grouped median no slower than 1.5x pandas'
exact grouped median.  The load average before and after is saved with the
timings (``benchmarks/results/grouped-quantiles-<date>.{md,json}``).

    python -m benchmarks.run_grouped_quantiles [--rows 10000000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.data import COUNTIES, as_key_dtype, census_frame, key_dtypes
from benchmarks.releases import new_releases
from benchmarks.report import markdown_table, save_results

TARGET = 1.5
PANDAS = "pandas groupby(county)[income].median()"
PANDAS_UNSORTED = "pandas groupby(county, sort=False)[income].median()"
DPFRAME = "dpframe groupby(county)[income].median(epsilon=1)"
QUARTILES = "dpframe groupby(county)[income].quantile([.25, .5, .75], epsilon=1)"


def _variants(df: pd.DataFrame) -> tuple[dict[str, Callable[[], Any]], dp.PrivateFrame]:
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pf = session.private_frame(
        df, bounds={"income": (0.0, 1e6)}, categories={"county": list(COUNTIES)}
    )
    variants: dict[str, Callable[[], Any]] = {
        PANDAS: lambda: df.groupby("county")["income"].median(),
        PANDAS_UNSORTED: lambda: df.groupby("county", sort=False)["income"].median(),
        DPFRAME: lambda: pf.groupby("county")["income"].median(epsilon=1),
        QUARTILES: lambda: pf.groupby("county")["income"].quantile([0.25, 0.5, 0.75], epsilon=1),
    }
    return variants, pf


def _accuracy(df: pd.DataFrame, released: pd.Series) -> dict[str, float]:
    """How far each county's released median is from the exact one, in ranks and in value."""
    clipped = df.assign(income=df["income"].clip(0.0, 1e6))
    exact = clipped.groupby("county")["income"].median()
    ranks = []
    for county, values in clipped.groupby("county")["income"]:
        data = np.sort(values.to_numpy())
        ranks.append(abs(np.searchsorted(data, released[county]) - len(data) / 2) / len(data))
    relative = np.abs(released[exact.index] - exact) / exact
    return {
        "median_rank_error_share": float(np.median(ranks)),
        "max_rank_error_share": float(np.max(ranks)),
        "median_relative_error": float(np.median(relative)),
    }


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark, print the table and save it (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keys", default="str", choices=key_dtypes())
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    load_before = os.getloadavg()
    rows = int(args.rows)
    df = census_frame(rows, key_dtype=as_key_dtype(args.keys))
    variants, _ = _variants(df)
    times: dict[str, list[float]] = {name: [] for name in variants}
    released = None
    for name, call in variants.items():  # warm-up (dpframe: the key's codes are cached)
        result = call()
        if name == DPFRAME:
            released = result
    for _ in range(args.rounds):
        for name, call in variants.items():
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    ratio = medians[DPFRAME] / medians[PANDAS]
    ratio_unsorted = medians[DPFRAME] / medians[PANDAS_UNSORTED]
    assert released is not None
    accuracy = _accuracy(df, released)
    load_after = os.getloadavg()
    header = ["query", "median s", "min s", "max s", f"/ {PANDAS.split()[0]} (sorted)"]
    table = markdown_table(
        header,
        [
            [
                name,
                f"{medians[name]:.3f}",
                f"{min(ts):.3f}",
                f"{max(ts):.3f}",
                f"{medians[name] / medians[PANDAS]:.2f}x",
            ]
            for name, ts in times.items()
        ],
    )
    verdict = "met" if ratio <= TARGET else "NOT met"
    lines = [
        f"# Grouped median, {rows:,} rows, 1,000 groups ({args.keys} keys)",
        "",
        f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"pandas {pd.__version__}, numpy {np.__version__}; {args.rounds} rounds after a warm-up; "
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}.",
        "",
        *table,
        "",
        f"dpframe's grouped median / pandas' exact grouped median: **{ratio:.2f}x** "
        f"(target <= {TARGET}x: {verdict}); against pandas' sort=False path: "
        f"{ratio_unsorted:.2f}x.",
        "",
        f"Accuracy at ε = 1 (one release): the released median's rank misses n/2 by "
        f"{accuracy['median_rank_error_share']:.2e} of a county's rows (median over counties; "
        f"worst {accuracy['max_rank_error_share']:.2e}); median relative error "
        f"{accuracy['median_relative_error']:.2e}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    results = {
        "rows": rows,
        "keys": args.keys,
        "rounds": args.rounds,
        "times_s": times,
        "median_s": medians,
        "ratio": ratio,
        "ratio_unsorted": ratio_unsorted,
        "target": TARGET,
        "accuracy": accuracy,
        "load_before": load_before,
        "load_after": load_after,
        "platform": platform.platform(),
        "wall_s": time.perf_counter() - start,
    }
    if not args.no_save:
        save_results(results, text, args.output_dir, "grouped-quantiles")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
