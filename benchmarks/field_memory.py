"""Peak memory of the pandas and the dpframe side of the field workload, in a fresh process.

Run by ``benchmarks.run_field`` as::

    python -m benchmarks.field_memory dpframe --data census-1000000.parquet --kind synthetic

The child reads the table, collects garbage, resets the kernel's peak-RSS
mark (``/proc/self/clear_refs``) and reads VmRSS; then runs the setup
(dpframe: ``private_frame``) and every query of the workload once; then
reads VmHWM.  It prints JSON with the frame's size
(``memory_usage(deep=True)``) and the peak RSS increase (VmHWM − VmRSS
before), measured the same way as for the other libraries in
``benchmarks/field_worker.py``.  Linux only (None elsewhere).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pandas as pd

import dpframe as dp
from benchmarks.field_worker import peak_since, reset_peak
from benchmarks.releases import new_releases
from benchmarks.workload import Query

__all__ = ["main", "measure"]


def _queries(df: pd.DataFrame, pf: dp.PrivateFrame, kind: str) -> list[Query]:
    from benchmarks.run_core import build_cps_queries, build_synthetic_queries

    if kind == "cps":
        return build_cps_queries(df, pf)
    return build_synthetic_queries(df, pf)


def _session_frame(df: pd.DataFrame, kind: str) -> dp.PrivateFrame:
    from benchmarks.run_core import SESSION_EPSILON, frame_schema

    bounds, categories = frame_schema(kind)
    session = dp.Session(epsilon=SESSION_EPSILON, ledger=":memory:")
    return session.private_frame(df, bounds=bounds, categories=categories)


def per_query(path: str, kind: str) -> dict[str, Any]:
    """dpframe only: the peak RSS increase of the setup and of each query on its own.

    Each query is run twice (the first run builds the key-code cache, which
    stays, so the second shows the query without it); the RSS before each
    step is the baseline of that step.
    """
    df = pd.read_parquet(path)
    out: dict[str, Any] = {"df_bytes": int(df.memory_usage(deep=True).sum())}
    before = reset_peak()
    pf = _session_frame(df, kind)
    out["private_frame"] = peak_since(before)
    for q in _queries(df, pf, kind):
        if q.in_workload or q.extended:
            before = reset_peak()
            q.dpframe()
            first = peak_since(before)
            before = reset_peak()
            q.dpframe()
            out[q.name] = {"first": first, "again": peak_since(before)}
    return out


def measure(side: str, path: str, kind: str) -> dict[str, Any]:
    """Peak RSS increase of one side's setup and queries (each query run once)."""
    df = pd.read_parquet(path)
    df_bytes = int(df.memory_usage(deep=True).sum())
    if side == "pandas":
        # The private frame is built only to construct the query list; it is
        # created before the peak is reset, so it does not count for pandas.
        queries = _queries(df, _session_frame(df, kind), kind)
        before = reset_peak()
        for q in queries:
            if q.in_workload or q.extended:
                q.pandas()
        return {"df_bytes": df_bytes, "peak_increase": peak_since(before)}
    before = reset_peak()
    pf = _session_frame(df, kind)
    for q in _queries(df, pf, kind):
        if q.in_workload or q.extended:
            q.dpframe()
    return {"df_bytes": df_bytes, "peak_increase": peak_since(before)}


def main(argv: list[str] | None = None) -> None:
    """Command line: print the measurement as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=("pandas", "dpframe"))
    parser.add_argument("--data", required=True)
    parser.add_argument("--kind", choices=("synthetic", "cps"), default="synthetic")
    parser.add_argument("--per-query", action="store_true", help="dpframe: each step on its own")
    args = parser.parse_args(argv)
    if args.per_query:
        json.dump(per_query(args.data, args.kind), sys.stdout, indent=1)
    else:
        json.dump(measure(args.side, args.data, args.kind), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
