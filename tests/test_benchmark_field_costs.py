"""The field benchmark's privacy-cost bookkeeping (``benchmarks/field_costs.py``) and its report.

No other DP library is needed: the adapters that call them run in their own
virtual environments (``python -m benchmarks.run_field``); here the pure
logic, the report rendering and the worker's independence from dpframe.
"""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dpframe as dp
from benchmarks import field_costs as fc
from benchmarks.accuracy import expected_mae
from benchmarks.data import BOUNDS, categories, census_frame
from benchmarks.field_report import render, targets
from benchmarks.run_field import accuracy_from_values

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
#: Modules that run inside the other libraries' virtual environments.
WORKER_MODULES = [
    "field_worker",
    "field_costs",
    "field_spec",
    "field_opendp",
    "field_diffprivlib",
    "field_pipelinedp",
    "field_smartnoise",
]


def test_per_measurement_epsilon_makes_the_total_the_target() -> None:
    # SmartNoise SQL's AVG: two measurements, 2 ε at ε = 1 each.
    assert fc.per_measurement_epsilon(1.0, 2.0, 1.0) == pytest.approx(0.5)
    # VAR: three measurements; a target of 0.3 from a probe at unit 0.1 (total 0.3).
    assert fc.per_measurement_epsilon(0.3, 0.3, 0.1) == pytest.approx(0.1)
    assert fc.per_measurement_epsilon(1.0, 3.0, 1.0) == pytest.approx(1 / 3)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="unit_total must be a positive finite"):
            fc.per_measurement_epsilon(1.0, bad, 1.0)
        with pytest.raises(ValueError, match="target must be a positive finite"):
            fc.per_measurement_epsilon(bad, 2.0, 1.0)


def test_spent_during_counts_only_the_entries_of_the_call() -> None:
    ledger: list[tuple[float, float]] = [(5.0, 0.1)]  # spent before: not counted

    def release() -> None:
        ledger.extend([(0.25, 0.0), (0.25, 0.0), (0.5, 1e-9)])

    cost = fc.spent_during(release, lambda: ledger, "test ledger")
    assert cost == {"epsilon": 1.0, "delta": 1e-9, "source": "test ledger"}
    assert fc.summed([]) == (0.0, 0.0)


def test_measure_costs_turns_a_failing_probe_into_an_error() -> None:
    def refuses() -> fc.Cost:
        raise ValueError("noise scale is too large")

    out = fc.measure_costs({"sum": lambda: {"epsilon": 1.0, "delta": 0.0}, "var": refuses})
    assert out["sum"] == {"epsilon": 1.0, "delta": 0.0}
    assert out["var"] == {"error": "ValueError: noise scale is too large"}
    assert "epsilon" not in out["var"]


def test_is_exact_and_cost_cell() -> None:
    assert fc.is_exact({"epsilon": 1.0 + 1e-9}, 1.0)
    assert not fc.is_exact({"epsilon": 2.0}, 1.0)
    assert not fc.is_exact({"error": "x"}, 1.0)
    assert not fc.is_exact(None, 1.0)
    assert fc.cost_cell({"epsilon": 1.0}, 1.0) == "1"
    assert fc.cost_cell({"epsilon": 2.0}, 1.0) == "**2** (≠ 1)"
    assert fc.cost_cell({"error": "ValueError"}, 1.0) == "unknown (refused)"
    assert fc.cost_cell(None, 1.0) == "n/a"


def test_annotate_adds_the_cost_to_the_cells_of_known_queries() -> None:
    cells: dict[str, dict[str, Any]] = {
        "mean (clamped)": {"median": 0.1},
        "variance (clamped)": {"na": "error: refused"},
        "median": {"median": 0.2},
    }
    names = {"mean": "mean (clamped)", "var": "variance (clamped)", "median": "median"}
    costs: dict[str, fc.Cost] = {
        "mean": {"epsilon": 1.0, "delta": 1e-15},
        "var": {"error": "refused"},
    }
    fc.annotate(cells, names, costs)
    assert cells["mean (clamped)"] == {"median": 0.1, "epsilon_spent": 1.0, "delta_spent": 1e-15}
    assert "epsilon_spent" not in cells["variance (clamped)"]
    assert "epsilon_spent" not in cells["median"]


