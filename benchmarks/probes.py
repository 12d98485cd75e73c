"""Measurements that need a fresh process: import time and memory at load.

Import time: ``import pandas`` and ``import dpframe`` each timed with
``time.perf_counter`` inside ``python -c`` in a fresh interpreter, one
discarded warm-up (page cache), then the median of ``repeats`` runs.

Memory (``python -m benchmarks.probes memory --rows N``, prints JSON), Linux only
for the RSS part.  The child builds the table, collects garbage and returns
freed heap to the OS (``malloc_trim``), then for each step (``private_frame``,
the first group-by count over ``state``, the first group-by sum over
``county``):

* resets the kernel's peak-RSS mark (``echo 5 > /proc/self/clear_refs``),
  runs the step, and reads ``VmHWM - VmRSS(before)``: the peak extra resident
  memory of the step, whatever allocated it (numpy, Python objects, Arrow);
* separately, the ``tracemalloc`` peak of the step (Python and numpy
  allocations only; Arrow's memory pool is invisible to it), measured in a
  second fresh session so tracemalloc's bookkeeping does not inflate the RSS.

Both are compared with ``df.memory_usage(deep=True).sum()``.  For ``object``
columns, ``deep=True`` counts each cell's string even though the cells share
1,050 string objects, so it overstates the real size; the RSS growth while
building the table is reported too.
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

__all__ = ["import_times", "memory_at_load", "slowest_imports"]

REPO_ROOT = Path(__file__).resolve().parent.parent
_TIMER = "import time; t0 = time.perf_counter(); import {mod}; print(time.perf_counter() - t0)"


def _python(args: list[str], env: dict[str, str] | None = None, timeout: float = 3600.0) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
        env=env,
    )
    return done.stdout


def _bytecode_env() -> dict[str, str]:
    """The environment with bytecode caching on, in a private prefix outside the repository.

    An editable install run with ``PYTHONDONTWRITEBYTECODE=1`` recompiles
    dpframe from source on every import; an installed wheel never does.
    ``PYTHONPYCACHEPREFIX`` keeps the ``.pyc`` files out of the source tree.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "dpframe-bench-pycache")
    return env


def _median_imports(repeats: int, env: dict[str, str] | None) -> dict[str, Any]:
    runs: dict[str, list[float]] = {"pandas": [], "dpframe": []}
    for mod in runs:  # warm-up: page cache (and .pyc files when caching is on)
        _python(["-c", _TIMER.format(mod=mod)], env)
    for _ in range(repeats):
        for mod, times in runs.items():
            times.append(float(_python(["-c", _TIMER.format(mod=mod)], env).strip()))
    pandas_s = statistics.median(runs["pandas"])
    dpframe_s = statistics.median(runs["dpframe"])
    return {
        "pandas_s": pandas_s,
        "dpframe_s": dpframe_s,
        "delta_s": dpframe_s - pandas_s,
        "runs": runs,
    }


def import_times(repeats: int = 5) -> dict[str, Any]:
    """Median wall time of ``import pandas`` and ``import dpframe`` in fresh interpreters.

    Two settings: ``cached`` (bytecode cached, as for an installed wheel; the
    headline number) and ``inherited`` (this process's environment as is).
    """
    result = _median_imports(repeats, _bytecode_env())
    result["inherited"] = _median_imports(repeats, None)
    result["pythondontwritebytecode"] = os.environ.get("PYTHONDONTWRITEBYTECODE", "")
    return result


def slowest_imports(top: int = 8) -> list[tuple[str, float]]:
    """What ``import dpframe`` costs after pandas, by module that dpframe imports (s).

    From ``python -X importtime -c "import pandas; import dpframe"`` (bytecode
    cached): for every module imported directly by a ``dpframe`` module, its
    cumulative time (itself and everything it pulled in), and for dpframe's
    own modules their self time, summed as ``dpframe (own code)``.
    """
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pandas; import dpframe"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=_bytecode_env(),
    )
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("import time:")]
    rows = []
    for line in lines[1:]:  # the first line is the header
        self_us, cumulative_us, name = line.split("|")
        stripped = name.lstrip()
        depth = (len(name) - len(stripped) - 1) // 2
        rows.append((int(self_us.split(":")[1]), int(cumulative_us), stripped.strip(), depth))
    totals: dict[str, float] = {}
    # -X importtime prints post-order: a module's parent is the next line one level up.
    for i, (own_us, total_us, module, depth) in enumerate(rows):
        if module.startswith("dpframe"):
            totals["dpframe (own code)"] = totals.get("dpframe (own code)", 0.0) + own_us / 1e6
            continue
        parent = next((r[2] for r in rows[i + 1 :] if r[3] == depth - 1), "")
        if parent.startswith("dpframe"):
            label = f"{module.split('.')[0]} (from {parent})"
            totals[label] = totals.get(label, 0.0) + total_us / 1e6
    return sorted(totals.items(), key=lambda kv: -kv[1])[:top]


