"""Measure timing side channels: ``python -m tests.audit.timing_probe [--quick]``.

Not a test (timings vary with the machine); it prints a markdown report of

1. the Spearman correlation between the time to draw one noise value and its
   magnitude, with the fixed-work sampler (default) and the loop-until-done
   sampler (``FIXED_WORK_MAX_SIZE = 0``), and the cost of each;
2. the correlation between the time of a release through the public API and
   the private value it releases, for data of one size;
3. the correlation between release time and the number of rows.

The numbers in docs/audit.md come from this script.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
from scipy import stats

import dpframe as dp
from dpframe.noise import SecureRandom, discrete_gaussian_array, discrete_laplace_array
from dpframe.noise import _kernels as kern


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter_ns()
    out = fn()
    return (time.perf_counter_ns() - start) / 1e3, out


def sampler_rows(draws: int) -> list[str]:
    rng = SecureRandom()
    samplers: dict[str, Callable[[int], np.ndarray]] = {
        "discrete Laplace, scale 1": lambda n: discrete_laplace_array(Fraction(1), n, rng),
        "discrete Laplace, scale 1000": lambda n: discrete_laplace_array(Fraction(1000), n, rng),
        "discrete Gaussian, σ² = 4": lambda n: discrete_gaussian_array(Fraction(4), n, rng),
        "discrete Gaussian, σ² = 10⁴": lambda n: discrete_gaussian_array(Fraction(10**4), n, rng),
    }
    rows = [
        "| sampler | work | Spearman(time, abs(noise)) | p-value | median µs, one draw "
        "| µs per draw, batch of 1024 |",
        "|---|---|---|---|---|---|",
    ]
    saved = kern.FIXED_WORK_MAX_SIZE
    try:
        for name, draw in samplers.items():
            for label, limit in (("fixed", saved), ("loop", 0)):
                kern.FIXED_WORK_MAX_SIZE = limit
                times, sizes = [], []
                for _ in range(draws):
                    took, out = _timed(lambda d=draw: d(1))  # type: ignore[misc]
                    times.append(took)
                    sizes.append(abs(int(np.asarray(out)[0])))
                rho = stats.spearmanr(times, sizes)
                batch = np.median([_timed(lambda d=draw: d(1024))[0] for _ in range(20)]) / 1024  # type: ignore[misc]
                rows.append(
                    f"| {name} | {label} | {rho.statistic:+.3f} | {rho.pvalue:.1e} | "
                    f"{np.median(times):.0f} | {batch:.1f} |"
                )
    finally:
        kern.FIXED_WORK_MAX_SIZE = saved
    return rows


def _frame(n: int, value: float) -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame({"x": np.full(n, value), "y": np.linspace(0, 1, n)})
    return frame


def release_rows(draws: int) -> list[str]:
    session = dp.Session(epsilon=10**9, ledger=":memory:")
    rows = [
        "| release | what varies | Spearman(time, private value) | p-value |",
        "|---|---|---|---|",
    ]
    values = np.linspace(0, 100, 11)
    frames = [session.private_frame(_frame(1000, v), bounds={"x": (0, 100)}) for v in values]
    cases: dict[str, Callable[[dp.PrivateFrame], object]] = {
        "sum(x), 1,000 rows": lambda pf: pf["x"].sum(epsilon=1),
        "mean(x), 1,000 rows": lambda pf: pf["x"].mean(epsilon=1),
        "count() where x > 50, 1,000 rows": lambda pf: pf[pf["x"] > 50].count(epsilon=1),
    }
    for name, query in cases.items():
        times, truth = [], []
        for _ in range(draws // len(frames)):
            for v, pf in zip(values, frames, strict=True):
                times.append(_timed(lambda q=query, f=pf: q(f))[0])  # type: ignore[misc]
                truth.append(v)
        rho = stats.spearmanr(times, truth)
        rows.append(f"| {name} | the values (0 to 100) | {rho.statistic:+.3f} | {rho.pvalue:.1e} |")
    sizes = [1_000, 10_000, 100_000]
    sized = [session.private_frame(_frame(n, 1.0), bounds={"x": (0, 100)}) for n in sizes]
    times, truth = [], []
    for _ in range(max(draws // 30, 5)):
        for n, pf in zip(sizes, sized, strict=True):
            times.append(_timed(lambda f=pf: f["x"].sum(epsilon=1))[0])  # type: ignore[misc]
            truth.append(n)
    rho = stats.spearmanr(times, truth)
    medians = ", ".join(
        f"{n:,}: {np.median([t for t, m in zip(times, truth, strict=True) if m == n]):.0f} µs"
        for n in sizes
    )
    rows.append(
        f"| sum(x) | the number of rows ({medians}) | {rho.statistic:+.3f} | {rho.pvalue:.1e} |"
    )
    return rows


def main() -> None:
    """Print the report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer draws")
    args = parser.parse_args()
    draws = 500 if args.quick else 3000
    print(f"## Noise sampling ({draws} single draws each)\n")
    print("\n".join(sampler_rows(draws)))
    print(f"\n## Releases through the public API ({draws} releases each)\n")
    print("\n".join(release_rows(draws)))


if __name__ == "__main__":
    main()