def test_mean_comparable_needs_add_remove_and_exactly_epsilon() -> None:
    assert fc.mean_comparable("opendp", 1.0, 1.0) is None
    assert fc.mean_comparable("smartnoise-sql", 2.0, 1.0) == "ε spent 2"
    assert fc.mean_comparable("smartnoise-sql", None, 1.0) == "ε spent not recorded"
    assert fc.mean_comparable("diffprivlib", 1.0, 1.0) == "substitute one row, n public"
    assert fc.mean_comparable("tumult", 1.0, 1.0) == "neighbouring relation not known"
    assert fc.neighbours_short("pipeline-dp") == "add/remove one privacy unit, n private"


def test_accuracy_from_values_records_the_epsilon_spent() -> None:
    n = 100_000
    values = {"count": [n + 1.0, n - 1.0], "sum": "error: refused", "mean": [10.0, 30.0]}
    costs = {"count": {"epsilon": 1.0}, "mean": {"epsilon": 2.0}}
    out = accuracy_from_values(values, {"count": float(n), "mean": 20.0}, n, costs)
    assert out["count"]["ratio"] == pytest.approx(1.0)  # MAE 1 over the scale 1/ε
    assert out["count"]["epsilon_spent"] == 1.0
    assert out["mean"]["epsilon_spent"] == 2.0
    assert out["mean"]["ratio"] == pytest.approx(10.0 / (1e6 / n))
    assert out["sum"] == {"na": "error: refused"}


def _accuracy_only_results(smartnoise_mean_eps: float) -> dict[str, Any]:
    def stat(ratio: float, eps: float | None = 1.0) -> dict[str, Any]:
        cell: dict[str, Any] = {"reps": 200, "ratio": ratio, "ratio_sem": 0.05}
        if eps is not None:
            cell["epsilon_spent"] = eps
        return cell

    def lib(mean: float, mean_eps: float | None = 1.0) -> dict[str, Any]:
        return {"count": stat(1.0), "sum": stat(1.0), "mean": stat(mean, mean_eps)}

    dpframe = lib(1.4)
    for s in dpframe.values():
        s["expected_ratio"] = 1.0
    costs = {"mean": {"epsilon": smartnoise_mean_eps, "delta": 0.0, "source": "probe"}}
    return {
        "date": "2026-11-22T15:00:00",
        "command": "python -m benchmarks.run_field --accuracy-only",
        "environment": {"python": "3.11"},
        "datasets": [],
        "libs": ["diffprivlib", "smartnoise-sql"],
        "repeats": 3,
        "queries": {"synthetic": [], "cps": []},
        "core": {"synthetic": [], "cps": []},
        "roles": {"synthetic": {"mean": "mean (clamped)", "median": "median"}},
        "epsilon": 1.0,
        "accuracy_only": True,
        "medians": {"pandas": {}, "dpframe": {}},
        "load": {},
        "memory": {"pandas": {}, "dpframe": {}},
        "workers": {
            "diffprivlib": {"version": "0.6.6", "pandas": "3", "numpy": "2"},
            "smartnoise-sql": {
                "version": "1.0.10",
                "pandas": "2",
                "numpy": "2",
                "costs": {"synthetic": costs},
            },
        },
        "notes": [],
        "accuracy": {
            "rows": 100_000,
            "stats": {
                "dpframe": dpframe,
                "diffprivlib": lib(1.0),
                "smartnoise-sql": lib(0.8, smartnoise_mean_eps),
            },
        },
        "wall_s": 1.0,
    }


