"""Field benchmark: dpframe, plain pandas and other DP libraries on the same workload.

Run from the repository root::

    python -m benchmarks.run_field                           # 1e5, 1e6 rows, every library
    python -m benchmarks.run_field --rows 1e5 --libs opendp,diffprivlib --repeats 3
    python -m benchmarks.run_field --accuracy-only --accuracy-seconds 900   # errors only

dpframe and pandas run in this process (``benchmarks.run_core.run_synthetic``).
Each other library gets its own virtual environment, ``.bench-venvs/<lib>/``
(gitignored), created on first use (``python -m venv`` then ``pip install``),
because several pin old pandas / numpy / scikit-learn.  Its part of the
workload runs there as a subprocess (``benchmarks/field_worker.py``, which
imports neither dpframe nor this package) on the same synthetic table
(``benchmarks.data.census_frame``, written once to Parquet) and prints JSON.
Writes ``benchmarks/results/field-<date>.md`` and ``.json``.  See
``benchmarks/README.md``.

Every release costs ε = 1 in total in each library's own accounting (the
workers configure it and report the cost, ``benchmarks.field_costs``);
``--accuracy-only`` runs only the accuracy part (no timings, memory or
import times).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import probes
from benchmarks.accuracy import accuracy_ratios
from benchmarks.data import BOUNDS, categories, census_frame
from benchmarks.field_report import CPS_LABEL, render
from benchmarks.releases import new_releases
from benchmarks.report import save_results
from benchmarks.run_core import (
    RESULTS_DIR,
    _environment,
    _load_average,
    _parse_rows,
    frame_schema,
    run_cps,
    run_synthetic,
)
from benchmarks.workload import CORE, EXTENDED, Timing, query_names
from dpframe.examples.datasets import load_cps1988
from dpframe.mechanisms.quantiles.quantiles import QUANTILE_BINS

__all__ = ["LIBRARIES", "main"]

VENVS_DIR = probes.REPO_ROOT / ".bench-venvs"
WORKER = Path(__file__).resolve().parent / "field_worker.py"
VALUE, SMALL_KEY, LARGE_KEY, CROSS_KEY, EPSILON = "income", "state", "county", "age", 1.0


@dataclass(frozen=True)
class Library:
    """A library measured in its own virtual environment."""

    name: str
    requirements: tuple[str, ...]
    import_stmt: str
    #: The largest row count timed by default (pure-Python libraries are slow).
    max_rows: int | None = None
    note: str = ""


LIBRARIES: dict[str, Library] = {
    lib.name: lib
    for lib in (
        Library("opendp", ("opendp[polars]", "pandas", "pyarrow"), "import opendp.prelude, polars"),
        # scikit-learn 1.9.1 breaks diffprivlib 0.6.6 at import
        # (ImportError: cannot import name 'DOUBLE' from 'sklearn.tree._tree'); 1.7.2 works.
        Library(
            "diffprivlib",
            ("diffprivlib", "scikit-learn<1.8", "pandas", "pyarrow"),
            "import diffprivlib",
        ),
        Library("smartnoise-sql", ("smartnoise-sql", "pandas", "pyarrow"), "import snsql"),
        Library(
            "pipeline-dp",
            ("pipeline-dp", "pandas", "pyarrow"),
            "import pipeline_dp",
            max_rows=100_000,
            note="LocalBackend (pure Python); timed up to 1e5 rows unless --all-rows",
        ),
    )
}


def _parse_libs(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    bad = [lib for lib in chosen if lib not in LIBRARIES]
    if bad or not chosen:
        raise argparse.ArgumentTypeError(f"--libs takes a subset of {','.join(LIBRARIES)}")
    return chosen


# --------------------------------------------------------------------------- venvs


def venv_python(lib: Library) -> Path:
    return VENVS_DIR / lib.name / "bin" / "python"


def ensure_venv(lib: Library, log: Path) -> str | None:
    """Create ``.bench-venvs/<lib>`` and install its requirements if needed; an error or None.

    A marker file records the requirements installed, so a changed list
    reinstalls.  pip's output goes to ``log``.
    """
    home = VENVS_DIR / lib.name
    marker = home / "bench-requirements.txt"
    wanted = "\n".join(lib.requirements) + "\n"
    if venv_python(lib).exists() and marker.exists() and marker.read_text() == wanted:
        return None
    steps = [
        [sys.executable, "-m", "venv", str(home)],
        [
            str(venv_python(lib)),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            *lib.requirements,
        ],
    ]
    with log.open("a") as out:
        for cmd in steps:
            if cmd[1:3] == ["-m", "venv"] and venv_python(lib).exists():
                continue
            print(f"# {lib.name}: {' '.join(cmd)}", flush=True)
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False)
            if done.returncode != 0:
                tail = log.read_text().strip().splitlines()[-8:]
                return f"`{' '.join(cmd[-len(lib.requirements) :])}` failed: " + " / ".join(tail)
    marker.write_text(wanted)
    return None


# --------------------------------------------------------------------------- measurements


def import_time(python: Path | str, stmt: str, repeats: int = 5) -> float:
    """Median wall time of ``stmt`` in a fresh interpreter (bytecode cached, one warm-up)."""
    code = f"import time; t0 = time.perf_counter(); {stmt}; print(time.perf_counter() - t0)"
    env = probes._bytecode_env()
    env.pop("PYTHONPATH", None)
    runs = []
    for i in range(repeats + 1):
        done = subprocess.run(
            [str(python), "-W", "ignore", "-c", code],
            cwd=tempfile.gettempdir(),
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        if i:
            runs.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(runs)


def run_worker(
    lib: Library,
    spec: Path,
    data: list[Path],
    repeats: int,
    accuracy: tuple[Path, int, float] | None,
    timeout: float,
) -> dict[str, Any]:
    cmd = [str(venv_python(lib)), str(WORKER), lib.name, "--spec", str(spec)]
    for path in data:
        cmd += ["--data", str(path)]
    cmd += ["--repeats", str(repeats)]
    if accuracy is not None:
        path, reps, seconds = accuracy
        cmd += ["--accuracy-data", str(path), "--accuracy-reps", str(reps)]
        cmd += ["--accuracy-seconds", str(seconds)]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    try:
        done = subprocess.run(
            cmd,
            cwd=tempfile.gettempdir(),
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"worker timed out after {timeout:.0f} s"}
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-6:]
        return {"error": f"worker exit {done.returncode}: " + " / ".join(tail)}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _scales(n: int) -> dict[str, float]:
    """Reference scales of benchmarks.accuracy: Δ/ε for count and sum, (U − L)/(ε n) for mean."""
    low, high = BOUNDS[VALUE]
    return {
        "count": 1.0 / EPSILON,
        "sum": max(abs(low), abs(high)) / EPSILON,
        "mean": (high - low) / (EPSILON * n),
    }


def accuracy_from_values(
    values: dict[str, Any],
    exact: dict[str, float],
    n: int,
    costs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """MAE / reference scale of a worker's released values, with the ε each release spent."""
    scales = _scales(n)
    costs = costs or {}
    out: dict[str, Any] = {}
    for stat, released in values.items():
        if isinstance(released, str):
            out[stat] = {"na": released}
            continue
        errors = np.abs(np.asarray(released, dtype=np.float64) - exact[stat])
        out[stat] = {
            "reps": len(released),
            "mae": float(errors.mean()),
            "ratio": float(errors.mean()) / scales[stat],
            "ratio_sem": float(errors.std(ddof=1) / np.sqrt(len(released))) / scales[stat],
        }
        cost = costs.get(stat) or {}
        if "epsilon" in cost:
            out[stat]["epsilon_spent"] = float(cost["epsilon"])
    return out


