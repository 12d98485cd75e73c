"""RMSE of var, std and describe() on the bundled CPS wages, over repeated releases.

Run it once against a checkout with the midpoint variance and once against
one with the adaptive centre (PYTHONPATH picks the checkout):

    PYTHONPATH=. python -m benchmarks.run_variance_centre --releases 200

Prints one line per query: the RMSE of the released value around the exact
(clamped, ddof=0) value over the releases, and for grouped queries the RMSE
pooled over groups.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.releases import new_releases
from dpframe.examples.datasets import CPS1988_CATEGORIES, load_cps1988

BOUNDS = (0.0, 5000.0)


def _frame(df: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    return session.private_frame(
        df, bounds={"wage": BOUNDS}, categories={"region": CPS1988_CATEGORIES["region"]}
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--releases", type=int, default=200)
    args = parser.parse_args()
    df = load_cps1988()
    wage = df["wage"].clip(*BOUNDS)
    clipped = df.assign(wage=wage)
    by_region = clipped.groupby("region")["wage"]
    pf = _frame(df)
    rows = []
    for eps in (0.1, 1.0):
        for name, query, truth in (
            ("var", lambda e: [float(pf["wage"].var(epsilon=e))], [wage.var(ddof=0)]),
            ("std", lambda e: [float(pf["wage"].std(epsilon=e))], [wage.std(ddof=0)]),
            (
                "groupby(region) var",
                lambda e: pf.groupby("region")["wage"].var(epsilon=e).tolist(),
                None,
            ),
            (
                "describe() std (wage)",
                lambda e: [float(pf[["wage"]].describe(epsilon=2 * e).loc["std", "wage"])],
                [wage.std(ddof=0)],
            ),
            (
                "describe() mean (wage)",
                lambda e: [float(pf[["wage"]].describe(epsilon=2 * e).loc["mean", "wage"])],
                [wage.mean()],
            ),
        ):
            released = np.array([query(eps) for _ in range(args.releases)])
            if truth is None:
                keys = pf.groupby("region")["wage"].var(epsilon=eps).index
                truth = by_region.var(ddof=0).reindex(keys).tolist()
            rmse = float(np.sqrt(np.mean((released - np.array(truth)) ** 2)))
            rows.append((name, eps, rmse, float(np.mean(truth))))
    print(f"dpframe from {dp.__file__}, {args.releases} releases each")
    for name, eps, rmse, shown in rows:
        print(f"{name:26s} eps={eps:<4} RMSE {rmse:12.1f}  (true value about {shown:.1f})")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
