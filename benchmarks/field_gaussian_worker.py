"""Worker for ``benchmarks.run_gaussian_field``: one library's Gaussian counts, as JSON.

Runs *inside the library's virtual environment* (``.bench-venvs/<lib>/``)::

    .bench-venvs/opendp/bin/python benchmarks/field_gaussian_worker.py opendp \
        --data table.parquet --workload 1:1e-6:1 --workload 1:1e-6:100 --releases 2000

It imports neither dpframe nor anything that does: the standard library,
numpy, pandas, the library and ``benchmarks.field_gaussian_libs``.  Each
``--workload EPS:DELTA:K`` is ``K`` counts of the table sharing a total
(ε, δ); every variant the adapter returns is run until at least
``--releases`` counts were released (whole workloads) or ``--seconds``
passed (then fewer, reported).  Output (stdout, one JSON object): the
library's version and, per workload and variant, the σ the library exposes,
the cost it reports and the released values (``run_gaussian_field``
computes the statistics).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

if not __package__:  # run as a script in another library's venv: find the sibling module
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd

from benchmarks.field_gaussian_libs import ADAPTERS, Variant

__all__ = ["main", "measure"]


def measure(variant: Variant, releases: int, seconds: float) -> dict[str, Any]:
    """Run whole workloads of ``variant`` until ``releases`` counts (or ``seconds``)."""
    out: dict[str, Any] = {
        "name": variant.name,
        "api": variant.api,
        "sigma": variant.sigma,
        "sigma_source": variant.sigma_source,
        "cost": list(variant.cost) if variant.cost else None,
        "noise": variant.noise,
        "notes": variant.notes,
    }
    if variant.run is None:
        out["na"] = variant.na
        return out
    values: list[float] = list(variant.first)
    start = time.perf_counter()
    try:
        while len(values) < releases and time.perf_counter() - start < seconds:
            values.extend(variant.run())
    except Exception as exc:  # report, do not abort the other variants
        out["na"] = f"error after {len(values)} releases: {type(exc).__name__}: {exc}"[:300]
        return out
    out["values"] = values
    out["seconds"] = time.perf_counter() - start
    return out


def _workload(text: str) -> tuple[float, float, int]:
    eps, delta, k = text.split(":")
    return float(eps), float(delta), int(k)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lib", choices=sorted(ADAPTERS))
    parser.add_argument("--data", required=True, help="parquet file")
    parser.add_argument("--workload", action="append", type=_workload, required=True)
    parser.add_argument("--releases", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=300.0, help="per variant")
    parser.add_argument("--rows", type=int, default=0, help="use the first rows only (0: all)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    dist, adapter = ADAPTERS[args.lib]
    df = pd.read_parquet(args.data)
    if args.rows:
        df = df.head(args.rows)
    result: dict[str, Any] = {
        "lib": args.lib,
        "version": importlib.metadata.version(dist),
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "rows": len(df),
        "workloads": [],
    }
    for eps, delta, k in args.workload:
        entry: dict[str, Any] = {"epsilon": eps, "delta": delta, "k": k, "variants": []}
        try:
            variants = adapter(df, eps, delta, k)
        except Exception as exc:
            entry["na"] = f"{type(exc).__name__}: {exc}"[:300]
            variants = []
        for variant in variants:
            entry["variants"].append(measure(variant, args.releases, args.seconds))
            print(f"{args.lib} {eps}:{delta}:{k} {variant.name} done", file=sys.stderr, flush=True)
        result["workloads"].append(entry)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()  # peers only: dpframe is never imported here