def test_mean_target_skips_other_relations_and_other_epsilons() -> None:
    # SmartNoise at 2 ε (the old configuration) and diffprivlib (substitute-one)
    # are both better than dpframe's 1.4, and neither counts.
    (mean,) = [t for t in targets(_accuracy_only_results(2.0)) if t[0].startswith("mean")]
    assert mean[2] is None
    assert "smartnoise-sql 0.800 (ε spent 2)" in mean[1]
    assert "diffprivlib 1.000 (substitute one row, n public)" in mean[1]
    # At exactly ε SmartNoise is comparable, and better: the target is missed.
    (mean,) = [t for t in targets(_accuracy_only_results(1.0)) if t[0].startswith("mean")]
    assert mean[2] is False
    assert "best other (add/remove, ε spent = 1) smartnoise-sql 0.800" in mean[1]


def test_report_shows_costs_and_neighbouring_relations() -> None:
    text = render(_accuracy_only_results(2.0))
    assert "| ε spent (count/sum/mean) | 1 / 1 / 1 | 1 / 1 / 1 | 1 / 1 / **2** (≠ 1) |" in text
    assert (
        "| mean: neighbours | add/remove one row, n private | substitute one row, n public |"
        in text
    )
    assert "## Privacy cost per release" in text
    assert "| mean (clamped) | **2** (≠ 1) |" in text
    assert "| median | n/a |" in text
    assert "ε = 1 per release in total, in each library's own accounting" in text
    assert "Accuracy only (`--accuracy-only`)" in text


def test_report_of_a_run_without_costs_does_not_claim_them() -> None:
    results = _accuracy_only_results(1.0)
    del results["workers"]["smartnoise-sql"]["costs"]
    for stats in results["accuracy"]["stats"].values():
        for cell in stats.values():
            del cell["epsilon_spent"]
    text = render(results)
    assert "ε = 1 requested per release (this run did not record" in text
    assert "## Privacy cost per release" not in text
    assert "| ε spent (count/sum/mean) | n/a | n/a | n/a |" in text


@pytest.mark.parametrize("name", WORKER_MODULES)
def test_worker_modules_import_nothing_of_dpframe(name: str) -> None:
    tree = ast.parse((BENCH / f"{name}.py").read_text())
    allowed_benchmarks = {f"benchmarks.{m}" for m in WORKER_MODULES}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            assert not module.startswith("dpframe"), (name, module)
            if module.startswith("benchmarks"):
                assert module in allowed_benchmarks, (name, module)


def test_worker_script_runs_without_dpframe(tmp_path: Path) -> None:
    # As run_field starts it: a script path, another cwd, dpframe not importable.
    code = (
        "import sys, runpy\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'dpframe' or name.startswith('dpframe.'):\n"
        "            raise ImportError('dpframe is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "sys.argv = ['field_worker.py', '--help']\n"
        f"runpy.run_path({str(BENCH / 'field_worker.py')!r}, run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "smartnoise-sql" in done.stdout
    assert "opendp" in done.stdout


def test_expected_mae_matches_the_discrete_laplace_formula() -> None:
    df = census_frame(20_000)
    bounds = BOUNDS["income"]
    session = dp.Session(epsilon=1e6, ledger=":memory:")
    pf = session.private_frame(df, bounds={"income": bounds}, categories=categories())
    counts = [pf.count(epsilon=1.0) for _ in range(3)]
    a = math.exp(-1.0)  # discrete Laplace at ε = 1, sensitivity 1: E|X| = 2a / (1 − a²)
    assert expected_mae("count", counts, float(len(df)), len(df), bounds) == pytest.approx(
        2 * a / (1 - a * a), rel=0.01
    )
    means = [pf["income"].mean(epsilon=1.0) for _ in range(5)]
    exact = float(df["income"].clip(*bounds).mean())
    # Sum noise dominates (the count's, times |mean − centre| / n, is tiny): E|X| ≈ its scale / n.
    scales = [float(m.intervals.noise[1].parameter) * m.intervals.noise[1].grid for m in means]
    predicted = expected_mae("mean", means, exact, len(df), bounds)
    assert predicted == pytest.approx(sum(scales) / len(scales) / len(df), rel=0.05)
