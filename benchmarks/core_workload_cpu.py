"""CPU seconds of the core workload, one tree against another (issue 35's last measure).

"The core workload no slower than today": each query of the core workload
(synthetic table of 10^5 rows with ``str`` keys, and the bundled CPS 1988
extract) timed as ``time.process_time`` (CPU seconds, so the other jobs on a
shared machine count less than in wall time), median of ``--reps`` warm new
releases per query (never re-run-cache hits: every call runs inside
``fresh_release(True)`` where the tree has it), in ``--processes`` worker
processes per tree, started alternately (base, head, base, head, ...).

Each tree is run with the same Python (this one) and its own source first on
``PYTHONPATH``, its own ``benchmarks`` package building the query list (the
same list in both trees). ``--ledgers memory,file`` runs the workload with
``ledger=":memory:"`` and with the default file ledger (``$DPFRAME_LEDGER``
pointing into a fresh temporary folder, as a user's would be a file;
``$DPFRAME_KEY`` there too).

Run from the repository root::

    python -m benchmarks.core_workload_cpu --base /work/wt/base35 --head . \\
        --processes 3 --reps 9 --ledgers memory,file [--also ../main]

``--also`` adds more trees (``also1``, ...), run in the same rotation.
Prints a markdown table per ledger: each tree's medians (median over the
processes of each process's median), their ratio, the total, and the 1-minute
load average read before each worker.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["main", "summarize", "worker"]


def _time_queries(queries: list[tuple[str, Callable[[], Any]]], reps: int) -> dict[str, float]:
    """Median CPU seconds of ``reps`` warm calls of each query (one warm-up call first)."""
    out: dict[str, float] = {}
    for name, run in queries:
        run()
        times = []
        for _ in range(reps):
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
        out[name] = statistics.median(times)
    return out


def worker(reps: int, ledger: str) -> dict[str, float]:
    """Run the workload in this process (the tree on ``sys.path``); CPU medians by query."""
    import contextlib
    import warnings

    warnings.simplefilter("ignore")
    import dpframe as dp
    from benchmarks.data import BOUNDS, as_key_dtype, categories, census_frame
    from benchmarks.run_core import build_cps_queries, build_synthetic_queries
    from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988

    try:
        from dpframe.engine.reruns import fresh_release

        fresh: contextlib.AbstractContextManager[Any] = fresh_release(True)
    except ImportError:  # a tree before the re-run cache: every call is new anyway
        fresh = contextlib.nullcontext()

    def session() -> Any:
        if ledger == "memory":
            return dp.Session(epsilon=1e9, ledger=":memory:")
        return dp.Session(epsilon=1e9)  # the default ledger: $DPFRAME_LEDGER

    out: dict[str, float] = {}
    with fresh:
        df = census_frame(100_000, key_dtype=as_key_dtype("str"))
        pf = session().private_frame(df, bounds=BOUNDS, categories=categories())
        syn = [("syn:" + q.name, q.dpframe) for q in build_synthetic_queries(df, pf)]
        out.update(_time_queries(syn, reps))
        cps = load_cps1988()
        pf2 = session().private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
        cq = [("cps:" + q.name, q.dpframe) for q in build_cps_queries(cps, pf2)]
        out.update(_time_queries(cq, reps))
    return out


def _run_worker(tree: Path, reps: int, ledger: str) -> dict[str, Any]:
    """One worker process on ``tree``; its medians and the load average before it."""
    load = os.getloadavg()[0]
    worker_args = ["--reps", str(reps), "--ledgers", ledger]
    env = dict(os.environ, PYTHONPATH=str(tree))
    with tempfile.TemporaryDirectory(prefix="dpframe-cpu-") as tmp:
        env["DPFRAME_LEDGER"] = str(Path(tmp) / "ledger.sqlite")
        env["DPFRAME_KEY"] = str(Path(tmp) / "key")  # not the user's key file
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--worker", *worker_args],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return {"load": load, "medians": json.loads(lines[-1])}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Markdown rows: query, each tree's ms and its ratio to base; then totals and loads.

    ``runs`` maps each tree's label (``base`` first) to its workers' results.
    """
    labels = list(runs)
    others = labels[1:]
    head = "| query | base ms | " + " | ".join(f"{o} ms | {o}/base" for o in others) + " |"
    lines = [head, "|---|---:|" + "---:|---:|" * len(others)]
    totals = dict.fromkeys(labels, 0.0)
    for name in runs["base"][0]["medians"]:
        ms = {t: statistics.median(r["medians"][name] for r in runs[t]) for t in labels}
        for t in labels:
            totals[t] += ms[t]
        cells = " | ".join(f"{ms[o] * 1e3:.3f} | {ms[o] / ms['base']:.2f}" for o in others)
        lines.append(f"| {name} | {ms['base'] * 1e3:.3f} | {cells} |")
    cells = " | ".join(
        f"**{totals[o] * 1e3:.1f}** | **{totals[o] / totals['base']:.3f}**" for o in others
    )
    lines.append(f"| **total** | **{totals['base'] * 1e3:.1f}** | {cells} |")
    loads = ", ".join(
        f"{r['load']:.2f}" for group in zip(*runs.values(), strict=True) for r in group
    )
    lines.append("")
    lines.append(f"1-minute load average before each worker ({', '.join(labels)}, ...): {loads}")
    return lines


def main(argv: list[str] | None = None) -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.core_workload_cpu")
    parser.add_argument("--base", type=Path, help="the baseline tree (repository root)")
    parser.add_argument("--head", type=Path, default=Path.cwd(), help="the tree measured")
    parser.add_argument(
        "--also", type=Path, action="append", default=[], help="another tree, run in turn"
    )
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--ledgers", default="memory,file")
    parser.add_argument("--json", type=Path, help="also save every worker's medians here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.reps, args.ledgers)), flush=True)
        return
    if args.base is None:
        parser.error("--base is required (the tree to compare against)")
    trees = {"base": args.base, "head": args.head}
    trees.update({f"also{i + 1}": tree for i, tree in enumerate(args.also)})
    saved: dict[str, Any] = {"trees": {k: str(v.resolve()) for k, v in trees.items()}}
    for ledger in args.ledgers.split(","):
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
        for _ in range(args.processes):
            for label, tree in trees.items():
                runs[label].append(_run_worker(tree.resolve(), args.reps, ledger))
        saved[ledger] = runs
        print(f"\n### ledger: {ledger}\n")
        print("\n".join(summarize(runs)), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(saved, indent=1))


if __name__ == "__main__":
    main()
