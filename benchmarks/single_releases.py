"""One release at a time against diffprivlib, both in memory, at 10^6 rows.

``python -m benchmarks.single_releases [--rows 1e6] [--rounds 5] [--repeats 7]
[--compare-path /path/to/another/checkout]``

The queries (ε = 1 each), on the synthetic census table (``benchmarks.data``)
plus a ``region`` key of 4 public values derived from ``state``:

| query | dpframe | diffprivlib 0.6 |
|---|---|---|
| count | ``pf.count(epsilon=1)`` | ``Geometric(epsilon=1, sensitivity=1).randomise(len(df))`` |
| sum | ``pf["income"].sum(epsilon=1)`` | ``tools.sum(x, epsilon=1, bounds=b)`` |
| mean | ``pf["income"].mean(epsilon=1)`` | ``tools.mean(x, epsilon=1, bounds=b)`` |
| 4-group mean | ``pf.groupby("region")["income"].mean(epsilon=1)`` | ``tools.mean`` per group |
| median | ``pf["income"].median(epsilon=1)`` | ``tools.median(x, epsilon=1, bounds=b)`` |

dpframe runs with its defaults except the ledger: ``ledger=":memory:"`` (the
file ledger's load-time cost is measured by the load probes), in a session
with a budget large enough for every call; diffprivlib with one
``BudgetAccountant``.  Both sides get the frame before timing starts (dpframe's
``private_frame`` and diffprivlib's ``to_numpy`` are not timed).

Each side is a fresh process reading the same parquet file: dpframe with this
interpreter (``PYTHONPATH`` points to ``--compare-path`` for a third side,
another checkout of dpframe, e.g. main before a change), diffprivlib in its
own virtual environment (``.bench-venvs/diffprivlib``, set up as
``benchmarks.run_field`` does).  Every round runs each side once (the order
rotates), each side times every query: its first call in the process
(``cold``: first-use imports, caches, a noise pool's first fill; reported
apart), then ``repeats`` calls (warm: their median), CPU time
(``time.process_time``, what a call costs whatever else runs on a shared
machine) and wall time (``time.perf_counter``).  Printed: per query,
the median over rounds of each side's median, and the median over rounds of
the per-round ratio dpframe / diffprivlib (a ratio below 1: dpframe faster).

The side process imports only the standard library, numpy, pandas and the
library it measures (it is run as a script, never as part of this package).
"""

from __future__ import annotations

import argparse
import contextlib
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

import numpy as np
import pandas as pd

__all__ = ["QUERIES", "main"]

QUERIES = ("count", "sum", "mean", "4-group mean", "median")
EPSILON = 1.0
VALUE, BOUNDS = "income", (0.0, 1e6)
REGIONS = ("northeast", "midwest", "south", "west")
STATES_PER_REGION = 13  # 50 states: 13, 13, 13, 11


def _dpframe_queries(df: pd.DataFrame) -> dict[str, Callable[[], Any]]:
    import dpframe as dp

    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pf = session.private_frame(df, bounds={VALUE: BOUNDS}, categories={"region": list(REGIONS)})
    return {
        "count": lambda: pf.count(epsilon=EPSILON),
        "sum": lambda: pf[VALUE].sum(epsilon=EPSILON),
        "mean": lambda: pf[VALUE].mean(epsilon=EPSILON),
        "4-group mean": lambda: pf.groupby("region")[VALUE].mean(epsilon=EPSILON),
        "median": lambda: pf[VALUE].median(epsilon=EPSILON),
    }


def _diffprivlib_queries(df: pd.DataFrame) -> dict[str, Callable[[], Any]]:
    from diffprivlib import tools  # type: ignore[import-not-found, unused-ignore]
    from diffprivlib.accountant import BudgetAccountant  # type: ignore[import-not-found, unused-ignore]
    from diffprivlib.mechanisms import Geometric  # type: ignore[import-not-found, unused-ignore]

    accountant = BudgetAccountant()
    values = df[VALUE].to_numpy(dtype=np.float64)
    region = df["region"]

    def grouped_mean() -> list[Any]:
        codes = pd.Categorical(region, categories=list(REGIONS)).codes
        return [
            tools.mean(values[codes == k], epsilon=EPSILON, bounds=BOUNDS, accountant=accountant)
            for k in range(len(REGIONS))
        ]

    return {
        "count": lambda: Geometric(epsilon=EPSILON, sensitivity=1).randomise(len(df)),
        "sum": lambda: tools.sum(values, epsilon=EPSILON, bounds=BOUNDS, accountant=accountant),
        "mean": lambda: tools.mean(values, epsilon=EPSILON, bounds=BOUNDS, accountant=accountant),
        "4-group mean": grouped_mean,
        "median": lambda: tools.median(
            values, epsilon=EPSILON, bounds=BOUNDS, accountant=accountant
        ),
    }


