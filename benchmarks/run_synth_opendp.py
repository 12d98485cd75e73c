"""Synthetic copies: dpframe's MST and AIM beside OpenDP's (``opendp.extras.mbi``: private-pgm).

The data are the bundled CPS 1988 rows resampled with replacement (a seeded
numpy generator: benchmark data, not privacy noise) to each size, on one
discretization for every library (``benchmarks.run_synth``: wage in 16 bins
over [0, 5000], education 0..20, experience in 15 runs of 5 years from -8,
the four categorical columns).  Privacy: the same zCDP ρ for all, ρ(ε = 1,
δ = 1e-6) as dpframe converts it (dpframe ``rho=`` in a zCDP session; OpenDP
``dp.loss_of(rho=ρ)``).  Every run is a child process (its own peak memory:
``ru_maxrss`` minus the peak after the data were built), repeated with
fresh randomness; the table gives the mean and its standard error.

Caps (identical where both have the knob): AIM runs 2d rounds (dpframe's
fixed schedule; OpenDP ``AIM(rounds=2 * d)``, its default is 16d), its
model is capped at ``--model-cells`` float64 cells (default 2**17, dpframe's
``MAX_AIM_GROWN_CELLS``, set in dpframe's child for another cap; OpenDP
``max_size`` = cells × 8 bytes: 1 MB) and its workload is every pair and triple
(OpenDP ``queries=3``; dpframe drops triples over 2**13 cells, none here).
Everything else is each library's default (OpenDP spends half the request
on 1-way marginals, dpframe a third (MST) or a tenth (AIM)).

OpenDP's mbi pulls JAX and pins its own versions, so it runs from its own
virtual environment (``--opendp-python``, default
``.bench-venvs/opendp/bin/python``, made with ``pip install "opendp[mbi]"
pandas``).  Its time includes JAX's compilation in each fresh process.

Accuracy: the largest total variation distance of a 1-way marginal from the
data's, and the mean over the 21 pairs and the 35 triples.

    python -m benchmarks.run_synth_opendp [--rows 1e5,1e6] [--repeats 3] [--libraries opendp]
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

from benchmarks.releases import new_releases
from benchmarks.run_synth import EXPERIENCE_EDGES, WAGE_EDGES, _sizes, coded, resampled
from dpframe.plan.releases.synthesis import MAX_AIM_GROWN_CELLS

EPSILON, DELTA = 1.0, 1e-6
VENV_PYTHON = ".bench-venvs/opendp/bin/python"
#: AIM's model cap for both libraries unless ``--model-cells`` (dpframe's own default).
DEFAULT_MODEL_CELLS = MAX_AIM_GROWN_CELLS


def accuracy(real: np.ndarray, fake: np.ndarray) -> dict[str, float]:
    """Max 1-way TV, mean 2-way and 3-way TV of two coded tables (-1, missing: its own cell)."""
    sizes = [k + 1 for k in _sizes()]
    real, fake = (np.where(t < 0, np.asarray(sizes) - 1, t) for t in (real, fake))

    def dist(data: np.ndarray, cols: tuple[int, ...]) -> np.ndarray:
        index = np.ravel_multi_index(tuple(data[:, c] for c in cols), [sizes[c] for c in cols])
        counts = np.bincount(index, minlength=int(np.prod([sizes[c] for c in cols])))
        shares: np.ndarray = counts / max(counts.sum(), 1)
        return shares

    def tv(cols: tuple[int, ...]) -> float:
        return float(0.5 * np.abs(dist(real, cols) - dist(fake, cols)).sum())

    d = len(sizes)
    return {
        "tv1_max": max(tv((c,)) for c in range(d)),
        "tv2_mean": float(np.mean([tv(p) for p in itertools.combinations(range(d), 2)])),
        "tv3_mean": float(np.mean([tv(t) for t in itertools.combinations(range(d), 3)])),
    }


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rho() -> Fraction:
    from dpframe.accounting.accountants import rho_from_epsilon_delta

    return rho_from_epsilon_delta(Fraction(EPSILON), Fraction(DELTA))


def child_dpframe(rows: int, method: str, seed: int, model_cells: int) -> dict[str, Any]:
    """One dpframe copy (in this process): the data resampled with ``seed``."""
    import dpframe as dp
    from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
    from dpframe.mechanisms.synth import synth_aim

    vars(synth_aim)["MAX_AIM_GROWN_CELLS"] = model_cells  # the cap (default: dpframe's own)

    data = resampled(rows, seed)
    real = coded(data)
    base = _peak_mib()
    session = dp.Session(epsilon=10.0, delta=DELTA, ledger=":memory:", accounting="zcdp")
    pf = session.private_frame(data, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    start = time.perf_counter()
    copy = pf.synthesize(
        rho=rho(),
        method=method,
        bins={"wage": list(WAGE_EDGES), "experience": list(EXPERIENCE_EDGES)},
        progress=False,
    )
    seconds = time.perf_counter() - start
    return {
        "library": f"dpframe {method.upper()}" + _cap_label(method, model_cells),
        "rows": rows,
        "seconds": seconds,
        "peak_mib": _peak_mib() - base,
        **accuracy(real, coded(copy)),
    }


OPENDP_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time, warnings
    import numpy as np, polars as pl
    warnings.filterwarnings("ignore")
    import opendp.prelude as dp
    dp.enable_features("contrib")
    path, out, rho, method = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    sizes = json.loads(sys.argv[5])
    real = np.load(path)
    names = [f"c{i}" for i in range(real.shape[1])]
    frame = pl.LazyFrame({n: real[:, i].astype(np.int64) for i, n in enumerate(names)})
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    d = len(names)
    if method == "aim":
        algorithm = dp.mbi.AIM(rounds=2 * d, max_size=float(sys.argv[6]), queries=3)
    else:
        algorithm = dp.mbi.MST()
    context = dp.Context.compositor(
        data=frame,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(rho=rho),
        split_evenly_over=1,
    )
    keys = {n: list(range(k)) for n, k in zip(names, sizes)}
    query = context.query().select(names)
    table = query.contingency_table(keys=keys, algorithm=algorithm).release()
    fake = table.synthesize()
    seconds = time.perf_counter() - start
    columns = []
    for i, n in enumerate(names):
        col = fake[n].to_numpy().astype(float)
        columns.append(np.where(np.isnan(col), -1, col).astype(np.int64))  # a null: its own cell
    np.save(out, np.stack(columns, axis=1))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
    import itertools
    model = {}  # the fitted model's own marginals (its null cell last), outside the timing
    for r in (1, 2, 3):
        for clique in itertools.combinations(range(d), r):
            values = np.asarray(table.project([names[i] for i in clique]), dtype=float)
            model["_".join(map(str, clique))] = values
    np.savez(out + ".model.npz", **model)
    print(json.dumps({"seconds": seconds, "peak_mib": peak}))
    """
)


