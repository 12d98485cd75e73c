"""Wall-clock time of a doubling chain of derived columns (each defined twice from the last).

``a1 = a0 + a0, a2 = a1 + a1, ..., aK = aK-1 + aK-1``: inlined as a tree the
last column has 2**K leaves; evaluated as a DAG (each derived column once
per chunk) it costs K additions.  Prints the time of building the frame, of
a clamped sum of ``aK`` and of a filtered count on ``aK`` (both releases
with a tiny epsilon; the noise does not matter here).  Also times the same
chain built as one shared expression (``x = x + x``), which exercises
schema inference, ``str`` and the keys.

    python -m benchmarks.run_doubling_chain [--rows 100000] [--steps 30]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.releases import new_releases


def _timed(label: str, action: Any) -> Any:
    start = time.perf_counter()
    result = action()
    print(f"{label:<40} {time.perf_counter() - start:8.3f} s")
    return result


def main(argv: list[str] | None = None) -> None:
    """Print the timings (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a0": rng.uniform(0.0, 1.0, args.rows)})
    session = dp.Session(epsilon=1e6, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"a0": (0.0, 1.0)})
    last = f"a{args.steps}"

    def build() -> Any:
        chain = pf
        for i in range(1, args.steps + 1):
            chain = chain.assign(**{f"a{i}": chain[f"a{i - 1}"] + chain[f"a{i - 1}"]})
        return chain

    print(f"{args.rows} rows, {args.steps} steps")
    chain = _timed("build the frame (assign chain)", build)
    top = float(2**args.steps)
    _timed(f"{last}.clip(0, 2**steps).sum()", lambda: chain[last].clip(0.0, top).sum(epsilon=1e-3))
    _timed(
        f"count where {last} > 2**(steps-1)",
        lambda: chain[chain[last] > top / 2].count(epsilon=1e-3),
    )

    def shared() -> Any:
        x = pf["a0"]
        for _ in range(args.steps):
            x = x + x
        return x

    series = _timed("build the series (x = x + x)", shared)
    _timed("x.clip(0, 2**steps).sum()", lambda: series.clip(0.0, top).sum(epsilon=1e-3))


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
