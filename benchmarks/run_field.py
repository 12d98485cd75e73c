"""Field benchmark: dpframe, plain pandas and other DP libraries on the same workload.

Run from the repository root::

    python -m benchmarks.run_field                           # 1e5, 1e6 rows, every library
    python -m benchmarks.run_field --rows 1e5 --libs opendp,diffprivlib --repeats 3

dpframe and pandas run in this process (``benchmarks.run_core.run_synthetic``).
Each other library gets its own virtual environment, ``.bench-venvs/<lib>/``
(gitignored), created on first use (``python -m venv`` then ``pip install``),
because several pin old pandas / numpy / scikit-learn.  Its part of the
workload runs there as a subprocess (``benchmarks/field_worker.py``, which
imports neither dpframe nor this package) on the same synthetic table
(``benchmarks.data.census_frame``, written once to Parquet) and prints JSON.
Writes ``benchmarks/results/field-<date>.md`` and ``.json``.  See
``benchmarks/README.md``.
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
from benchmarks.report import markdown_table, save_results
from benchmarks.run_core import RESULTS_DIR, _environment, _load_average, _parse_rows, run_synthetic

__all__ = ["LIBRARIES", "main"]

VENVS_DIR = probes.REPO_ROOT / ".bench-venvs"
WORKER = Path(__file__).resolve().parent / "field_worker.py"
VALUE, SMALL_KEY, LARGE_KEY, EPSILON = "income", "state", "county", 1.0
WORKLOAD = (
    "count (rows)",
    "sum (clamped)",
    "mean (clamped)",
    f"groupby {SMALL_KEY} count",
    f"groupby {LARGE_KEY} sum",
)


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
    accuracy: tuple[Path, int] | None,
    timeout: float,
) -> dict[str, Any]:
    cmd = [str(venv_python(lib)), str(WORKER), lib.name, "--spec", str(spec)]
    for path in data:
        cmd += ["--data", str(path)]
    cmd += ["--repeats", str(repeats)]
    if accuracy is not None:
        cmd += ["--accuracy-data", str(accuracy[0]), "--accuracy-reps", str(accuracy[1])]
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


def accuracy_from_values(values: dict[str, Any], exact: dict[str, float], n: int) -> dict[str, Any]:
    scales = _scales(n)
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
    return out


# --------------------------------------------------------------------------- report


def _s(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def _r(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2f}" if x < 100 else f"{x:,.0f}"


def _median(results: dict[str, Any], column: str, rows: int, query: str) -> float | None:
    cell = results["medians"].get(column, {}).get(str(rows), {}).get(query)
    return None if cell is None or "median" not in cell else float(cell["median"])


def _total(results: dict[str, Any], column: str, rows: int) -> float | None:
    parts = [_median(results, column, rows, q) for q in WORKLOAD]
    return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)


def render(results: dict[str, Any]) -> str:
    columns: list[str] = ["pandas", "dpframe", *results["libs"]]
    lines = [
        f"# Field benchmark, {results['date']}",
        "",
        f"`{results['command']}`: ε = {EPSILON:g} per release, {results['repeats']} warm runs "
        "per query (median), str keys. Ratios are the library's median over the pandas "
        "median and over the dpframe median. n/a: the library has no such query, or it was "
        "not run (see notes).",
        "",
    ]
    for rows in results["rows"]:
        lines += [f"## {rows:,} rows", "", "Warm medians:", ""]
        table = []
        for q in [*WORKLOAD, "workload total"]:
            cells = []
            for c in columns:
                v = (
                    _total(results, c, rows)
                    if q == "workload total"
                    else _median(results, c, rows, q)
                )
                cells.append(_s(v))
            table.append([q, *cells])
        setup = [
            _s(results["load"].get(c, {}).get(str(rows))) if c != "pandas" else "-" for c in columns
        ]
        table.append(["setup (not in total)", *setup])
        lines += markdown_table(["query", *columns], table)
        for base in ("pandas", "dpframe"):
            lines += ["", f"Ratio to {base}:", ""]
            table = []
            for q in [*WORKLOAD, "workload total"]:
                cells = []
                for c in columns[1:]:
                    if q == "workload total":
                        v, b = _total(results, c, rows), _total(results, base, rows)
                    else:
                        v, b = _median(results, c, rows, q), _median(results, base, rows, q)
                    cells.append(_r(None if v is None or not b else v / b))
                table.append([q, *cells])
            lines += markdown_table(["query", *columns[1:]], table)
        lines.append("")
    if results.get("import"):
        lines += ["## Import time (median of 5 fresh interpreters, bytecode cached)", ""]
        imp = results["import"]
        lines += markdown_table(
            ["library", "statement", "seconds"],
            [[k, f"`{v['stmt']}`", f"{v['s']:.3f}"] for k, v in imp.items()],
        )
        lines.append("")
    acc = results.get("accuracy")
    if acc:
        lines += [
            f"## Accuracy: {acc['rows']:,} rows, ε = {EPSILON:g}, MAE / reference scale",
            "",
            "Reference scales as in `benchmarks/accuracy.py`: 1/ε (count), 1e6/ε (sum), "
            "(U − L)/(ε n) (mean). ± one standard error.",
            "",
        ]
        table = []
        for stat in ("count", "sum", "mean"):
            cells = []
            for c in ["dpframe", *results["libs"]]:
                cell = acc["stats"].get(c, {}).get(stat)
                if cell is None or "ratio" not in cell:
                    cells.append("n/a")
                else:
                    cells.append(f"{cell['ratio']:.2f} ± {cell['ratio_sem']:.2f}")
            table.append([stat, *cells])
        table.append(
            ["reps", *[str(acc["reps"].get(c, "n/a")) for c in ["dpframe", *results["libs"]]]]
        )
        lines += markdown_table(["statistic", "dpframe", *results["libs"]], table)
        dpf = acc["stats"].get("dpframe", {})
        expected = ", ".join(f"{s} {v['expected_ratio']:.2f}" for s, v in dpf.items())
        lines += ["", f"dpframe's expected ratios (from its own noise model): {expected}.", ""]
    lines += ["## Libraries and calls", ""]
    table = []
    for lib in results["libs"]:
        info = results["workers"].get(lib, {})
        if "error" in info:
            table.append([lib, "-", "-", info["error"]])
            continue
        versions = f"{lib} {info['version']}, pandas {info['pandas']}, numpy {info['numpy']}"
        calls = "; ".join(f"{q}: `{a}`" for q, a in info.get("api", {}).items())
        table.append([lib, versions, LIBRARIES[lib].note or "-", calls])
    lines += markdown_table(["library", "versions", "note", "calls"], table)
    notes = results.get("notes", [])
    if notes:
        lines += ["", "Notes:", "", *[f"- {n}" for n in notes]]
    env = results["environment"]
    lines += ["", "## Environment", ""]
    lines += markdown_table(["", ""], [[k, str(v)] for k, v in env.items()])
    lines.append(f"\nWall time {results['wall_s']:.0f} s.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run_field",
        description="dpframe, pandas and other DP libraries on one workload (benchmarks/README.md)",
    )
    parser.add_argument("--rows", type=_parse_rows, default=[100_000, 1_000_000])
    parser.add_argument("--libs", type=_parse_libs, default=list(LIBRARIES))
    parser.add_argument("--repeats", type=int, default=3, help="warm runs per query")
    parser.add_argument("--accuracy-reps", type=int, default=100, help="0 skips accuracy")
    parser.add_argument("--accuracy-rows", type=int, default=100_000)
    parser.add_argument("--all-rows", action="store_true", help="ignore per-library row caps")
    parser.add_argument("--no-import", action="store_true", help="skip import times")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per worker, seconds")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--no-save", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    rows: list[int] = args.rows
    libs: list[str] = args.libs
    results: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(["python -m benchmarks.run_field", *(argv or sys.argv[1:])]),
        "environment": _environment(),
        "rows": rows,
        "libs": libs,
        "repeats": args.repeats,
        "medians": {"pandas": {}, "dpframe": {}},
        "load": {"dpframe": {}},
        "workers": {},
        "notes": [],
    }
    VENVS_DIR.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dpframe-field-") as tmp_name:
        tmp = Path(tmp_name)
        spec = tmp / "spec.json"
        spec.write_text(
            json.dumps(
                {
                    "value": VALUE,
                    "bounds": list(BOUNDS[VALUE]),
                    "small_key": SMALL_KEY,
                    "large_key": LARGE_KEY,
                    "keys": categories(),
                    "epsilon": EPSILON,
                }
            )
        )
        data: dict[int, Path] = {}
        for n in rows:
            data[n] = tmp / f"census-{n}.parquet"
            census_frame(n).to_parquet(data[n])
        acc_df = census_frame(args.accuracy_rows)
        acc_path = tmp / "accuracy.parquet"
        acc_df.to_parquet(acc_path)

        for n in rows:
            print(f"# dpframe and pandas, {n:,} rows", flush=True)
            timings, workload = run_synthetic(n, "str", args.repeats)
            for t in timings:
                for side in ("pandas", "dpframe"):
                    results["medians"][side].setdefault(str(n), {})[t.query] = {
                        "median": getattr(t, f"{side}_median"),
                        "cold": getattr(t, f"{side}_cold"),
                        "runs": list(getattr(t, f"{side}_runs")),
                    }
            results["load"]["dpframe"][str(n)] = workload["load_s"]

        for name in libs:
            lib = LIBRARIES[name]
            error = ensure_venv(lib, tmp / f"pip-{name}.log")
            if error is not None:
                results["workers"][name] = {"error": f"install: {error}"}
                print(f"# {name}: {error}", flush=True)
                continue
            lib_rows = [n for n in rows if args.all_rows or not lib.max_rows or n <= lib.max_rows]
            if len(lib_rows) < len(rows):
                results["notes"].append(
                    f"{name}: not timed at {', '.join(f'{n:,}' for n in rows if n not in lib_rows)}"
                    f" rows ({lib.note})."
                )
            print(f"# {name}: rows {lib_rows}", flush=True)
            accuracy = (acc_path, args.accuracy_reps) if args.accuracy_reps > 0 else None
            out = run_worker(
                lib, spec, [data[n] for n in lib_rows], args.repeats, accuracy, args.timeout
            )
            results["workers"][name] = out
            if "error" in out:
                print(f"# {name}: {out['error']}", flush=True)
                continue
            results["medians"][name] = {str(r["rows"]): r["timings"] for r in out["runs"]}
            results["load"][name] = {str(r["rows"]): r["load_s"] for r in out["runs"]}
            for r in out["runs"]:
                for q, cell in r["timings"].items():
                    if "na" in cell:
                        results["notes"].append(f"{name}, {r['rows']:,} rows, {q}: {cell['na']}")

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
                stats[name] = accuracy_from_values(worker_acc["values"], exact, n_acc)
                reps[name] = int(worker_acc["reps"])
        results["accuracy"] = {"rows": n_acc, "stats": stats, "reps": reps}

    if not args.no_import:
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
    text = render(results)
    print("\n" + text)
    if not args.no_save:
        save_results(results, text, args.output_dir, "field")
    return results


if __name__ == "__main__":
    main()
