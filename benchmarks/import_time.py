"""Import time of ``import dpframe`` over ``import pandas``, as a user gets it.

``python -m benchmarks.import_time [--repeats 15]``

Each run is a fresh interpreter that times one statement with
``time.process_time()`` (CPU time of the process: what the import costs
whatever else runs on the machine) and ``time.perf_counter()`` (wall time),
then lists which of the heavy optional packages (IPython, scipy, matplotlib,
``dpframe.jupyter``) the statement left in ``sys.modules``.  ``import pandas``
and ``import dpframe`` alternate run by run (interleaved, so a change of load
on a shared machine hits both), after one discarded warm-up of each (page
cache, ``.pyc`` files).  Bytecode caching is on, in a private prefix outside
the repository (an installed wheel never recompiles; an editable install run
with ``PYTHONDONTWRITEBYTECODE=1`` would recompile dpframe every time).  The
children run in a temporary folder, so ``PYTHONPATH`` decides which dpframe
is imported (to measure another checkout: ``PYTHONPATH=/path/to/it``).

Prints the medians, the median of the per-pair differences (CPU and wall),
the load average before and after, and the target (+0.15 s CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["import_pairs", "main"]

TARGET_CPU_S = 0.15
HEAVY = ("IPython", "scipy", "matplotlib", "dpframe.jupyter")
_CHILD = (
    "import json, sys, time\n"
    "c0, w0 = time.process_time(), time.perf_counter()\n"
    "import {module}\n"
    "c1, w1 = time.process_time(), time.perf_counter()\n"
    "heavy = [m for m in {heavy!r} if m in sys.modules]\n"
    "print(json.dumps([c1 - c0, w1 - w0, heavy]))\n"
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "dpframe-bench-pycache")
    if "PYTHONPATH" not in env:  # the checkout this file belongs to
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    return env


def _one(module: str, cwd: str, env: dict[str, str]) -> tuple[float, float, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(module=module, heavy=HEAVY)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    cpu, wall, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    return float(cpu), float(wall), list(heavy)


def import_pairs(repeats: int) -> dict[str, Any]:
    """``repeats`` interleaved pairs of fresh ``import pandas`` / ``import dpframe`` runs."""
    env = _env()
    runs: dict[str, list[tuple[float, float, list[str]]]] = {"pandas": [], "dpframe": []}
    with tempfile.TemporaryDirectory() as cwd:
        for module in runs:  # warm-up, discarded
            _one(module, cwd, env)
        for _ in range(repeats):
            for module, out in runs.items():
                out.append(_one(module, cwd, env))
    cpu = {m: [r[0] for r in rs] for m, rs in runs.items()}
    wall = {m: [r[1] for r in rs] for m, rs in runs.items()}
    return {
        "repeats": repeats,
        "pandas_cpu_s": statistics.median(cpu["pandas"]),
        "dpframe_cpu_s": statistics.median(cpu["dpframe"]),
        "delta_cpu_s": statistics.median(
            d - p for d, p in zip(cpu["dpframe"], cpu["pandas"], strict=True)
        ),
        "pandas_wall_s": statistics.median(wall["pandas"]),
        "dpframe_wall_s": statistics.median(wall["dpframe"]),
        "delta_wall_s": statistics.median(
            d - p for d, p in zip(wall["dpframe"], wall["pandas"], strict=True)
        ),
        "heavy_after_import_dpframe": sorted({m for r in runs["dpframe"] for m in r[2]}),
        "cpu": cpu,
        "wall": wall,
    }


def main(argv: list[str] | None = None) -> None:
    """Print the import-time table (and the raw runs as JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print every run as JSON too")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    result = import_pairs(args.repeats)
    load_after = os.getloadavg()
    heavy = ", ".join(result["heavy_after_import_dpframe"]) or "none"
    ok = result["delta_cpu_s"] <= TARGET_CPU_S and heavy == "none"
    print(f"import time, {args.repeats} interleaved pairs (median), bytecode cached")
    print("| statement | CPU s | wall s |")
    print("|---|---:|---:|")
    print(f"| import pandas | {result['pandas_cpu_s']:.3f} | {result['pandas_wall_s']:.3f} |")
    print(f"| import dpframe | {result['dpframe_cpu_s']:.3f} | {result['dpframe_wall_s']:.3f} |")
    print(f"| dpframe - pandas | {result['delta_cpu_s']:+.3f} | {result['delta_wall_s']:+.3f} |")
    print(f"heavy packages left by import dpframe: {heavy}")
    print(f"target: +{TARGET_CPU_S} s CPU over pandas, none of {', '.join(HEAVY)}: ", end="")
    print("met" if ok else "NOT met")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    if args.json:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
