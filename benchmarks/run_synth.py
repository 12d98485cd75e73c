"""Synthetic copies: time, peak memory and accuracy of dpframe's MST, beside smartnoise-synth's.

The data are the bundled CPS 1988 rows resampled (with replacement, a seeded
numpy generator: benchmark data, not privacy noise) to each size.  Both
synthesizers get the same discretized table (wage in 16 bins over [0, 5000],
education 0..20, experience in 15 bins of 5 years over [-8, 64], the four
categorical columns) and the same privacy: ρ = ρ(ε = 1, δ = 1e-6) zCDP
(dpframe: ``rho=``; smartnoise-synth: ``epsilon=1, delta=1e-6``, which it
converts with the same bound).  Each run is a child process, so its peak
memory (``ru_maxrss``, minus the peak after the data were built) is its own.

smartnoise-synth pins pandas < 2.4 and pulls torch through opacus, so it
runs from its own virtual environment (``--smartnoise-python``, default
``$SMARTNOISE_PYTHON``; made with ``pip install smartnoise-synth --no-deps``
plus mbi, jax, disjoint-set, networkx, opendp and smartnoise-sql: the MST
synthesizer needs neither torch nor opacus).  Without it only dpframe runs.

Accuracy columns: the largest total variation distance between a 1-way
marginal of the copy and of the data, and the mean over all 21 pairs.

    python -m benchmarks.run_synth [--rows 1e5,1e6] [--smartnoise-python PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.releases import new_releases

SEED = 20240917
EPSILON, DELTA = 1.0, 1e-6
COLUMNS = ["wage", "education", "experience", "ethnicity", "smsa", "region", "parttime"]
WAGE_EDGES = tuple(float(x) for x in np.linspace(0.0, 5000.0, 17))
EXPERIENCE_EDGES = (*(-8.5 + 5 * i for i in range(15)), 64.5)


def resampled(rows: int, seed: int = 0) -> pd.DataFrame:
    """The CPS rows drawn with replacement to ``rows`` rows (seeded: ``SEED + seed``)."""
    from dpframe.examples.datasets import load_cps1988

    data = load_cps1988()
    picks = np.random.default_rng(SEED + seed).integers(0, len(data), rows)
    frame: pd.DataFrame = data.iloc[picks].reset_index(drop=True)
    return frame


def coded(frame: pd.DataFrame) -> np.ndarray:
    """Each row's cell per column (the shared discretization), as an int array."""
    from dpframe.examples.datasets import CPS1988_CATEGORIES

    out = np.empty((len(frame), len(COLUMNS)), dtype=np.int64)
    for j, name in enumerate(COLUMNS):
        if name in CPS1988_CATEGORIES:
            keys = CPS1988_CATEGORIES[name]
            out[:, j] = pd.Categorical(frame[name].astype(object), categories=keys).codes
            continue
        edges = {"wage": WAGE_EDGES, "experience": EXPERIENCE_EDGES}.get(name)
        values = frame[name].astype(float).to_numpy()
        if edges is None:  # education: one cell per year
            out[:, j] = np.clip(np.round(values), 0, 20).astype(np.int64)
        else:
            cells = np.searchsorted(np.asarray(edges), values, side="right") - 1
            out[:, j] = np.clip(cells, 0, len(edges) - 2)
    return out


def _sizes() -> list[int]:
    return [16, 21, 15, 2, 2, 4, 2]