def _side(library: str, data: str, repeats: int) -> dict[str, Any]:
    """Time every query of one library in this process (the child's part)."""
    import warnings

    warnings.simplefilter("ignore")  # diffprivlib warns about its own defaults
    df = pd.read_parquet(data)
    build = _dpframe_queries if library == "dpframe" else _diffprivlib_queries
    queries = build(df)
    out: dict[str, Any] = {}
    for name in QUERIES:
        fn = queries[name]
        c0, w0 = time.process_time(), time.perf_counter()
        fn()  # the first call of the process (caches, first-use imports): reported apart
        cold = {"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}
        cpu, wall = [], []
        for _ in range(repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        out[name] = {
            "cpu": statistics.median(cpu),
            "wall": statistics.median(wall),
            "cold_cpu": cold["cpu"],
            "cold_wall": cold["wall"],
        }
    return out


def _frame(rows: int) -> pd.DataFrame:
    from benchmarks.data import STATES, census_frame

    df = census_frame(rows)
    state_region = {s: REGIONS[i // STATES_PER_REGION] for i, s in enumerate(STATES)}
    df["region"] = df["state"].map(state_region).astype(df["state"].dtype)
    return df


def _run_side(
    python: str, library: str, data: Path, repeats: int, pythonpath: str | None
) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [python, __file__, "--side", library, "--data", str(data), "--repeats", str(repeats)],
        cwd=tempfile.gettempdir(),
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{library} side failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _table(sides: dict[str, list[dict[str, Any]]], clock: str) -> list[str]:
    names = list(sides)
    lines = [
        f"| query ({clock}, ms) | "
        + " | ".join(names)
        + " | "
        + " | ".join(f"{n} / diffprivlib" for n in names if n != "diffprivlib")
        + " |",
        "|---" * (2 * len(names)) + "|",
    ]
    for query in QUERIES:
        cells = [f"{1e3 * statistics.median(r[query][clock] for r in sides[n]):.2f}" for n in names]
        ratios = [
            statistics.median(
                a[query][clock] / b[query][clock]
                for a, b in zip(sides[n], sides["diffprivlib"], strict=True)
            )
            for n in names
            if n != "diffprivlib"
        ]
        lines.append(
            f"| {query} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(f"{r:.2f}x" for r in ratios)
            + " |"
        )
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the rounds and print the table (CPU time, then wall time)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per query and round")
    parser.add_argument("--compare-path", default=None, help="another dpframe checkout to time")
    parser.add_argument("--side", choices=("dpframe", "diffprivlib"), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:  # the child
        print(json.dumps(_side(args.side, args.data, args.repeats)))
        return {}

    from benchmarks.run_field import LIBRARIES, ensure_venv, venv_python

    lib = LIBRARIES["diffprivlib"]
    with tempfile.TemporaryDirectory() as tmp:
        error = ensure_venv(lib, Path(tmp) / "pip.log")
        if error:
            raise SystemExit(f"diffprivlib's environment: {error}")
        data = Path(tmp) / "frame.parquet"
        _frame(int(args.rows)).to_parquet(data)
        here = str(Path(__file__).resolve().parent.parent)
        plan: dict[str, tuple[str, str, str | None]] = {
            "dpframe": (sys.executable, "dpframe", here),
            "diffprivlib": (str(venv_python(lib)), "diffprivlib", None),
        }
        if args.compare_path:
            plan["dpframe@compare"] = (sys.executable, "dpframe", args.compare_path)
        sides: dict[str, list[dict[str, Any]]] = {name: [] for name in plan}
        load = [os.getloadavg()[0]]
        for r in range(args.rounds):
            names = list(plan)
            for name in names[r % len(names) :] + names[: r % len(names)]:
                python, library, path = plan[name]
                sides[name].append(_run_side(python, library, data, args.repeats, path))
            load.append(os.getloadavg()[0])
    print(
        f"single releases at {int(args.rows):,} rows, {args.rounds} rounds x {args.repeats} calls"
    )
    for clock in ("cpu", "wall", "cold_cpu", "cold_wall"):
        print("\n".join(_table(sides, clock)))
        print()
    print(f"load average (1 min) per round: {', '.join(f'{x:.1f}' for x in load)}")
    if args.compare_path:
        print(f"dpframe@compare: {args.compare_path}")
    return {"sides": sides, "load": load}


def _new_releases() -> contextlib.AbstractContextManager[None]:
    """Each dpframe call a new release, never a re-run (issue 31); nothing for diffprivlib.

    A side runs as a script from a temporary folder: it imports neither this
    package (``benchmarks.releases`` is not on its path) nor, on diffprivlib's
    side, dpframe.
    """
    side = sys.argv[sys.argv.index("--side") + 1] if "--side" in sys.argv else "dpframe"
    if side != "dpframe":
        return contextlib.nullcontext()
    from dpframe.engine.reruns import fresh_release

    return fresh_release(True)


if __name__ == "__main__":
    with _new_releases():
        main()
