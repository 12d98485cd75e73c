"""Where dpframe spends its time: cProfile of the core queries, and candidate fixes.

Run from the repository root::

    python -m benchmarks.profile_core --rows 1e7            # str keys (pandas 3 default)
    python -m benchmarks.profile_core --rows 1e7 --keys category --top 8

Sections:

1. ``private_frame`` (the load: the dataset fingerprint).
2. Each workload query, cold (first call in a fresh session: the group-key
   codes are computed) and warm, top functions by own time.
3. Key codes: the backend's original way (``Index.get_indexer(values.astype(object))``),
   factorize-then-map (what the backend does since commit d8b0ed6) and, for
   Arrow-backed strings, ``pyarrow.compute.index_in``, checked to give
   identical codes.  Section 2 shows what the installed backend really does.
4. Fixed per-release overhead as the session's ledger grows.

These implementations live here only; nothing in ``dpframe/`` is patched.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import functools
import importlib
import io
import pstats
import statistics
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

import dpframe as dp
from benchmarks.data import BOUNDS, as_key_dtype, categories, census_frame, key_dtypes
from benchmarks.releases import new_releases
from benchmarks.workload import svt_cuts

__all__ = ["codes_by_arrow_index_in", "codes_by_factorize", "codes_by_get_indexer", "main"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: The profiled queries (the benchmark's workload, ε = 1 each).
QUERIES: dict[str, Callable[[dp.PrivateFrame], Any]] = {
    "count": lambda pf: pf.count(epsilon=1.0),
    "sum": lambda pf: pf["income"].sum(epsilon=1.0),
    "mean": lambda pf: pf["income"].mean(epsilon=1.0),
    "groupby state count": lambda pf: pf.groupby("state").count(epsilon=1.0),
    "groupby county sum": lambda pf: pf.groupby("county")["income"].sum(epsilon=1.0),
    "var": lambda pf: pf["income"].var(epsilon=1.0),
    "groupby county×age sum": lambda pf: pf.groupby(["county", "age"])["income"].sum(epsilon=1.0),
    "median": lambda pf: pf["income"].median(epsilon=1.0),
    # Threshold: a fixed public number (half of 10^6 rows); the time does not depend on it.
    "sparse vector": lambda pf: pf.above_threshold(
        {f">= {c:g}": pf["age"] >= c for c in svt_cuts(BOUNDS["age"])}, 5e5, epsilon=1.0
    ),
    "describe": lambda pf: pf.describe(epsilon=1.0),
}
CORE_QUERIES = ("count", "sum", "mean", "groupby state count", "groupby county sum")


def _profile(fn: Callable[[], Any], top: int) -> tuple[float, str]:
    """Wall time of one call and its top functions by own time (paths shortened)."""
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    fn()
    profiler.disable()
    wall = time.perf_counter() - start
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    lines = []
    for line in out.getvalue().splitlines():
        if (
            not line.strip()
            or "function calls" in line
            or line.lstrip().startswith(("Ordered", "List"))
        ):
            continue
        line = line.replace(str(Path(dp.__file__).parent.parent) + "/", "")
        lines.append(line.replace(str(Path(pd.__file__).parent.parent) + "/", ""))
    return wall, "\n".join(lines)


def codes_by_get_indexer(values: pd.Series, keys: Sequence[Hashable]) -> npt.NDArray[np.intp]:
    """The backend's original way (up to commit d8b0ed6): hash every row as a Python object."""
    index = pd.Index(list(keys), dtype=object)
    return np.asarray(index.get_indexer(values.astype(object)), dtype=np.intp)


def codes_by_factorize(values: pd.Series, keys: Sequence[Hashable]) -> npt.NDArray[np.intp]:
    """Prototype: factorize once (Arrow ``dictionary_encode`` / hash table / category codes),
    map the few distinct values to the declared keys, then gather.

    Missing values get the position of a declared NaN key, if any.  This
    matches ``get_indexer`` for ``str`` and Categorical columns; in ``object``
    columns ``get_indexer`` tells ``None`` from ``NaN`` and this does not, so a
    library change needs a test for declared missing keys.
    """
    index = pd.Index(list(keys), dtype=object)
    missing = index.get_indexer([np.nan])  # code -1 (missing) maps here
    if isinstance(values.dtype, pd.CategoricalDtype):
        lookup = index.get_indexer(values.cat.categories.astype(object))
        raw = values.cat.codes.to_numpy()
    else:
        raw, uniques = pd.factorize(values)
        lookup = index.get_indexer(pd.Index(uniques).astype(object))
    return np.asarray(np.append(lookup, missing)[raw], dtype=np.intp)


def codes_by_arrow_index_in(
    values: pd.Series, keys: Sequence[Hashable]
) -> npt.NDArray[np.intp] | None:
    """Prototype for Arrow-backed strings: ``pyarrow.compute.index_in`` against the keys.

    One hash lookup per row against the declared keys, no Python objects.
    Returns None for other storages (or string keys that are not all str).
    """
    arrow_array = getattr(values.array, "__arrow_array__", None)
    if arrow_array is None or not all(isinstance(k, str) for k in keys):
        return None
    pa = importlib.import_module("pyarrow")
    pc = importlib.import_module("pyarrow.compute")
    index = pc.index_in(arrow_array(), value_set=pa.array(list(keys)))
    return np.asarray(index.fill_null(-1).to_numpy(), dtype=np.intp)