def accuracy(real: np.ndarray, fake: np.ndarray) -> tuple[float, float]:
    """The largest 1-way TV and the mean 2-way TV between two coded tables."""
    sizes = _sizes()

    def dist(data: np.ndarray, cols: tuple[int, ...]) -> np.ndarray:
        index = np.ravel_multi_index(tuple(data[:, c] for c in cols), [sizes[c] for c in cols])
        counts = np.bincount(index, minlength=int(np.prod([sizes[c] for c in cols])))
        shares: np.ndarray = counts / max(counts.sum(), 1)
        return shares

    one = max(0.5 * np.abs(dist(real, (c,)) - dist(fake, (c,))).sum() for c in range(7))
    two = [
        0.5 * np.abs(dist(real, p) - dist(fake, p)).sum()
        for p in itertools.combinations(range(7), 2)
    ]
    return float(one), float(np.mean(two))


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_dpframe(rows: int, method: str = "mst") -> dict[str, Any]:
    """One dpframe copy of ``rows`` rows (``method`` "mst" or "aim"), in this process."""
    import dpframe as dp
    from dpframe.accounting.accountants import rho_from_epsilon_delta
    from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

    data = resampled(rows)
    real = coded(data)
    base = _peak_mib()
    session = dp.Session(epsilon=EPSILON, delta=DELTA, accounting="zcdp", ledger=":memory:")
    pf = session.private_frame(
        data,
        bounds=CPS1988_BOUNDS,
        categories=CPS1988_CATEGORIES,
        dtypes={"education": "integer", "experience": "integer"},
    )
    rho = rho_from_epsilon_delta(Fraction(EPSILON), Fraction(DELTA))
    start = time.perf_counter()
    copy = pf.synthesize(
        rho=rho,
        method=method,
        bins={"wage": list(WAGE_EDGES), "experience": list(EXPERIENCE_EDGES)},
        progress=False,
    )
    seconds = time.perf_counter() - start
    one, two = accuracy(real, coded(copy))
    return {
        "library": f"dpframe {method.upper()}",
        "rows": rows,
        "seconds": seconds,
        "peak_mib": _peak_mib() - base,
        "tv1_max": one,
        "tv2_mean": two,
        "rho": float(rho),
        "copy_rows": len(copy),
    }


SMARTNOISE_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time, warnings
    import numpy as np, pandas as pd
    warnings.filterwarnings("ignore")
    from snsynth.mst import MSTSynthesizer
    from snsynth.utils import cdp_rho
    path, out, eps, delta = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    real = np.load(path)
    frame = pd.DataFrame(real, columns=[f"c{i}" for i in range(real.shape[1])])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    synth = MSTSynthesizer(epsilon=eps, delta=delta)
    synth.fit(frame, categorical_columns=list(frame.columns), preprocessor_eps=0.0)
    fake = synth.sample(len(frame)).to_numpy().astype(np.int64)
    seconds = time.perf_counter() - start
    np.save(out, fake)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
    print(json.dumps({"seconds": seconds, "peak_mib": peak, "rho": float(cdp_rho(eps, delta))}))
    """
)


def run_smartnoise(python: str, rows: int) -> dict[str, Any] | str:
    """smartnoise-synth's MST on the same coded table (its own process and environment)."""
    real = coded(resampled(rows))
    with tempfile.TemporaryDirectory() as folder:
        data, out = Path(folder) / "real.npy", Path(folder) / "fake.npy"
        # smartnoise needs every cell of the domain present to learn it from the data
        # (it reads the domain off the data); the codes are 0..k-1 as for dpframe.
        np.save(data, real)
        script = Path(folder) / "child.py"
        script.write_text(SMARTNOISE_CHILD, encoding="utf-8")
        done = subprocess.run(
            [python, str(script), str(data), str(out), str(EPSILON), str(DELTA)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return f"failed: {done.stderr.strip().splitlines()[-1] if done.stderr else '?'}"
        measured = json.loads(done.stdout.strip().splitlines()[-1])
        one, two = accuracy(real, np.load(out))
    return {
        "library": "smartnoise-synth MST",
        "rows": rows,
        **measured,
        "tv1_max": one,
        "tv2_mean": two,
        "copy_rows": rows,
    }


def run_child(rows: int, method: str = "mst") -> dict[str, Any]:
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run_synth", "--child", str(rows), "--method", method],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e5,1e6", help="comma-separated sizes")
    parser.add_argument("--smartnoise-python", default=os.environ.get("SMARTNOISE_PYTHON", ""))
    parser.add_argument("--methods", default="mst,aim", help="dpframe methods: mst, aim")
    parser.add_argument("--method", default="mst", help=argparse.SUPPRESS)
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child_dpframe(args.child, args.method)))
        return
    sizes = [int(float(x)) for x in args.rows.split(",")]
    results: list[dict[str, Any]] = []
    for rows in sizes:
        for method in args.methods.split(","):
            results.append(run_child(rows, method.strip()))
            print(json.dumps(results[-1]), flush=True)
        if args.smartnoise_python:
            found = run_smartnoise(args.smartnoise_python, rows)
            if isinstance(found, str):
                print(f"smartnoise-synth at {rows} rows: {found}", flush=True)
            else:
                results.append(found)
                print(json.dumps(found), flush=True)
    print()
    print("| library | rows | seconds | peak MiB | max 1-way TV | mean 2-way TV | ρ |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['library']} | {r['rows']:,} | {r['seconds']:.1f} | {r['peak_mib']:.0f} | "
            f"{r['tv1_max']:.4f} | {r['tv2_mean']:.4f} | {r['rho']:.4f} |"
        )


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
