"""Load time and peak memory of ``private_frame`` with the file ledger and with ``:memory:``.

The default configuration is a file ledger: a load then also computes what the
budget guard rails record (the data's keyed identity and its sketches, see
``dpframe/backends/data_sketch.py``).  The older memory probe
(``benchmarks/probes.py``) loads with ``ledger=":memory:"`` and never ran that
code; this probe measures both, for text (``str``) and categorical keys.

Each measurement is a fresh interpreter (``python -m benchmarks.load_probe
child ...``, prints JSON) that builds the census table
(``benchmarks/data.py``), warms up on a tiny table with both ledgers, then for
each ledger (order alternating between repeats):

* times ``session.private_frame(df, ...)``: with the file ledger, a new
  ledger file per load that already holds another (small) data set, so every
  load is the first of its data in an existing ledger (one key file per
  child, made at the warm-up);
* the peak extra resident memory of the load (``VmHWM`` after resetting the
  kernel's mark, minus ``VmRSS`` before; Linux);
* in a second, separate load, the ``tracemalloc`` peak (numpy and Python
  allocations).

Both are compared with ``df.memory_usage(deep=True).sum()``.

Before/after comparisons run two source trees interleaved in the same run:
``--tree NAME=PATH`` puts ``PATH`` first on ``sys.path`` in that tree's
children (so they import its ``dpframe``: a checkout of another commit), and
the trees alternate child by child::

    git worktree add /tmp/base <commit>
    python -m benchmarks.load_probe --rows 1e6,1e7 --keys str,category --repeats 3 \\
        --tree before=/tmp/base --tree after=. --out benchmarks/results/load-<date>.json

The machine's load average (``os.getloadavg``) is printed beside every child.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.releases import new_releases

__all__ = ["main"]

REPO_ROOT = Path(__file__).resolve().parent.parent
LEDGERS = ("memory", "file")


# -- child side ---------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return None


def _settle() -> None:
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _rss_peak(step: Callable[[], Any]) -> tuple[float, float, int | None]:
    """Seconds (wall and this process's CPU) and peak extra RSS (bytes) of ``step``."""
    _settle()
    before = _status_kb("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    start, cpu = time.perf_counter(), time.process_time()
    step()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _status_kb("VmHWM")
    if before is None or peak is None or not reset:
        return seconds, cpu, None
    return seconds, cpu, (peak - before) * 1024


def _traced(step: Callable[[], Any]) -> int:
    _settle()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _child(rows: int, key_dtype: str, first: str, tree: str) -> dict[str, Any]:
    sys.path.insert(0, tree)  # this tree's dpframe (benchmarks is already imported from here)
    import dpframe as dp
    from benchmarks.data import BOUNDS, as_key_dtype, categories, census_frame

    scratch = Path(tempfile.mkdtemp(prefix="dpframe-load-probe-"))
    os.environ["DPFRAME_KEY"] = str(scratch / "config" / "key")  # never the user's key
    count = iter(range(1_000_000))

    def ledger(kind: str) -> str:
        return ":memory:" if kind == "memory" else str(scratch / f"ledger-{next(count)}.sqlite")

    kind_of = as_key_dtype(key_dtype)
    tiny = census_frame(1000, key_dtype=kind_of)
    for kind in LEDGERS:  # warm-up: lazy imports, SQLite, the key file
        dp.Session(epsilon=1e9, ledger=ledger(kind)).private_frame(
            tiny, bounds=BOUNDS, categories=categories()
        )
    del tiny
    df = census_frame(rows, key_dtype=kind_of)
    _settle()
    result: dict[str, Any] = {
        "rows": rows,
        "key_dtype": key_dtype,
        "dpframe": str(Path(dp.__file__).resolve().parent.parent),
        "frame_bytes": int(df.memory_usage(deep=True).sum()),
        "loadavg": os.getloadavg()[0],
    }
    small = census_frame(1000, seed=1, key_dtype=kind_of)

    def session_for(kind: str) -> dp.Session:
        """A session on a new ledger that already holds other data (the usual first load)."""
        path = ledger(kind)
        if kind == "file":
            dp.Session(epsilon=1e9, ledger=path, name="earlier").private_frame(
                small, bounds=BOUNDS, categories=categories()
            )
        return dp.Session(epsilon=1e9, ledger=path)

    order = list(LEDGERS) if first == "memory" else list(reversed(LEDGERS))
    for kind in order:
        session = session_for(kind)

        def load(session: dp.Session = session) -> None:
            session.private_frame(df, bounds=BOUNDS, categories=categories())

        seconds, cpu, peak = _rss_peak(load)
        again = session_for(kind)

        def load_traced(session: dp.Session = again) -> None:
            session.private_frame(df, bounds=BOUNDS, categories=categories())

        traced = _traced(load_traced)
        result[kind] = {"seconds": seconds, "cpu": cpu, "rss_peak": peak, "traced_peak": traced}
        del session, again
        _settle()
    return result


# -- parent side --------------------------------------------------------------------


def _run_child(tree: str, rows: int, key_dtype: str, first: str) -> dict[str, Any]:
    path = str(Path(tree).resolve())
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.load_probe", "child", str(rows), key_dtype, first, path],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=3600,
        check=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:,.0f}"


def _table(runs: list[dict[str, Any]]) -> str:
    """Medians per (tree, rows, keys): seconds and peaks, and the file/memory ratios."""
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["tree"], run["rows"], run["key_dtype"]), []).append(run)
    lines = [
        "| tree | rows | keys | frame MiB | memory s | file s | file/memory time "
        "| memory CPU s | file CPU s | file/memory CPU "
        "| memory RSS MiB | file RSS MiB | file RSS/frame | file traced MiB | traced/frame "
        "| load avg |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (tree, rows, keys), group in sorted(groups.items(), key=lambda g: (g[0][1], g[0][2])):

        def med(kind: str, field: str, group: list[dict[str, Any]] = group) -> float | None:
            values = [r[kind][field] for r in group if r[kind][field] is not None]
            return statistics.median(values) if values else None

        frame = group[0]["frame_bytes"]
        mem_s, file_s = med("memory", "seconds"), med("file", "seconds")
        file_rss, file_traced = med("file", "rss_peak"), med("file", "traced_peak")
        ratio = "n/a" if not mem_s or file_s is None else f"{file_s / mem_s:.2f}"
        mem_c, file_c = med("memory", "cpu"), med("file", "cpu")
        cpu_ratio = "n/a" if not mem_c or file_c is None else f"{file_c / mem_c:.2f}"
        rss_ratio = "n/a" if file_rss is None else f"{file_rss / frame:.2f}"
        traced_ratio = "n/a" if file_traced is None else f"{file_traced / frame:.2f}"
        load = statistics.median(r["loadavg"] for r in group)
        lines.append(
            f"| {tree} | {rows:,} | {keys} | {_mib(frame)} | {mem_s:.2f} | {file_s:.2f} "
            f"| {ratio} | {mem_c:.2f} | {file_c:.2f} | {cpu_ratio} "
            f"| {_mib(med('memory', 'rss_peak'))} | {_mib(file_rss)} | {rss_ratio} "
            f"| {_mib(file_traced)} | {traced_ratio} | {load:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Command line: the parent (default) or one child measurement."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["child"]:
        rows, key_dtype, first, tree = int(argv[1]), argv[2], argv[3], argv[4]
        print(json.dumps(_child(rows, key_dtype, first, tree)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", default="1e6", help="comma-separated row counts (1e6,1e7)")
    parser.add_argument("--keys", default="str,category", help="key storages (str,object,category)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="NAME=PATH: a source tree to measure (repeat to interleave trees); default .",
    )
    parser.add_argument("--out", help="write every run as JSON here")
    args = parser.parse_args(argv)
    trees = [t.split("=", 1) for t in args.tree] or [["current", str(REPO_ROOT)]]
    runs: list[dict[str, Any]] = []
    for rows in (int(float(r)) for r in args.rows.split(",")):
        for keys in args.keys.split(","):
            for rep in range(args.repeats):
                for name, path in trees if rep % 2 == 0 else list(reversed(trees)):
                    first = LEDGERS[rep % 2]
                    run = _run_child(path, rows, keys, first)
                    run["tree"] = name
                    runs.append(run)
                    print(
                        f"# {name} {rows:,} {keys} rep {rep}: memory {run['memory']['seconds']:.2f}"
                        f" s, file {run['file']['seconds']:.2f} s, file RSS "
                        f"{_mib(run['file']['rss_peak'])} MiB, load {run['loadavg']:.1f}",
                        flush=True,
                    )
    print(_table(runs))
    if args.out:
        Path(args.out).write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