# --------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run_field",
        description="dpframe, pandas and other DP libraries on one workload (benchmarks/README.md)",
    )
    parser.add_argument("--rows", type=_parse_rows, default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--libs", type=_parse_libs, default=list(LIBRARIES))
    parser.add_argument("--repeats", type=int, default=3, help="warm runs per query")
    parser.add_argument("--accuracy-reps", type=int, default=200, help="0 skips accuracy")
    parser.add_argument("--accuracy-rows", type=int, default=100_000)
    parser.add_argument(
        "--accuracy-seconds",
        type=float,
        default=120.0,
        help="per library and statistic: stop after this long (at least 20 releases)",
    )
    parser.add_argument(
        "--accuracy-only",
        action="store_true",
        help="only the accuracy part: no timings, memory or import times (ignores --rows)",
    )
    parser.add_argument("--all-rows", action="store_true", help="ignore per-library row caps")
    parser.add_argument("--no-cps", action="store_true", help="skip the bundled CPS data")
    parser.add_argument("--no-import", action="store_true", help="skip import times")
    parser.add_argument("--no-memory", action="store_true", help="skip pandas/dpframe memory")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per worker, seconds")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument(
        "--results-md", type=Path, default=None, help="also write the report here (RESULTS.md)"
    )
    parser.add_argument("--no-save", action="store_true")
    return parser


def _spec(kind: str) -> dict[str, Any]:
    """The query parameters handed to the workers (one source: benchmarks.workload)."""
    if kind == "cps":
        value, small, large, cross = "wage", "region", "region", None
    else:
        value, small, large, cross = VALUE, SMALL_KEY, LARGE_KEY, CROSS_KEY
    bounds, keys = frame_schema(kind)
    names = query_names(small, large, cross)
    return {
        "value": value,
        "bounds": list(bounds[value]),
        "small_key": small,
        "large_key": large,
        "cross_key": cross,
        "keys": keys,
        "epsilon": EPSILON,
        "names": names,
        "describe": {k: list(v) for k, v in bounds.items()},
        "quantile_candidates": QUANTILE_BINS + 1,
    }


