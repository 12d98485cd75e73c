"""The curator's cost model measured on this machine, beside its defaults (issue 27).

Prints one table: each unit of :class:`dpframe.curator.worst_case.CostModel`,
its default, what :func:`dpframe.curator.calibration.measure` found for each
kind (the least of repeated runs; the slowest kind sets the unit), and the
ratio default / measured (below 1: the default is too low on this machine;
put the measured value, with some margin, in ``[server.cost]``).  Takes about
half a minute at the default 100,000 rows.

    python -m benchmarks.run_cost_calibration [rows]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from benchmarks.releases import new_releases
from benchmarks.report import markdown_table, save_results
from dpframe.curator.calibration import measure
from dpframe.curator.worst_case import CostModel


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    started = time.perf_counter()
    load = os.getloadavg()
    found = measure(rows=rows, repeat=3)
    wall = time.perf_counter() - started
    defaults = CostModel()
    table = []
    for unit, kinds in found.items():
        slowest = max(kinds, key=kinds.__getitem__)
        default = getattr(defaults, unit)
        measured = kinds[slowest]
        table.append(
            (
                f"`{unit}`",
                f"{default:.3g}",
                f"{measured:.3g} ({slowest[:60]})",
                f"{default / measured:.1f}" if measured > 0 else "-",
            )
        )
    lines = [
        f"# The cost model on this machine ({rows:,} rows, least of 3 runs; load average "
        f"{load[0]:.1f} before, {os.getloadavg()[0]:.1f} after; {wall:.0f} s)",
        "",
        *markdown_table(["unit", "default", "measured (slowest kind)", "default/measured"], table),
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    folder = Path(__file__).parent / "results"
    save_results({"units": found, "rows": rows, "wall_s": wall}, report, folder, "cost_calibration")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
