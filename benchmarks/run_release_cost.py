"""Fixed cost of one release: in-memory ledger, durable ledger, diffprivlib, one durable commit.

Times ``pf.count(epsilon=1)`` on a frame of ``--rows`` rows (default 60,000)
with an in-memory ledger and with a durable ledger file, and in the same run

* diffprivlib's ``tools.count_nonzero`` on the same column, in its own
  virtual environment (``.bench-venvs/diffprivlib``, made as ``run_field``
  makes it) as a worker process that stays up for the whole run; where it
  cannot be installed, numpy's ``np.count_nonzero`` plus one float Laplace
  draw stands in, labelled as such (it is measured in every run anyway);
* one durable SQLite commit (WAL, ``synchronous=FULL``, a one-row insert)
  in the same folder as the durable ledger;
* the ledger alone: ``charge`` + ``complete`` per release, and
  ``charge_many`` of 10 releases with their 10 completions.

Each variant is set up and warmed once; then ``--rounds`` rounds run a chunk
of ``--chunk`` releases of every variant in turn, so that a busy disk or CPU
slows them alike; times are pooled and ratios are of medians from this run.
The issue's targets: in-memory count no slower than diffprivlib's count;
durable count no slower than one durable commit plus diffprivlib's count.
See ``benchmarks/README.md``.

    python -m benchmarks.run_release_cost [--rows 60000] [--rounds 20] [--chunk 25]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.data import BOUNDS, census_frame
from benchmarks.releases import new_releases
from benchmarks.report import save_results
from dpframe.accounting import Charge, Ledger
from dpframe.accounting.ledger import PendingCharge

EPSILON = 1.0
WARMUP = 20
#: Warm-up rounds of 50 calls, at most, for a durable variant to reach a steady WAL.
STEADY_ROUNDS = 100
BATCH = 10
MEMORY, DURABLE = "dpframe count, in-memory ledger", "dpframe count, durable ledger"
COMMIT = "one durable SQLite commit (WAL, FULL)"
DIFFPRIVLIB = "diffprivlib count_nonzero"
COMMIT_THEN_DPL = "durable commit, then diffprivlib count_nonzero (timed together)"
STAND_IN = "numpy stand-in: count_nonzero + float Laplace (not DP)"

# The diffprivlib worker (its venv: numpy and diffprivlib only). Reads "n mode" per
# line, makes n releases, prints their times as one JSON line; "0" ends it. Mode
# "count": count_nonzero alone; mode "commit": one durable SQLite commit (WAL,
# synchronous=FULL, in the database argv[3]) and then count_nonzero, timed together,
# as a diffprivlib user who keeps a durable record of each release would run them.
# Before its first line the worker warms that database until its WAL stops growing.
_WORKER = """
import json, os, sqlite3, sys, time
import numpy as np
import diffprivlib
from diffprivlib import tools
from diffprivlib.accountant import BudgetAccountant