def _median_time(fn: Callable[[], Any], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _ledger_growth(df: pd.DataFrame, sizes: Sequence[int]) -> list[str]:
    session = dp.Session(epsilon=1e12, ledger=":memory:")
    pf = session.private_frame(df.head(1000), bounds=BOUNDS, categories=categories())
    lines = []
    done = 0
    for size in sizes:
        while done < size:
            pf.count(epsilon=1.0)
            done += 1
        latency = _median_time(lambda: pf.count(epsilon=1.0), repeats=9)
        done += 9
        lines.append(f"  {size:>6,} releases in the ledger: count() takes {latency * 1e3:7.2f} ms")
    return lines


def main(argv: list[str] | None = None) -> str:
    """Run the profiles, print them, save them; return the text."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_core")
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--keys", default="str", choices=key_dtypes())
    parser.add_argument("--top", type=int, default=10, help="functions shown per profile")
    parser.add_argument(
        "--queries",
        default=",".join(CORE_QUERIES),
        help=f"comma-separated subset of: {', '.join(QUERIES)} (default: the core five)",
    )
    parser.add_argument(
        "--queries-only", action="store_true", help="skip the load, key-code and ledger sections"
    )
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    chosen = [q.strip() for q in args.queries.split(",") if q.strip()]
    unknown = [q for q in chosen if q not in QUERIES]
    if unknown:
        parser.error(f"unknown queries {unknown}; choose from {list(QUERIES)}")
    rows = int(args.rows)
    df = census_frame(rows, key_dtype=as_key_dtype(args.keys))
    out: list[str] = [f"# dpframe profile: {rows:,} rows, {args.keys} keys, {dt.date.today()}"]

    session = dp.Session(epsilon=1e12, ledger=":memory:")
    holder: dict[str, dp.PrivateFrame] = {}

    def load() -> None:
        holder["pf"] = session.private_frame(df, bounds=BOUNDS, categories=categories())

    if not args.queries_only:
        wall, text = _profile(load, args.top)
        out += ["", f"## private_frame: {wall:.3f} s", text]

    for name in chosen:
        query = QUERIES[name]
        fresh = dp.Session(epsilon=1e12, ledger=":memory:")
        pf = fresh.private_frame(df, bounds=BOUNDS, categories=categories())
        for kind in ("cold", "warm"):
            wall, text = _profile(functools.partial(query, pf), args.top)
            out += ["", f"## {name}, {kind}: {wall:.3f} s", text]
        del fresh, pf
    if args.queries_only:
        return _finish(out, args.no_save, rows, args.keys, "-queries")

    out += ["", "## Key codes: three ways (median of 3; dpframe uses factorize+map since d8b0ed6)"]
    for column, keys in categories().items():
        values = df[column]
        current = codes_by_get_indexer(values, keys)
        proposed = codes_by_factorize(values, keys)
        same = bool(np.array_equal(current, proposed))
        t_now = _median_time(functools.partial(codes_by_get_indexer, values, keys))
        t_new = _median_time(functools.partial(codes_by_factorize, values, keys))
        out.append(
            f"  {column} ({len(keys)} keys): get_indexer(astype(object)) {t_now:.3f} s, "
            f"factorize+map {t_new:.3f} s ({t_now / t_new:.1f}x), identical codes: {same}"
        )
        arrow_codes = codes_by_arrow_index_in(values, keys)
        if arrow_codes is not None:
            t_arrow = _median_time(functools.partial(codes_by_arrow_index_in, values, keys))
            out.append(
                f"  {column}: pyarrow.compute.index_in {t_arrow:.3f} s "
                f"({t_now / t_arrow:.1f}x), identical codes: "
                f"{bool(np.array_equal(current, arrow_codes))}"
            )
    shifted = codes_by_get_indexer(df["county"], categories()["county"])
    t_shift = _median_time(lambda: np.bincount(shifted + 1, minlength=1001))
    pre = shifted + 1
    t_pre = _median_time(lambda: np.bincount(pre, minlength=1001))
    out.append(
        f"  bincount(codes + 1) {t_shift * 1e3:.1f} ms vs bincount(cached codes + 1) "
        f"{t_pre * 1e3:.1f} ms"
    )

    out += ["", "## Fixed per-release overhead vs ledger size (1,000-row frame)"]
    out += _ledger_growth(df, (0, 250, 1000))
    return _finish(out, args.no_save, rows, args.keys, "")


def _finish(out: list[str], no_save: bool, rows: int, keys: str, suffix: str) -> str:
    text = "\n".join(out) + "\n"
    print(text)
    if not no_save:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        stamp = dt.date.today().isoformat()
        path = RESULTS_DIR / f"profile-{stamp}-{rows:.0e}-{keys}{suffix}.txt"
        path.write_text(text)
        print(f"Saved {path}")
    return text


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
