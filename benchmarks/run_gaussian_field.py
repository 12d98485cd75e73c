"""Gaussian counts at equal (ε, δ): dpframe against OpenDP, SmartNoise SQL, diffprivlib, PipelineDP.

Run from the repository root::

    python -m benchmarks.run_gaussian_field                     # every library, about 10 min
    python -m benchmarks.run_gaussian_field --libs opendp --releases 500 --no-save

Workloads: A, one count at (ε, δ) = (1, 1e-6) and (1, 1e-10); B, 100 count
releases sharing a total (1, 1e-6), each library with its own best
composition.  Every variant releases at least ``--releases`` counts (whole
workloads) unless it hits ``--seconds``; the report gives the σ the library
exposes, the empirical standard deviation of the released counts with its
standard error, and the mean absolute error.  A count's noise does not
depend on the number of rows, so the table is small (``--rows``, 10^4); the
PipelineDP worker uses its first ``--pipelinedp-rows`` rows (its LocalBackend
is pure Python).  The reference σ is the analytic Gaussian (Balle & Wang
2018) for one count and √k times it for k counts (exact composition of
Gaussians, Dong, Roth & Su 2019).

dpframe runs here, with ``accounting="zcdp"``, ``"approx"`` and, when the
installed dpframe accepts it, ``"gdp"``: one fresh session per workload.  The
other libraries run in their virtual environments (``.bench-venvs/<lib>``,
``benchmarks.run_field.ensure_venv``) through
``benchmarks/field_gaussian_worker.py``.  Writes
``benchmarks/results/gaussian-field-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import norm

import dpframe as dp
from benchmarks.data import census_frame
from benchmarks.releases import new_releases
from benchmarks.report import save_results
from benchmarks.run_core import RESULTS_DIR, _environment
from benchmarks.run_field import LIBRARIES, VENVS_DIR, Library, ensure_venv, venv_python

__all__ = ["WORKLOADS", "analytic_sigma", "main", "summarise"]

WORKER = Path(__file__).resolve().parent / "field_gaussian_worker.py"
#: (total ε, total δ, number of counts sharing it).
WORKLOADS: tuple[tuple[float, float, int], ...] = (
    (1.0, 1e-6, 1),
    (1.0, 1e-10, 1),
    (1.0, 1e-6, 100),
)
ACCOUNTINGS = ("zcdp", "approx", "gdp")

#: PipelineDP's PLD accountant needs Google's dp_accounting package.
GAUSS_LIBRARIES: dict[str, Library] = {
    **LIBRARIES,
    "pipeline-dp": dataclasses.replace(
        LIBRARIES["pipeline-dp"],
        requirements=(*LIBRARIES["pipeline-dp"].requirements, "dp-accounting"),
    ),
}


def analytic_sigma(epsilon: float, delta: float, k: int = 1) -> float:
    """σ of each of k Gaussian counts (sensitivity 1) that together are exactly (ε, δ)-DP.

    The analytic Gaussian (Balle & Wang 2018, Thm. 8): σ with
    Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) = δ; k Gaussians of σ compose to one
    of σ/√k (Dong, Roth & Su 2019), so each gets √k times the single σ.
    """

    def delta_of(sigma: float) -> float:
        a = 1.0 / (2.0 * sigma)
        return float(
            norm.cdf(a - epsilon * sigma) - math.exp(epsilon) * norm.cdf(-a - epsilon * sigma)
        )

    low, high = 1e-3, 1e4
    for _ in range(200):
        mid = math.sqrt(low * high)
        low, high = (low, mid) if delta_of(mid) <= delta else (mid, high)
    return high * math.sqrt(k)


def summarise(values: list[float], exact: float) -> dict[str, Any]:
    """Empirical σ (ddof 1) with its standard error, MAE with its standard error, bias."""
    x = np.asarray(values, dtype=np.float64) - exact
    n = len(x)
    if n < 3:
        return {"n": n}
    s = float(x.std(ddof=1))
    centred = x - x.mean()
    m4 = float(np.mean(centred**4))
    # delta method: Var(s²) ≈ (m4 − s⁴)/n, se(s) = se(s²)/(2s).
    se_s = math.sqrt(max(m4 - s**4, 0.0) / n) / (2.0 * s) if s > 0 else 0.0
    errors = np.abs(x)
    return {
        "n": n,
        "std": s,
        "std_se": se_s,
        "mae": float(errors.mean()),
        "mae_se": float(errors.std(ddof=1) / math.sqrt(n)),
        "bias": float(x.mean()),
    }


# --------------------------------------------------------------------------- dpframe


def _dpframe_requests(
    accounting: str, epsilon: float, delta: float, k: int
) -> list[dict[str, float]]:
    """The count's keyword arguments to try, in order (the first one the session accepts is used).

    zCDP: an ε share (δ is the session's).  approx: basic composition, (ε/k, δ/k)
    each.  gdp: an ε share, else (ε/k, δ/k) if this build wants a δ per request.
    """
    share = {"epsilon": epsilon / k}
    split = {"epsilon": epsilon / k, "delta": delta / k}
    return {"zcdp": [share], "approx": [split]}.get(accounting, [share, split])


def dpframe_variant(
    accounting: str, df: Any, epsilon: float, delta: float, k: int, releases: int, seconds: float
) -> dict[str, Any]:
    """k counts in a fresh ``dp.Session(ε, δ, accounting=...)`` per workload, until ``releases``."""
    out: dict[str, Any] = {"name": f'accounting="{accounting}"', "noise": ""}
    try:
        dp.Session(epsilon=epsilon, delta=delta, accounting=accounting, ledger=":memory:")
    except Exception as exc:
        out["na"] = f"not available in this build ({type(exc).__name__}: {exc})"[:300]
        return out

    def workload(request: dict[str, float]) -> tuple[list[Any], Any]:
        session = dp.Session(epsilon=epsilon, delta=delta, accounting=accounting, ledger=":memory:")
        pf = session.private_frame(df, bounds={"income": (0, 1)})
        eps, delta_q = request["epsilon"], request.get("delta")
        return [pf.count(epsilon=eps, delta=delta_q) for _ in range(k)], session

    start = time.perf_counter()
    refused: list[str] = []
    for request in _dpframe_requests(accounting, epsilon, delta, k):
        try:
            first, session = workload(request)
            break
        except dp.DPError as exc:
            refused.append(f"{request}: {type(exc).__name__}: {exc}")
    else:
        out["na"] = "error: " + " / ".join(refused)[:300]
        return out
    call = ", ".join(f"{key}={value:g}" for key, value in request.items())
    out.update(
        api=f'Session({epsilon:g}, {delta:g}, accounting="{accounting}"); {k} × pf.count({call})',
        sigma=float(first[0].scale),
        sigma_source="Release.scale",
        cost=str(session.spent),
        noise=str(first[0].mechanism),
    )
    values = [float(r.value) for r in first]
    while len(values) < releases and time.perf_counter() - start < seconds:
        values.extend(float(r.value) for r in workload(request)[0])
    out["values"] = values
    out["seconds"] = time.perf_counter() - start
    return out


# --------------------------------------------------------------------------- other libraries


def run_worker(lib: Library, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The library's worker in its venv; its JSON or ``{"error": ...}``."""
    cmd = [str(venv_python(lib)), str(WORKER), lib.name, "--data", str(data)]
    for eps, delta, k in WORKLOADS:
        cmd += ["--workload", f"{eps}:{delta}:{k}"]
    cmd += ["--releases", str(args.releases), "--seconds", str(args.seconds)]
    if lib.name == "pipeline-dp":
        cmd += ["--rows", str(args.pipelinedp_rows)]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    try:
        done = subprocess.run(
            cmd,
            cwd=tempfile.gettempdir(),
            capture_output=True,
            text=True,
            check=False,
            timeout=args.timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"worker timed out after {args.timeout:.0f} s"}
    if done.returncode != 0:
        return {
            "error": f"worker exit {done.returncode}: " + " / ".join(done.stderr.splitlines()[-6:])
        }
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------- report


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _cost(cost: Any) -> str:
    if cost is None:
        return "—"
    if isinstance(cost, str):
        return cost
    return f"ε={cost[0]:.4g}, δ={cost[1]:.3g}"


def render(results: dict[str, Any]) -> str:
    """The markdown report: one table per workload."""
    lines = [
        "# Gaussian counts at equal (ε, δ)",
        "",
        f"{results['date']}; `{results['command']}`; {results['rows']:,} rows "
        f"(PipelineDP: its first {results['pipelinedp_rows']:,}); at least "
        f"{results['releases']:,} releases per variant unless it hit {results['seconds']:.0f} s "
        "(then `n` says how many). Sensitivity 1 (one row added or removed).",
        "",
        "σ reported: what the library exposes. σ empirical: standard deviation of the released "
        "counts (± standard error). Ratio: σ empirical / ideal σ. MAE: mean |released − exact|.",
        "",
    ]
    for w in results["workloads"]:
        eps, delta, k = w["epsilon"], w["delta"], w["k"]
        what = "one count" if k == 1 else f"{k} counts sharing the total"
        lines += [
            f"## (ε, δ) = ({eps:g}, {delta:g}), {what}",
            "",
            f"Ideal σ per count (analytic Gaussian, exact Gaussian composition): "
            f"**{w['ideal_sigma']:.3f}**.",
            "",
            "| library | variant | noise | σ reported | σ empirical | ratio | MAE | n "
            "| cost reported |",
            "|---|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for row in w["rows"]:
            if "na" in row:
                lines.append(
                    f"| {row['lib']} | {row.get('name', '')} | n/a: {row['na']} | | | | | | |"
                )
                continue
            st = row["stats"]
            ratio = st["std"] / w["ideal_sigma"] if "std" in st else None
            lines.append(
                f"| {row['lib']} | {row['name']} | {row.get('noise', '')} "
                f"| {_fmt(row.get('sigma'))} "
                f"| {_fmt(st.get('std'))} ± {_fmt(st.get('std_se'))} | {_fmt(ratio)} "
                f"| {_fmt(st.get('mae'))} ± {_fmt(st.get('mae_se'))} | {st['n']:,} "
                f"| {_cost(row.get('cost'))} |"
            )
        lines.append("")
    lines += ["## Calls", ""]
    for w in results["workloads"]:
        for row in w["rows"]:
            if row.get("api"):
                lines.append(
                    f"- ({w['epsilon']:g}, {w['delta']:g}, k={w['k']}) {row['lib']}, "
                    f"{row.get('name', '')}: `{row['api']}`"
                    + (f" (σ: {row['sigma_source']})" if row.get("sigma_source") else "")
                )
    lines += ["", "## Versions", ""]
    for name, version in results["versions"].items():
        lines.append(f"- {name}: {version}")
    if results["errors"]:
        lines += ["", "## Errors", ""] + [f"- {k}: {v}" for k, v in results["errors"].items()]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run_gaussian_field",
        description="Gaussian counts at equal (ε, δ) across DP libraries (benchmarks/README.md)",
    )
    parser.add_argument("--libs", default=",".join(GAUSS_LIBRARIES), help="comma-separated")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--pipelinedp-rows", type=int, default=100)
    parser.add_argument("--releases", type=int, default=2000, help="per variant, at least")
    parser.add_argument("--seconds", type=float, default=90.0, help="per variant, at most")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per worker, seconds")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--no-save", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every workload for dpframe and each library; print, save and return the results."""
    args = _parser().parse_args(argv)
    libs = [name.strip() for name in args.libs.split(",") if name.strip()]
    bad = [name for name in libs if name not in GAUSS_LIBRARIES]
    if bad:
        raise SystemExit(f"--libs takes a subset of {','.join(GAUSS_LIBRARIES)}")
    started = time.perf_counter()
    df = census_frame(args.rows)[["income"]]
    workers: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    VENVS_DIR.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dpframe-gauss-") as tmp_name:
        data = Path(tmp_name) / "table.parquet"
        df.to_parquet(data)
        for name in libs:
            lib = GAUSS_LIBRARIES[name]
            failed = ensure_venv(lib, Path(tmp_name) / f"pip-{name}.log")
            if failed:
                errors[name] = f"not installed: {failed}"
                continue
            print(f"# {name}", flush=True)
            out = run_worker(lib, data, args)
            if "error" in out:
                errors[name] = out["error"]
                print(f"# {name}: {out['error']}", flush=True)
                continue
            workers[name] = out
    versions = {"dpframe": dp.__version__} | {n: w["version"] for n, w in workers.items()}
    workloads: list[dict[str, Any]] = []
    for index, (eps, delta, k) in enumerate(WORKLOADS):
        rows: list[dict[str, Any]] = []
        for accounting in ACCOUNTINGS:
            print(f"# dpframe {accounting} ({eps}, {delta}, {k})", flush=True)
            variant = dpframe_variant(accounting, df, eps, delta, k, args.releases, args.seconds)
            rows.append({"lib": "dpframe", **variant})
        for name in libs:
            if name not in workers:
                rows.append({"lib": name, "na": errors.get(name, "not run")})
                continue
            entry = workers[name]["workloads"][index]
            if "na" in entry:
                rows.append({"lib": name, "na": entry["na"]})
            rows += [{"lib": name, **variant} for variant in entry["variants"]]
        exact = {name: float(w["rows"]) for name, w in workers.items()} | {
            "dpframe": float(len(df))
        }
        for row in rows:
            if "values" in row:
                row["stats"] = summarise(row.pop("values"), exact[row["lib"]])
        workloads.append(
            {
                "epsilon": eps,
                "delta": delta,
                "k": k,
                "ideal_sigma": analytic_sigma(eps, delta, k),
                "rows": rows,
            }
        )
    results: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(["python -m benchmarks.run_gaussian_field", *(argv or sys.argv[1:])]),
        "environment": _environment(),
        "rows": args.rows,
        "pipelinedp_rows": args.pipelinedp_rows,
        "releases": args.releases,
        "seconds": args.seconds,
        "versions": versions,
        "errors": errors,
        "workloads": workloads,
    }
    results["wall_s"] = time.perf_counter() - started
    text = render(results)
    print("\n" + text)
    if not args.no_save:
        save_results(results, text, args.output_dir, "gaussian-field")
    return results


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