values = np.load(sys.argv[1])
epsilon = float(sys.argv[2])
accountant = BudgetAccountant()
conn = sqlite3.connect(sys.argv[3], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA synchronous=FULL")
conn.execute("CREATE TABLE t (x TEXT)")
for _ in range(int(sys.argv[4])):
    size = os.path.getsize(sys.argv[3] + "-wal")
    for _ in range(50):
        conn.execute("INSERT INTO t VALUES ('1/10')")
    if os.path.getsize(sys.argv[3] + "-wal") == size:
        break
print(json.dumps({"version": diffprivlib.__version__}), flush=True)
for line in sys.stdin:
    n, mode = (line.split() + ["count"])[:2]
    if int(n) == 0:
        break
    times = []
    for _ in range(int(n)):
        start = time.perf_counter()
        if mode == "commit":
            conn.execute("INSERT INTO t VALUES ('1/10')")
        tools.count_nonzero(values, epsilon=epsilon, accountant=accountant)
        times.append(time.perf_counter() - start)
    print(json.dumps(times), flush=True)
"""

#: A variant runs n releases and returns their times in seconds.
Variant = Callable[[int], list[float]]


def _timer(call: Callable[[], object], wal: Path | None = None) -> Variant:
    """A variant of single calls, warmed up with :data:`WARMUP` untimed calls.

    With ``wal`` (a durable variant's write-ahead log), the warm-up goes on in
    rounds of 50 calls until the log stops growing: SQLite reuses a WAL from its
    start after each checkpoint, and a commit that grows the file costs up to
    twice one that overwrites it (a size change is metadata the sync must also
    flush), so every durable variant is timed in that same steady state.
    """
    for _ in range(WARMUP):
        call()
    for _ in range(STEADY_ROUNDS if wal is not None else 0):
        size = wal.stat().st_size if wal is not None and wal.exists() else -1
        for _ in range(50):
            call()
        if wal is not None and wal.exists() and wal.stat().st_size == size:
            break

    def run(n: int) -> list[float]:
        out = []
        for _ in range(n):
            start = time.perf_counter()
            call()
            out.append(time.perf_counter() - start)
        return out

    return run


def _wal(path: str | Path) -> Path | None:
    return None if str(path) == ":memory:" else Path(f"{path}-wal")


def _dpframe_count(df: pd.DataFrame, ledger: str | Path) -> Variant:
    session = dp.Session(epsilon=1e12, ledger=ledger, name="release-cost")
    pf = session.private_frame(df, bounds={"income": BOUNDS["income"]})
    return _timer(lambda: pf.count(epsilon=EPSILON), _wal(ledger))


def _durable_commit(folder: Path) -> Variant:
    conn = sqlite3.connect(folder / "commit.sqlite", isolation_level=None)
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if mode != "wal":
        raise SystemExit(f"WAL does not work in {folder} (journal_mode={mode})")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (x TEXT)")
    return _timer(
        lambda: conn.execute("INSERT INTO t VALUES ('1/10')"), folder / "commit.sqlite-wal"
    )


def _ledger_single(ledger: Ledger) -> Variant:
    cost = Charge(epsilon=Fraction(1, 10**6))

    def one() -> None:
        release_id = ledger.charge("s", "d", cost, lambda spent: None, "count", "m")
        ledger.complete(release_id, "60000")

    return _timer(one, _wal(ledger.path))


def _ledger_batch(ledger: Ledger) -> Variant:
    """Per-release seconds of ``charge_many`` of :data:`BATCH` releases and their completions."""
    items = [PendingCharge(Charge(epsilon=Fraction(1, 10**6)), "count", "m")] * BATCH

    def batch() -> None:
        for release_id in ledger.charge_many("s", "d", items, lambda spent: None):
            ledger.complete(release_id, "60000")

    batches = _timer(batch, _wal(ledger.path))
    return lambda n: [t / BATCH for t in batches(max(1, n // BATCH))]


def _numpy_stand_in(values: np.ndarray) -> Variant:
    """np.count_nonzero plus one float Laplace draw: not a DP release, a floor for one."""
    rng = np.random.default_rng()  # timing only, never privacy noise
    return _timer(lambda: np.count_nonzero(values) + rng.laplace(scale=1 / EPSILON))


class _Diffprivlib:
    """diffprivlib's count_nonzero in a worker process of its own venv."""

    def __init__(self, values_path: Path, log: Path, commits: Path) -> None:
        from benchmarks.run_field import LIBRARIES, ensure_venv, venv_python

        lib = LIBRARIES["diffprivlib"]
        self.problem = ensure_venv(lib, log)
        self.version = ""
        self.proc: subprocess.Popen[str] | None = None
        if self.problem is not None:
            return
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen(
            [
                str(venv_python(lib)),
                "-c",
                _WORKER,
                str(values_path),
                str(EPSILON),
                str(commits),
                str(STEADY_ROUNDS),
            ],
            cwd=tempfile.gettempdir(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        first = self._line()
        if first is None:
            self.problem = "the diffprivlib worker did not start (see its stderr above)"
            return
        self.version = str(json.loads(first)["version"])
        self(WARMUP)
        self.with_commit(WARMUP)

    def _line(self) -> str | None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return line or None

    def __call__(self, n: int) -> list[float]:
        """``n`` counts, each timed alone."""
        return self._ask(n, "count")

    def with_commit(self, n: int) -> list[float]:
        """``n`` times one durable commit and then a count, timed together."""
        return self._ask(n, "commit")

    def _ask(self, n: int, mode: str) -> list[float]:
        assert self.proc is not None
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{n} {mode}\n")
        self.proc.stdin.flush()
        line = self._line()
        if line is None:
            raise SystemExit("the diffprivlib worker stopped")
        return [float(t) for t in json.loads(line)]

    def close(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.write("0\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def _file_system(folder: Path) -> str:
    """The type of the file system holding ``folder`` (Linux: /proc/mounts), or 'unknown'."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    resolved, best = str(folder.resolve()), ("", "unknown")
    for fields in mounts:
        point = fields[1]
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best[0]):
            best = (point, fields[2])
    return best[1]


def _summary(times: list[float]) -> dict[str, float]:
    ms = np.asarray(times) * 1e3
    return {"median_ms": float(np.median(ms)), "p90_ms": float(np.percentile(ms, 90))}


def run(args: argparse.Namespace, folder: Path) -> tuple[dict[str, Any], str]:
    started = time.perf_counter()
    df: pd.DataFrame = census_frame(args.rows)[["income"]]
    values = df["income"].to_numpy(dtype=np.float64)
    np.save(folder / "income.npy", values)
    variants: dict[str, Variant] = {
        MEMORY: _dpframe_count(df, ":memory:"),
        DURABLE: _dpframe_count(df, folder / "ledger.sqlite"),
        COMMIT: _durable_commit(folder),
        "ledger charge + complete, in-memory": _ledger_single(Ledger(":memory:")),
        "ledger charge + complete, durable": _ledger_single(Ledger(folder / "single.sqlite")),
        f"ledger charge_many x{BATCH} + completes, durable, per release": _ledger_batch(
            Ledger(folder / "batch.sqlite")
        ),
        STAND_IN: _numpy_stand_in(values),
    }
    worker = (
        _Diffprivlib(folder / "income.npy", folder / "pip.log", folder / "dpl-commit.sqlite")
        if args.diffprivlib
        else None
    )
    if worker is not None and worker.problem is None:
        variants[DIFFPRIVLIB] = worker
        variants[COMMIT_THEN_DPL] = worker.with_commit
    samples: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for _ in range(args.rounds):
            for name, variant in variants.items():
                samples[name].extend(variant(args.chunk))
    finally:
        if worker is not None:
            worker.close()
    summary = {name: _summary(times) for name, times in samples.items()}
    med = {name: row["median_ms"] for name, row in summary.items()}
    reference = DIFFPRIVLIB if DIFFPRIVLIB in med else STAND_IN
    ratios = {
        f"in-memory count / {reference}": med[MEMORY] / med[reference],
        f"durable count / (durable commit + {reference})": med[DURABLE]
        / (med[COMMIT] + med[reference]),
        "durable count / in-memory count": med[DURABLE] / med[MEMORY],
        "(durable - in-memory count) / durable commit": (med[DURABLE] - med[MEMORY]) / med[COMMIT],
    }
    if COMMIT_THEN_DPL in med:
        ratios[f"durable count / ({COMMIT_THEN_DPL})"] = med[DURABLE] / med[COMMIT_THEN_DPL]
    if worker is None:
        dpl = "not run (--no-diffprivlib)"
    else:
        dpl = worker.version or f"could not run: {worker.problem}"
    results = {
        "rows": args.rows,
        "rounds": args.rounds,
        "chunk": args.chunk,
        "releases_per_variant": args.rounds * args.chunk,
        "folder": str(folder),
        "file_system": _file_system(folder),
        "diffprivlib": dpl,
        "summary": summary,
        "ratios": ratios,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "dpframe": dp.__version__,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else "",
        "wall_s": time.perf_counter() - started,
    }
    return results, _render(results, reference)


def _render(results: dict[str, Any], reference: str) -> str:
    lines = [
        f"# Fixed cost per release: pf.count(epsilon={EPSILON:g}) on {results['rows']:,} rows",
        "",
        f"{results['releases_per_variant']} releases per variant ({results['rounds']} rounds of "
        f"{results['chunk']}, variants in turn, after {WARMUP} warm-up calls each, durable "
        "ones until their WAL stopped growing). Durable files "
        f"in `{results['folder']}` ({results['file_system']}); SQLite {results['sqlite']}, "
        f"Python {results['python']}, load average {results['load_average']}.",
        f"diffprivlib: {results['diffprivlib']}.",
        "",
        "| variant | median ms | p90 ms |",
        "|---|---:|---:|",
    ]
    for name, row in results["summary"].items():
        lines.append(f"| {name} | {row['median_ms']:.3f} | {row['p90_ms']:.3f} |")
    lines += ["", "| ratio (medians, same run) | value | target |", "|---|---:|---:|"]
    for name, value in results["ratios"].items():
        target = "<= 1" if name.startswith(("in-memory", "durable count / (")) else ""
        lines.append(f"| {name} | {value:.2f} | {target} |")
    if reference == STAND_IN:
        lines += [
            "",
            "diffprivlib could not run here, so the reference is the numpy stand-in: "
            "np.count_nonzero plus one float Laplace draw (not a DP release; a floor for one).",
        ]
    if results["file_system"] in {"tmpfs", "ramfs"}:
        lines += ["", "Warning: the durable files are in memory (tmpfs): no real sync happens."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=25, help="releases per variant and round")
    parser.add_argument("--folder", default=None, help="where the durable files go (a temp dir)")
    parser.add_argument("--no-diffprivlib", dest="diffprivlib", action="store_false")
    parser.add_argument("--no-save", dest="save", action="store_false")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="dpframe-release-cost-", dir=args.folder))
    try:
        results, text = run(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(text)
    if args.save:
        save_results(results, text, Path(__file__).parent / "results", "release-cost")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