def _sizes_text() -> str:
    return json.dumps(_sizes())


def run_opendp(
    python: str, rows: int, method: str, seed: int, model_cells: int
) -> dict[str, Any] | str:
    """OpenDP's synthesizer on the same coded table (its own process and environment)."""
    real = coded(resampled(rows, seed))
    with tempfile.TemporaryDirectory() as folder:
        data, out = Path(folder) / "real.npy", Path(folder) / "fake.npy"
        np.save(data, real)
        script = Path(folder) / "child.py"
        script.write_text(OPENDP_CHILD, encoding="utf-8")
        done = subprocess.run(
            [
                *(python, str(script), str(data), str(out), str(float(rho())), method),
                *(_sizes_text(), str(model_cells * 8 / 2**20)),  # max_size in MB
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"
            return f"failed: {last}"
        measured = json.loads(done.stdout.strip().splitlines()[-1])
        found = accuracy(real, np.load(out))
        fitted = model_accuracy(real, dict(np.load(str(out) + ".model.npz")))
    library = f"OpenDP {method.upper()}" + _cap_label(method, model_cells)
    return {"library": library, "rows": rows, **measured, **found, **fitted}


def _cap_label(method: str, model_cells: int) -> str:
    """`` (model ≤ 2**15 cells)`` for AIM under a cap other than the default."""
    if method != "aim" or model_cells == DEFAULT_MODEL_CELLS:
        return ""
    return f" (model ≤ 2**{model_cells.bit_length() - 1} cells)"


def model_accuracy(real: np.ndarray, model: dict[str, np.ndarray]) -> dict[str, float]:
    """The same errors for a model's own marginals (keyed "0_3" for columns 0 and 3)."""
    sizes = [k + 1 for k in _sizes()]
    found: dict[int, list[float]] = {1: [], 2: [], 3: []}
    for key, values in model.items():
        cols = tuple(int(c) for c in key.split("_"))
        index = np.ravel_multi_index(tuple(real[:, c] for c in cols), [sizes[c] for c in cols])
        truth = np.bincount(index, minlength=int(np.prod([sizes[c] for c in cols])))
        fitted = np.clip(values.ravel(), 0, None)
        tv = 0.5 * np.abs(truth / truth.sum() - fitted / max(fitted.sum(), 1e-300)).sum()
        found[len(cols)].append(float(tv))
    return {
        "model_tv1_max": max(found[1]),
        "model_tv2_mean": float(np.mean(found[2])),
        "model_tv3_mean": float(np.mean(found[3])),
    }


def run_child(rows: int, method: str, seed: int, model_cells: int) -> dict[str, Any]:
    args = ["--child", str(rows), "--method", method, "--seed", str(seed)]
    args += ["--model-cells", str(model_cells)]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run_synth_opendp", *args],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _summary(runs: list[dict[str, Any]], key: str) -> str:
    values = np.array([r[key] for r in runs], dtype=float)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
    digits = 1 if key in ("seconds", "peak_mib") else 4
    return f"{values.mean():.{digits}f} ± {se:.{digits}f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e5,1e6", help="comma-separated sizes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default="mst,aim")
    parser.add_argument("--libraries", default="dpframe,opendp", help="dpframe, opendp or both")
    parser.add_argument("--opendp-python", default=os.environ.get("OPENDP_PYTHON", VENV_PYTHON))
    parser.add_argument("--json", default="")
    parser.add_argument(
        "--model-cells", type=int, default=DEFAULT_MODEL_CELLS, help="AIM's model cap, both"
    )
    parser.add_argument("--method", default="mst", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child_dpframe(args.child, args.method, args.seed, args.model_cells)))
        return
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", flush=True)
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for rows in (int(float(x)) for x in args.rows.split(",")):
        for seed in range(args.repeats):  # interleaved: each seed runs every library
            for method in args.methods.split(","):
                for runner in args.libraries.split(","):
                    if runner == "dpframe":
                        found: dict[str, Any] | str = run_child(
                            rows, method, seed, args.model_cells
                        )
                    elif Path(args.opendp_python).exists():
                        found = run_opendp(args.opendp_python, rows, method, seed, args.model_cells)
                    else:
                        continue
                    if isinstance(found, str):
                        print(f"OpenDP {method} at {rows} rows: {found}", flush=True)
                        continue
                    found["load"] = os.getloadavg()[0]
                    print(json.dumps(found), flush=True)
                    groups.setdefault((found["library"], rows), []).append(found)
    if args.json:
        Path(args.json).write_text(json.dumps({str(k): v for k, v in groups.items()}, indent=1))
    print()
    head = "| library | rows | runs | seconds | peak MiB | max 1-way TV | mean 2-way TV"
    print(head + " | mean 3-way TV |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    keys = ("seconds", "peak_mib", "tv1_max", "tv2_mean", "tv3_mean")
    for (library, rows), runs in groups.items():
        cells = [_summary(runs, k) for k in keys]
        print(f"| {library} | {rows:,} | {len(runs)} | " + " | ".join(cells) + " |")
        if "model_tv2_mean" in runs[0]:
            cells = ["", ""] + [_summary(runs, f"model_{k}") for k in keys[2:]]
            name = f"{library}, its model's marginals"
            print(f"| {name} | {rows:,} | {len(runs)} | " + " | ".join(cells) + " |")
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
