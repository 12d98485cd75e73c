"""Every pair of a synthetic copy against independence: the per-pair table of issue 26.

For each pair of columns, the total variation distance between the copy's
2-way marginal and the data's (mean and standard error over ``--runs``
copies), beside the TV of the product of the data's own 1-way margins (what
a copy that knew every margin exactly but no dependence would score).  A
pair passes when its mean TV is at most the independence TV plus two
standard errors.

The pairs are measured on one fixed discretization, whatever bins the
copy used: wage in 16 bins over [0, 5000], education one cell per year
(values rounded), experience in 5-year runs of integers from -8, the four
categorical columns.

    python -m benchmarks.synth_pairs [--runs 10] [--method mst] [--dtypes declared|none]

``--dtypes none`` loads CPS as the issue's report did (no ``dtypes=``);
``declared`` declares education and experience integer.  Without ``dtypes=``
the copy's kinds come from the frame (issue 26 part 2).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np
import pandas as pd

from benchmarks.releases import new_releases

COLUMNS = ["wage", "education", "experience", "ethnicity", "smsa", "region", "parttime"]
WAGE_EDGES = np.linspace(0.0, 5000.0, 17)
EXPERIENCE_EDGES = np.asarray([-8.5 + 5 * i for i in range(15)] + [64.5])
SIZES = {"wage": 16, "education": 21, "experience": 15}


def coded(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each row's cell per column on the fixed discretization (a missing value: the last cell)."""
    from dpframe.examples.datasets import CPS1988_CATEGORIES

    out: dict[str, np.ndarray] = {}
    for name in COLUMNS:
        missing = frame[name].isna().to_numpy()
        if name in CPS1988_CATEGORIES:
            keys = CPS1988_CATEGORIES[name]
            codes = pd.Categorical(frame[name].astype(object), categories=keys).codes
            found = np.asarray(codes, dtype=np.int64)
        else:
            values = frame[name].astype(float).to_numpy()
            if name == "education":
                found = np.clip(np.round(np.nan_to_num(values)), 0, 20).astype(np.int64)
            else:
                edges = WAGE_EDGES if name == "wage" else EXPERIENCE_EDGES
                cells = np.searchsorted(edges, values, side="right") - 1
                found = np.clip(cells, 0, len(edges) - 2)
        out[name] = np.where(missing, size(name) - 1, found)
    return out


def size(name: str) -> int:
    """Cells of a column on the fixed discretization, its missing cell included."""
    from dpframe.examples.datasets import CPS1988_CATEGORIES

    return (SIZES.get(name) or len(CPS1988_CATEGORIES[name])) + 1


def table(codes: dict[str, np.ndarray], a: str, b: str) -> np.ndarray:
    """The normalised 2-way table of columns ``a`` and ``b``."""
    index = codes[a] * size(b) + codes[b]
    counts = np.bincount(index, minlength=size(a) * size(b)).astype(float)
    shares: np.ndarray = counts.reshape(size(a), size(b)) / counts.sum()
    return shares


def tv(p: np.ndarray, q: np.ndarray) -> float:
    return float(0.5 * np.abs(p - q).sum())


def independence(real: dict[str, np.ndarray]) -> dict[tuple[str, str], float]:
    """Each pair's TV between the data's table and the product of its margins."""
    found = {}
    for a, b in itertools.combinations(COLUMNS, 2):
        joint = table(real, a, b)
        found[(a, b)] = tv(joint, np.outer(joint.sum(axis=1), joint.sum(axis=0)))
    return found


def copies(runs: int, method: str, dtypes: str, epsilon: float) -> list[pd.DataFrame]:
    import dpframe as dp
    from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988

    data = load_cps1988()
    kinds = {"education": "integer", "experience": "integer"} if dtypes == "declared" else None
    made = []
    for _ in range(runs):
        session = dp.Session(epsilon=epsilon, delta=1e-6, ledger=":memory:")
        pf = session.private_frame(
            data, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, dtypes=kinds
        )
        made.append(pf.synthesize(epsilon=epsilon, method=method, progress=False))
    return made


def pair_table(made: list[pd.DataFrame]) -> list[dict[str, float | str]]:
    """Per pair: the copies' mean TV and its standard error, and the independence TV."""
    from dpframe.examples.datasets import load_cps1988

    real = coded(load_cps1988())
    base = independence(real)
    rows: list[dict[str, float | str]] = []
    coded_copies = [coded(c) for c in made]
    for a, b in itertools.combinations(COLUMNS, 2):
        truth = table(real, a, b)
        errors = np.array([tv(table(c, a, b), truth) for c in coded_copies])
        se = float(errors.std(ddof=1) / np.sqrt(len(errors))) if len(errors) > 1 else 0.0
        rows.append(
            {
                "pair": f"{a} × {b}",
                "copy_tv": float(errors.mean()),
                "copy_se": se,
                "independence_tv": base[(a, b)],
                "passes": "yes" if errors.mean() <= base[(a, b)] + 2 * se else "NO",
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--method", default="mst")
    parser.add_argument("--dtypes", default="none", choices=["none", "declared"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    made = copies(args.runs, args.method, args.dtypes, args.epsilon)
    seconds = time.perf_counter() - start
    rows = pair_table(made)
    print(f"{args.method.upper()}, ε = {args.epsilon}, {args.runs} copies, dtypes={args.dtypes}")
    print(f"dtypes of the last copy: {dict(made[-1].dtypes.astype(str))}")
    print(f"{seconds / args.runs:.1f} s per copy")
    print("| pair | copy TV (mean ± se) | independence TV | passes |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['pair']} | {r['copy_tv']:.4f} ± {r['copy_se']:.4f} | "
            f"{r['independence_tv']:.4f} | {r['passes']} |"
        )
    means = [float(r["copy_tv"]) for r in rows]
    print(
        f"mean over pairs: {np.mean(means):.4f}; failing: {sum(r['passes'] == 'NO' for r in rows)}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(
                {"args": vars(args), "seconds_per_copy": seconds / args.runs, "rows": rows}, out
            )


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
