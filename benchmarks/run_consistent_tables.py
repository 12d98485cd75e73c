"""RMSE of a CPS cross table (region x smsa) before and after dp.consistent.

    PYTHONPATH=. python -m benchmarks.run_consistent_tables --runs 200

Two set-ups, each repeated ``--runs`` times:

* same releases: the crosstab, the region counts, the smsa counts and the
  total, each at ε = 0.5 (2.0 in all).  Before: the cells as released, the
  margins as released on their own (and, for comparison, the crosstab's
  margins=True sums).  After: dp.consistent of the four.
* equal budget ε = 0.5 in all: before, the crosstab alone at 0.5 with its
  margins as sums of cells; after, the crosstab at 0.3, the region counts at
  0.1, the smsa counts and the total at 0.05 each, made consistent.

Prints the RMSE over cells, row margins, column margins and the total.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.releases import new_releases
from dpframe.examples.datasets import CPS1988_CATEGORIES, load_cps1988

REGIONS = CPS1988_CATEGORIES["region"]
SMSA = CPS1988_CATEGORIES["smsa"]


def _parts(full: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "cells": full[:-1, :-1].ravel(),
        "row margins": full[:-1, -1],
        "column margins": full[-1, :-1],
        "total": full[-1:, -1],
    }


def _rmse(errors: list[dict[str, np.ndarray]]) -> dict[str, float]:
    keys = errors[0].keys()
    return {k: float(np.sqrt(np.mean(np.concatenate([e[k] for e in errors]) ** 2))) for k in keys}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    df = load_cps1988()
    truth = pd.crosstab(df["region"], df["smsa"], margins=True)
    truth = truth.reindex(index=[*REGIONS, "All"], columns=[*SMSA, "All"]).to_numpy(float)
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pf = session.private_frame(df, categories=CPS1988_CATEGORIES)
    out: dict[str, list[dict[str, np.ndarray]]] = {}

    def add(name: str, full: np.ndarray) -> None:
        out.setdefault(name, []).append(
            {
                k: v - t
                for (k, v), t in zip(_parts(full).items(), _parts(truth).values(), strict=True)
            }
        )

    for _ in range(args.runs):
        table = dp.crosstab(pf["region"], pf["smsa"], epsilon=0.5, margins=True)
        rows = pf.groupby("region").size(epsilon=0.5)
        cols = pf.groupby("smsa").size(epsilon=0.5)
        total = pf.count(epsilon=0.5)
        add("A before: crosstab margins=True (sums)", table.to_numpy(float))
        separate = table.to_numpy(float).copy()
        separate[:-1, -1], separate[-1, :-1], separate[-1, -1] = rows, cols, float(total)
        add("A before: margins released on their own", separate)
        fitted = dp.consistent(table, total, rows=rows, columns=cols)
        add("A after: dp.consistent of the four", fitted.to_numpy(float))
        small = dp.crosstab(pf["region"], pf["smsa"], epsilon=0.3, margins=True)
        fitted_b = dp.consistent(
            small,
            pf.count(epsilon=0.05),
            rows=pf.groupby("region").size(epsilon=0.1),
            columns=pf.groupby("smsa").size(epsilon=0.05),
        )
        add("B after: 0.3 + 0.1 + 0.05 + 0.05, consistent", fitted_b.to_numpy(float))
    print(f"dpframe from {dp.__file__}; {args.runs} runs; RMSE in rows")
    print(f"{'':48s} {'cells':>8s} {'rows':>8s} {'columns':>8s} {'total':>8s}")
    for name, errors in out.items():
        r = _rmse(errors)
        print(
            f"{name:48s} {r['cells']:8.2f} {r['row margins']:8.2f} "
            f"{r['column margins']:8.2f} {r['total']:8.2f}"
        )
    print("(B before is 'A before: crosstab margins=True (sums)': the crosstab alone at 0.5)")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