# -- memory (child side) ----------------------------------------------------------


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


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _rss_step(step: Callable[[], Any]) -> dict[str, Any]:
    """Peak and retained RSS growth of ``step`` (bytes); None where /proc is missing."""
    _settle()
    before = _status_kb("VmRSS")
    can_reset = _reset_peak()
    start = time.perf_counter()
    kept = step()
    seconds = time.perf_counter() - start
    peak = _status_kb("VmHWM")
    _settle()
    after = _status_kb("VmRSS")
    del kept
    ok = before is not None and peak is not None and after is not None and can_reset
    return {
        "seconds": seconds,
        "rss_peak_increase": (peak - before) * 1024 if ok else None,  # type: ignore[operator]
        "rss_retained": (after - before) * 1024 if ok else None,  # type: ignore[operator]
    }


def _traced_step(step: Callable[[], Any]) -> int:
    _settle()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _memory_child(rows: int, key_dtype: str) -> dict[str, Any]:
    import dpframe as dp
    from benchmarks.data import BOUNDS, as_key_dtype, categories, census_frame

    # Warm-up on a tiny table, so lazy imports are not charged to the steps.
    tiny = census_frame(1000, key_dtype=as_key_dtype(key_dtype))
    warm = dp.Session(epsilon=1e9, ledger=":memory:")
    warm_pf = warm.private_frame(tiny, bounds=BOUNDS, categories=categories())
    warm_pf.groupby("state").count(epsilon=1.0)
    del tiny, warm, warm_pf
    _settle()
    rss0 = _status_kb("VmRSS")
    df = census_frame(rows, key_dtype=as_key_dtype(key_dtype))
    _settle()
    rss1 = _status_kb("VmRSS")
    df_bytes = int(df.memory_usage(deep=True).sum())
    result: dict[str, Any] = {
        "rows": rows,
        "key_dtype": key_dtype,
        "df_memory_usage_deep": df_bytes,
        "df_rss_growth": None if rss0 is None or rss1 is None else (rss1 - rss0) * 1024,
    }
    for phase in ("rss", "tracemalloc"):
        session = dp.Session(epsilon=1e9, ledger=":memory:")
        holder: dict[str, dp.PrivateFrame] = {}

        def load(session: dp.Session = session, holder: dict[str, Any] = holder) -> Any:
            holder["pf"] = session.private_frame(df, bounds=BOUNDS, categories=categories())
            return None

        def gb_state(holder: dict[str, Any] = holder) -> Any:
            return holder["pf"].groupby("state").count(epsilon=1.0)

        def gb_county(holder: dict[str, Any] = holder) -> Any:
            return holder["pf"].groupby("county")["income"].sum(epsilon=1.0)

        steps: dict[str, Callable[[], Any]] = {
            "private_frame": load,
            "first groupby state": gb_state,
            "first groupby county": gb_county,
        }
        for name, step in steps.items():
            entry = result.setdefault(name, {})
            if phase == "rss":
                entry.update(_rss_step(step))
            else:
                entry["tracemalloc_peak"] = _traced_step(step)
        del session, holder
        _settle()
    return result


def memory_at_load(rows: int, key_dtype: str = "str") -> dict[str, Any]:
    """Run the memory probe in a fresh interpreter and return its JSON result."""
    out = _python(
        ["-m", "benchmarks.probes", "memory", "--rows", str(rows), "--key-dtype", key_dtype]
    )
    result: dict[str, Any] = json.loads(out)
    return result


def main(argv: list[str] | None = None) -> None:
    """Command line of the child probes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="probe", required=True)
    mem = sub.add_parser("memory", help="memory at load (prints JSON)")
    mem.add_argument("--rows", type=int, required=True)
    mem.add_argument("--key-dtype", default="str")
    args = parser.parse_args(argv)
    print(json.dumps(_memory_child(args.rows, args.key_dtype)))


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