def _store_timings(results: dict[str, Any], label: str, timings: list[Timing]) -> None:
    for t in timings:
        for side in ("pandas", "dpframe"):
            results["medians"][side].setdefault(label, {})[t.query] = {
                "median": getattr(t, f"{side}_median"),
                "cold": getattr(t, f"{side}_cold"),
                "runs": list(getattr(t, f"{side}_runs")),
            }


def _memory_probe(side: str, path: Path, kind: str, timeout: float) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.field_memory",
            side,
            "--data",
            str(path),
            "--kind",
            kind,
        ],
        cwd=probes.REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if done.returncode != 0:
        return {"error": " / ".join(done.stderr.strip().splitlines()[-3:])}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _dataset_label(n: int) -> str:
    return f"{n:,}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run everything, print the report, save it; return the results."""
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    rows: list[int] = args.rows
    libs: list[str] = args.libs
    cps = load_cps1988()
    datasets: list[dict[str, Any]] = [
        {"label": _dataset_label(n), "rows": n, "kind": "synthetic"} for n in rows
    ] + ([] if args.no_cps else [{"label": CPS_LABEL, "rows": len(cps), "kind": "cps"}])
    if args.accuracy_only:
        if args.accuracy_reps <= 0:
            raise SystemExit("--accuracy-only needs --accuracy-reps > 0")
        datasets = []
    specs = {kind: _spec(kind) for kind in ("synthetic", "cps")}
    results: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(["python -m benchmarks.run_field", *(argv or sys.argv[1:])]),
        "environment": _environment(),
        "uptime at start": _uptime(),
        "datasets": datasets,
        "libs": libs,
        "repeats": args.repeats,
        "queries": {
            kind: [spec["names"][r] for r in (*CORE, *EXTENDED) if r in spec["names"]]
            for kind, spec in specs.items()
        },
        "core": {kind: [spec["names"][r] for r in CORE] for kind, spec in specs.items()},
        "roles": {kind: spec["names"] for kind, spec in specs.items()},
        "epsilon": EPSILON,
        "accuracy_only": bool(args.accuracy_only),
        "medians": {"pandas": {}, "dpframe": {}},
        "load": {"dpframe": {}},
        "memory": {"pandas": {}, "dpframe": {}},
        "workers": {},
        "notes": [],
    }
    VENVS_DIR.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dpframe-field-") as tmp_name:
        tmp = Path(tmp_name)
        spec_paths = {kind: tmp / f"spec-{kind}.json" for kind in specs}
        for kind, path in spec_paths.items():
            path.write_text(json.dumps(specs[kind]))
        data: dict[str, Path] = {}
        for d in datasets:
            data[d["label"]] = tmp / f"data-{d['rows']}-{d['kind']}.parquet"
            frame = cps if d["kind"] == "cps" else census_frame(d["rows"])
            frame.to_parquet(data[d["label"]])
            del frame
        acc_df = census_frame(args.accuracy_rows)
        acc_path = tmp / "accuracy.parquet"
        acc_df.to_parquet(acc_path)

        for d in datasets:
            print(f"# dpframe and pandas, {d['label']} rows", flush=True)
            if d["kind"] == "cps":
                out = run_cps(args.repeats)
                timings = [Timing(**_timing_fields(t)) for t in out["timings"]]
                load_s = out["workload"]["load_s"]
            else:
                timings, workload = run_synthetic(d["rows"], "str", args.repeats)
                load_s = workload["load_s"]
            _store_timings(results, d["label"], timings)
            results["load"]["dpframe"][d["label"]] = load_s
            if not args.no_memory:
                for side in ("pandas", "dpframe"):
                    print(f"# memory: {side}, {d['label']} rows", flush=True)
                    results["memory"][side][d["label"]] = _memory_probe(
                        side, data[d["label"]], d["kind"], args.timeout
                    )

        for name in libs:
            lib = LIBRARIES[name]
            error = ensure_venv(lib, tmp / f"pip-{name}.log")
            if error is not None:
                results["workers"][name] = {"error": f"install: {error}"}
                print(f"# {name}: {error}", flush=True)
                continue
            if not args.accuracy_only:
                results["medians"][name], results["load"][name] = {}, {}
                results["memory"][name] = {}
            for kind in ("synthetic", "cps"):
                if args.accuracy_only and kind == "synthetic":
                    print(f"# {name}: accuracy only", flush=True)
                    out = run_worker(
                        lib,
                        spec_paths[kind],
                        [],
                        args.repeats,
                        (acc_path, args.accuracy_reps, args.accuracy_seconds),
                        args.timeout,
                    )
                    _store_worker(results, name, kind, out)
                    continue
                chosen = [d for d in datasets if d["kind"] == kind]
                kept = [
                    d
                    for d in chosen
                    if args.all_rows or not lib.max_rows or d["rows"] <= lib.max_rows
                ]
                skipped = [d["label"] for d in chosen if d not in kept]
                if skipped:
                    results["notes"].append(
                        f"{name}: not timed at {', '.join(skipped)} rows ({lib.note})."
                    )
                if not kept:
                    continue
                print(f"# {name}: {[d['label'] for d in kept]}", flush=True)
                accuracy = (
                    (acc_path, args.accuracy_reps, args.accuracy_seconds)
                    if args.accuracy_reps > 0 and kind == "synthetic"
                    else None
                )
                out = run_worker(
                    lib,
                    spec_paths[kind],
                    [data[d["label"]] for d in kept],
                    args.repeats,
                    accuracy,
                    args.timeout,
                )
                if not _store_worker(results, name, kind, out):
                    continue
                for d, run in zip(kept, out["runs"], strict=True):
                    results["medians"][name][d["label"]] = run["timings"]
                    results["load"][name][d["label"]] = run["load_s"]
                    results["memory"][name][d["label"]] = {
                        "df_bytes": run.get("df_bytes"),
                        "peak_increase": run.get("peak_increase"),
                    }

    if args.accuracy_reps > 0:
        print(f"# accuracy: dpframe, {args.accuracy_reps} releases per statistic", flush=True)
        clipped = acc_df[VALUE].clip(*BOUNDS[VALUE])
        n_acc = len(acc_df)
        exact = {"count": float(n_acc), "sum": float(clipped.sum()), "mean": float(clipped.mean())}
        stats: dict[str, Any] = {
            "dpframe": accuracy_ratios(
                acc_df,
                value=VALUE,
                bounds=BOUNDS[VALUE],
                categories=categories(),
                reps=args.accuracy_reps,
            )
        }
        reps: dict[str, int] = {"dpframe": args.accuracy_reps}
        for name in libs:
            worker_acc = results["workers"].get(name, {}).get("accuracy")
            if worker_acc:
                stats[name] = accuracy_from_values(
                    worker_acc["values"], exact, n_acc, worker_acc.get("costs")
                )
                reps[name] = int(worker_acc["reps"])
        results["accuracy"] = {"rows": n_acc, "stats": stats, "reps": reps}

    if not args.no_import and not args.accuracy_only:
        print("# import times", flush=True)
        results["import"] = {
            "pandas": {"stmt": "import pandas", "s": import_time(sys.executable, "import pandas")},
            "dpframe": {
                "stmt": "import dpframe",
                "s": import_time(sys.executable, "import dpframe"),
            },
        }
        for name in libs:
            if "error" in results["workers"].get(name, {"error": ""}):
                continue
            lib = LIBRARIES[name]
            results["import"][name] = {
                "stmt": lib.import_stmt,
                "s": import_time(venv_python(lib), lib.import_stmt),
            }

    results["wall_s"] = time.perf_counter() - started
    results["environment"]["load average at end"] = _load_average()
    results["uptime at end"] = _uptime()
    text = render(results)
    print("\n" + text)
    if not args.no_save:
        save_results(results, text, args.output_dir, "field")
        if args.results_md is not None:
            args.results_md.write_text(text)
            print(f"Wrote {args.results_md}")
    return results


def _store_worker(results: dict[str, Any], name: str, kind: str, out: dict[str, Any]) -> bool:
    """Keep a worker's output (versions, calls, costs per spec kind); False on an error."""
    info = results["workers"].setdefault(name, {})
    if "error" in out:
        info.update(out)
        print(f"# {name}: {out['error']}", flush=True)
        return False
    info.update({k: v for k, v in out.items() if k not in ("runs", "api", "costs")})
    for role, call in out.get("api", {}).items():  # synthetic first: its names
        info.setdefault("api", {}).setdefault(role, call)
    info.setdefault("costs", {})[kind] = out.get("costs", {})
    return True


def _timing_fields(t: dict[str, Any]) -> dict[str, Any]:
    """Timing constructor arguments from ``Timing.to_dict()`` output."""
    fields = {k: v for k, v in t.items() if k != "ratio"}
    fields["pandas_runs"] = tuple(fields["pandas_runs"])
    fields["dpframe_runs"] = tuple(fields["dpframe_runs"])
    return fields


def _uptime() -> str:
    """``uptime`` output (load averages over 1, 5, 15 minutes: the machine is shared)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "n/a"


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
